package mcptools

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
)

// userKey carries the calling user in a request's context.
type userKey struct{}

// grantKey carries the --http-allow classes the caller's OAuth token
// grants ([]string), when it narrows them (sessions.GrantKey).
type grantKey struct{}

// withUser puts the user of req (its bearer token's) into ctx, and the
// classes its token grants when they narrow --http-allow.
func withUser(ctx context.Context, req mcp.Request) context.Context {
	ex := req.GetExtra()
	if ex == nil || ex.TokenInfo == nil {
		return ctx
	}
	ctx = context.WithValue(ctx, userKey{}, ex.TokenInfo.UserID)
	if g, ok := ex.TokenInfo.Extra[sessions.GrantKey].([]string); ok {
		ctx = context.WithValue(ctx, grantKey{}, g)
	}
	return ctx
}

// grantOf is the classes the caller's token grants, nil when it does not
// narrow --http-allow (see sessions.CreateOptions.Grant).
func grantOf(ctx context.Context) *[]string {
	g, ok := ctx.Value(grantKey{}).([]string)
	if !ok {
		return nil
	}
	return &g
}

// userOf is the calling user: the bearer token's over HTTP, "" on stdio.
func userOf(ctx context.Context) string {
	u, _ := ctx.Value(userKey{}).(string)
	return u
}

// counts is what claude_session_list and claude_session_close count for
// the caller: the open sessions, the live processes and the queries
// waiting for one. A user (over --http with tokens) counts their own
// sessions only: another user's are not theirs to know. The one user of
// stdio (or of --http without tokens, where every caller is that user)
// gets the server's counts, warm spares among the live processes.
func (h *handlers) counts(ctx context.Context) (open, live, queued int) {
	user := userOf(ctx)
	if user == "" {
		return h.mgr.Count(), h.mgr.LiveCount(), h.mgr.Queued()
	}
	for _, s := range h.mgr.List() {
		i := s.Info()
		if i.Owner != user {
			continue
		}
		open++
		if i.PID != 0 {
			live++
		}
		if i.State == state.Queued {
			queued++
		}
	}
	return open, live, queued
}

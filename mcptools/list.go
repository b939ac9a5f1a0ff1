package mcptools

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/resulttext"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/listing"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/worktree"
)

// list is claude_session_list: a page of the caller's sessions, the most
// recently used first (sessions.Manager.ListPage), or the one sessionId
// names; those held here show their live state, the others their stored
// one.
func (h *handlers) list(ctx context.Context, req *mcp.CallToolRequest, in ListInput) (*mcp.CallToolResult, ListOutput, error) {
	var infos []sessions.Info
	next := ""
	if in.SessionID != "" {
		s, err := h.session(ctx, in.SessionID)
		if err != nil {
			return nil, ListOutput{}, toolError(err)
		}
		infos = []sessions.Info{s.Info()}
	} else {
		q := store.Query{Owner: userOf(ctx), Name: in.Name, Limit: in.Limit, Cursor: in.Cursor}
		var err error
		if q.State, err = listing.ParseState(in.State); err != nil {
			return nil, ListOutput{}, toolError(err)
		}
		if infos, next, err = h.mgr.ListPage(ctx, q); err != nil {
			return nil, ListOutput{}, toolError(fmt.Errorf("%w; pass the nextCursor of the previous page, or none for the first", err))
		}
		if q.Owner == "" { // stdio, or --http without tokens: the sessions of no user
			infos = ownedBy(infos, "")
		}
	}
	cfg := h.mgr.Config()
	open, live, queued := h.counts(ctx)
	out := ListOutput{Sessions: []SessionInfo{}, LiveCount: live, Queued: queued, MaxSessions: cfg.MaxSessions, MaxLive: cfg.MaxLive, NextCursor: next}
	var b strings.Builder
	fmt.Fprintf(&b, "%d open session(s), %d live process(es).\n", open, out.LiveCount)
	if h.dash != nil {
		out.DashboardURL = h.dash.URL()
		fmt.Fprintf(&b, "Live dashboard (hand this link to the person to watch and steer): %s\n", out.DashboardURL)
	}
	for _, i := range infos {
		var s *sessions.Session
		if i.State == state.Running {
			s, _ = h.mgr.Get(i.SessionID) // held here (only those run): no store read
		}
		out.Sessions = append(out.Sessions, SessionInfo{
			SessionID: i.SessionID, ClaudeSessionID: i.ClaudeSessionID, Cwd: i.Cwd, Model: i.Model,
			PermissionMode: i.PermissionMode, State: string(i.State), Created: i.Created.UTC().Format(time.RFC3339),
			LastUsed: i.LastUsed.UTC().Format(time.RFC3339), Queries: i.Queries, Usage: i.Usage, TotalCostUSD: i.CostUSD,
			PID: i.PID, Profile: i.Profile, Failure: i.Failure, QueuePosition: i.QueuePosition, RunningTask: h.tasks.runningTask(i.SessionID),
			Name: i.Name, Effort: i.Effort, Worktree: worktreeOf(ctx, i.Worktree), AgentTool: i.AgentTool,
			LimitedUntil: resulttext.RFC3339(i.LimitedUntil), LimitNote: i.LimitNote,
		})
		fmt.Fprintf(&b, "- %s: %s. %s, %d queries, $%.4f, cwd %s (claudeSessionId %s)%s\n", sessionLabel(i), doingNow(s, i), resulttext.Model(i.Model), i.Queries, i.CostUSD, i.Cwd, i.ClaudeSessionID, resulttext.SessionLimit(i))
	}
	if next != "" {
		fmt.Fprintf(&b, "More sessions: pass cursor %q for the next page.\n", next)
	}
	return resulttext.Tool(b.String()), out, nil
}

// ownedBy keeps the sessions of owner.
func ownedBy(infos []sessions.Info, owner string) []sessions.Info {
	out := infos[:0]
	for _, i := range infos {
		if i.Owner == owner {
			out = append(out, i)
		}
	}
	return out
}

// worktreeOf is a listed session's worktree as it is now.
func worktreeOf(ctx context.Context, w *worktree.Worktree) *worktree.Info {
	if w == nil {
		return nil
	}
	return w.Info(ctx)
}

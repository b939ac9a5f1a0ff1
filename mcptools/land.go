package mcptools

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/resulttext"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/worktree"
)

// LandInput is claude_session_land's arguments.
type LandInput struct {
	SessionID string `json:"sessionId"`
	How       string `json:"how"`
	Message   string `json:"message,omitempty"`
}

// LandOutput is what claude_session_land did.
type LandOutput struct {
	SessionID string `json:"sessionId"`
	worktree.Landed
	SessionClosed bool `json:"sessionClosed"`
}

// land lands a worktree session's work (sessions.Manager.Land): the
// caller's own session only.
func (h *handlers) land(ctx context.Context, req *mcp.CallToolRequest, in LandInput) (*mcp.CallToolResult, LandOutput, error) {
	s, err := h.session(ctx, in.SessionID)
	if err != nil {
		return nil, LandOutput{}, toolError(err)
	}
	landed, err := h.mgr.Land(ctx, s, in.How, in.Message)
	if landed == nil {
		return nil, LandOutput{}, toolError(err)
	}
	out := LandOutput{SessionID: s.ID, Landed: *landed, SessionClosed: landed.Removed}
	text := landText(s.ID, landed)
	if err != nil {
		text += " But: " + err.Error()
	}
	return resulttext.Tool(text), out, nil
}

// landText says in words what a land did.
func landText(id string, l *worktree.Landed) string {
	var b strings.Builder
	switch l.How {
	case worktree.Discard:
		b.WriteString("Discarded the worktree's work.")
	case worktree.PullRequest:
		fmt.Fprintf(&b, "Opened a pull request into %s: %s (%d file(s)).", l.Target, l.PR, len(l.Files))
	default:
		fmt.Fprintf(&b, "Landed %d commit(s) in %s by %s (%d file(s)", len(l.Commits), l.Target, l.How, len(l.Files))
		if len(l.Commits) > 0 {
			fmt.Fprintf(&b, ", now at %s", l.Commits[0][:min(12, len(l.Commits[0]))])
		}
		b.WriteString(").")
		if l.Checkout != "" {
			fmt.Fprintf(&b, " Its checkout at %s was updated.", l.Checkout)
		}
	}
	if l.Message != "" {
		fmt.Fprintf(&b, " Commit message (%s): %q.", map[string]string{worktree.ByCaller: "given", worktree.BySession: "written by the session", worktree.ByDefault: "the default"}[l.MessageBy], l.Message)
	}
	if l.Removed {
		fmt.Fprintf(&b, " The worktree and its branch were removed and session %s is closed.", id)
	}
	return b.String()
}

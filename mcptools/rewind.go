package mcptools

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/resulttext"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/history"
)

// RewindInput is claude_session_rewind's arguments.
type RewindInput struct {
	SessionID string `json:"sessionId"`
	Prompt    int    `json:"prompt"`
	DryRun    bool   `json:"dryRun,omitempty"`
}

// RewindOutput is claude_session_rewind's result: the files restored, or
// with dryRun those that would be.
type RewindOutput struct {
	SessionID  string   `json:"sessionId"`
	Prompt     int      `json:"prompt"`
	DryRun     bool     `json:"dryRun,omitempty"`
	Files      []string `json:"files"`
	Insertions int      `json:"insertions"`
	Deletions  int      `json:"deletions"`
}

// rewindTool is claude_session_rewind's definition.
func (h *handlers) rewindTool() tool {
	return newTool(&mcp.Tool{
		Name:  "claude_session_rewind",
		Title: "Rewind",
		// Prompts are numbered in claude_session_history's text.
		Description: `Undo the file edits of prompts N and later (from 1). Example: {"sessionId": "4b1c…", "prompt": 2, "dryRun": true}`,
		// No annotations: the defaults (destructive, not idempotent, open
		// world) err on the side of care, and the tool's listing stays
		// within its 450 bytes.
	}, h.rewind)
}

func (h *handlers) rewind(ctx context.Context, req *mcp.CallToolRequest, in RewindInput) (*mcp.CallToolResult, RewindOutput, error) {
	s, err := h.session(ctx, in.SessionID)
	if err != nil {
		return nil, RewindOutput{}, toolError(err)
	}
	r, err := s.Rewind(ctx, in.Prompt, in.DryRun)
	if err != nil {
		return nil, RewindOutput{}, toolError(err)
	}
	out := RewindOutput{SessionID: s.ID, Prompt: r.Prompt, DryRun: r.DryRun, Files: r.Files, Insertions: r.Insertions, Deletions: r.Deletions}
	if out.Files == nil {
		out.Files = []string{}
	}
	return resulttext.Tool(rewindText(s, out)), out, nil
}

// rewindText says what a rewind changed, or would: the files relative to
// the session's directory when they are in it.
func rewindText(s *sessions.Session, out RewindOutput) string {
	if len(out.Files) == 0 {
		return fmt.Sprintf("No file of session %s changed since before its prompt %d: nothing to rewind.", s.ID, out.Prompt)
	}
	cwd := s.Info().Cwd
	names := make([]string, len(out.Files))
	for i, f := range out.Files {
		names[i] = f
		if rel, err := filepath.Rel(cwd, f); err == nil && !strings.HasPrefix(rel, "..") {
			names[i] = rel
		}
	}
	what := fmt.Sprintf("%d file(s) (+%d −%d lines): %s", len(names), out.Insertions, out.Deletions, strings.Join(names, ", "))
	if out.DryRun {
		return fmt.Sprintf("Rewinding session %s to before its prompt %d would restore %s. Call again without dryRun to restore them.", s.ID, out.Prompt, what)
	}
	return fmt.Sprintf("Rewound session %s to before its prompt %d: restored %s. Its conversation is unchanged.", s.ID, out.Prompt, what)
}

// promptsIn counts the prompts among entries (sessions.Session.Prompts
// numbers them so).
func promptsIn(entries []history.Entry) int {
	n := 0
	for _, e := range entries {
		if e.Kind == "prompt" {
			n++
		}
	}
	return n
}

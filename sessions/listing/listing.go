// Package listing is what a session list shows of a session (Info), of a
// live session (sessions.Session.Info) or a stored one (OfRecord).
package listing

import (
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/worktree"
)

// Info describes a session for listing.
type Info struct {
	SessionID       string
	ClaudeSessionID string
	Cwd             string
	Model           string
	PermissionMode  string
	State           state.State
	Created         time.Time
	LastUsed        time.Time
	Queries         int
	Usage           turn.Usage
	CostUSD         float64
	PID             int
	Profile         string
	Failure         string
	QueuePosition   int // while queued for a live process; 1 is next
	Temporary       bool
	Name            string
	Effort          string
	Worktree        *worktree.Worktree
	Owner           string
	AgentTool       string
	// LimitedUntil is when the usage limit its latest query met resets,
	// while that is ahead (zero otherwise); LimitKind names the limit.
	LimitedUntil time.Time
	LimitKind    string
	// LimitNote is the CLI's latest warning that the usage limit is near.
	LimitNote string
}

// OfRecord is a stored session's Info.
func OfRecord(rec store.Record) Info {
	e, mode := rec.Entry, rec.Options.PermissionMode
	if mode == "" {
		mode = "default"
	}
	cwd := e.Options.Cwd
	if e.Worktree != nil {
		cwd = e.Worktree.Cwd()
	}
	return Info{SessionID: e.SessionID, ClaudeSessionID: e.ClaudeSessionID, Cwd: cwd, Model: e.Model, PermissionMode: mode,
		State: rec.State, Created: e.Created, LastUsed: e.LastUsed, Queries: e.Queries, Usage: turn.Usage(e.Usage), CostUSD: e.CostUSD,
		Profile: e.Options.Profile, Temporary: rec.Temporary, Name: e.Options.Name, Effort: e.Options.Effort, Worktree: e.Worktree,
		Owner: e.Owner, AgentTool: e.AgentTool}
}

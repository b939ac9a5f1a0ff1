// Package store keeps the records of open sessions so that they survive a
// restart and can be shared by several server instances: the registry file
// (its format, the locked read, the synced write with a backup, the size
// cap), the tombstones of closed sessions, the claims on sessions whose
// process runs (a lease and a generation), the costs spent, and the merge
// that decides, per session, whose record wins (merge.go).
//
// It works on plain records — [Entry], [State], [Claim], [Tombstone] —
// behind the small [Store] interface, which [File] implements; another
// store (a database) would implement the same three methods. It must not
// know live sessions, processes, the policy or MCP: package sessions turns
// its sessions into records and back.
package store

import (
	"errors"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/options"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/worktree"
)

// Store keeps the shared [State]. Its methods are safe for concurrent use,
// also by several processes sharing it.
type Store interface {
	// Read returns the state as stored now, without the records of closed
	// sessions, and its stamp (see Changed). A state that cannot be
	// read is empty, with the error.
	Read() (State, Stamp, error)
	// Update changes the state under the store's lock: change gets the
	// state as stored and edits it (now is the store's clock), and Update
	// keeps the tombstones bounded (see TombstoneAge) and writes what
	// change left, atomically. It returns the stamp of what it wrote.
	Update(change func(st *State, now time.Time)) (Stamp, error)
	// Changed reports whether the stored state may differ from what stamp
	// names (as Read or Update returned it): a cheap look, such as a stat.
	Changed(stamp Stamp) bool
}

// Stamp identifies the stored state as a Read or Update found or left it;
// what it holds is the store's. nil is no state.
type Stamp any

// State is everything a store keeps; for a [File], the JSON of the file.
type State struct {
	Version  int     `json:"version"`
	Sessions []Entry `json:"sessions"`
	// SpentUSD is what every session has cost, closed ones included:
	// what --max-total-budget-usd counts against.
	SpentUSD float64 `json:"spentUsd,omitempty"`
	// UserSpentUSD is the same per user (over HTTP).
	UserSpentUSD map[string]float64 `json:"userSpentUsd,omitempty"`
	// Closed are the sessions closed lately: tombstones that keep an
	// instance sharing the store from bringing them back, and that
	// remember who made their conversations.
	Closed Tombstones `json:"closed,omitempty"`
	// ClosedHorizon is the latest close time of a tombstone dropped to keep
	// the state small (by age or count): an instance that last synced
	// before it cannot tell a session closed since from one the state lost.
	ClosedHorizon time.Time `json:"closedHorizon,omitzero"`
	// Live are the claims on sessions whose process runs (or starts), by
	// session id.
	Live map[string]Claim `json:"live,omitempty"`
	// ClaimGen is, per open session, the generation of its latest claim:
	// each new claim takes the next one, so an instance whose claim lapsed
	// and passed on sees that its generation is stale.
	ClaimGen map[string]uint64 `json:"claimGen,omitempty"`
}

// Entry is the record of one open session.
type Entry struct {
	SessionID       string `json:"sessionId"`
	ClaudeSessionID string `json:"claudeSessionId"`
	// PastClaudeSessionIDs are the Claude session ids the session had
	// before ClaudeSessionID (a replay after a lost transcript starts a new
	// conversation): conversations it made, whose owner is Owner.
	PastClaudeSessionIDs []string              `json:"pastClaudeSessionIds,omitempty"`
	Resumable            bool                  `json:"resumable"`
	ForkPending          bool                  `json:"forkPending,omitempty"`
	Model                string                `json:"model,omitempty"`
	Created              time.Time             `json:"created"`
	LastUsed             time.Time             `json:"lastUsed"`
	Queries              int                   `json:"queries"`
	CostUSD              float64               `json:"costUsd"`
	Usage                Usage                 `json:"usage"`
	Options              options.CreateOptions `json:"options"`
	Worktree             *worktree.Worktree    `json:"worktree,omitempty"`
	Owner                string                `json:"owner,omitempty"`
	Operator             []string              `json:"operator,omitempty"`  // options the operator chose (CreateOptions.Operator)
	AgentTool            string                `json:"agentTool,omitempty"` // the agent tool that started it (CreateOptions.AgentTool)
	Grant                *[]string             `json:"grant,omitempty"`     // the classes its creator's token granted (CreateOptions.Grant)
}

// Usage is the token usage an entry records: the sum of its turns'.
type Usage struct {
	InputTokens              int64 `json:"inputTokens"`
	OutputTokens             int64 `json:"outputTokens"`
	CacheCreationInputTokens int64 `json:"cacheCreationInputTokens"`
	CacheReadInputTokens     int64 `json:"cacheReadInputTokens"`
}

// Entry returns the record of the open session id.
func (st *State) Entry(id string) (Entry, bool) {
	for _, e := range st.Sessions {
		if e.SessionID == id {
			return e, true
		}
	}
	return Entry{}, false
}

// Owners maps the open sessions to their owners.
func (st *State) Owners() map[string]string {
	out := make(map[string]string, len(st.Sessions))
	for _, e := range st.Sessions {
		out[e.SessionID] = e.Owner
	}
	return out
}

// ErrElsewhere is the error for a session whose process runs on another
// server instance sharing the store.
var ErrElsewhere = errors.New("session is live on another server instance")

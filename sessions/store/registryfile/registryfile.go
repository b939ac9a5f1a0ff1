// Package registryfile holds the records of sessions as the registry file kept
// them — [Entry], [Registry], [Tombstone] — and reads that file (Parse): the
// session store (package store) keeps an Entry per session and
// imports a registry file. It must not know live sessions, processes, the
// policy or MCP.
package registryfile

import (
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/options"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/worktree"
)

// Registry is the JSON of a registry file.
type Registry struct {
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
	// LastMessage is the uuid of the last assistant message of the
	// session's last turn: a transcript that holds it holds the whole
	// conversation (the CLI writes its transcript lazily, so the stored
	// one may lag behind the record, which the turn's end writes at once).
	LastMessage string `json:"lastMessage,omitempty"`
}

// Usage is the token usage an entry records: the sum of its turns'.
type Usage struct {
	InputTokens              int64 `json:"inputTokens"`
	OutputTokens             int64 `json:"outputTokens"`
	CacheCreationInputTokens int64 `json:"cacheCreationInputTokens"`
	CacheReadInputTokens     int64 `json:"cacheReadInputTokens"`
}

// Entry returns the record of the open session id.
func (st *Registry) Entry(id string) (Entry, bool) {
	for _, e := range st.Sessions {
		if e.SessionID == id {
			return e, true
		}
	}
	return Entry{}, false
}

// Owners maps the open sessions to their owners.
func (st *Registry) Owners() map[string]string {
	out := make(map[string]string, len(st.Sessions))
	for _, e := range st.Sessions {
		out[e.SessionID] = e.Owner
	}
	return out
}

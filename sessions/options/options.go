// Package options holds a session's options as its caller chose them:
// [CreateOptions], which the session keeps, the store persists and the
// policy checks. It is a leaf: it knows no sessions, processes, store or
// policy, only the CLI's own options (claudeagent.SessionOptions) and the
// worktree option.
package options

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/worktree"
)

// CreateOptions describe a session: where it works, the CLI options its
// caller chose, and the conversation it continues. They are persisted with
// the session and are the session options of the MCP tools (their JSON
// names and descriptions are the tools' parameters).
type CreateOptions struct {
	Cwd string `json:"cwd,omitempty" jsonschema:"Absolute; default: the server's"`
	claudeagent.SessionOptions
	MCPServers      map[string]json.RawMessage `json:"mcpServers,omitempty"`
	StrictMCPConfig bool                       `json:"strictMcpConfig,omitempty"`
	ResumeSessionID string                     `json:"resumeSessionId,omitempty" jsonschema:"A claudeSessionId"`
	ForkSession     bool                       `json:"forkSession,omitempty"`
	Profile         string                     `json:"profile,omitempty"`
	Worktree        worktree.Option            `json:"worktree,omitzero" jsonschema:"A name, or auto: own git worktree"`
	// Env is added to the CLI's environment, over the profile's (which is
	// looked up by name at each start); never persisted.
	Env map[string]string `json:"-"`
	// Temporary sessions (one-shot queries) are not persisted.
	Temporary bool `json:"-"`
	// Owner is the user the session belongs to (over HTTP, the bearer
	// token's); "" on stdio. Persisted with the stored record.
	Owner string `json:"-"`
	// Operator names the options whose values the operator chose (an
	// agent of --agents-file or the user's agent files, not the caller):
	// a remote caller needs no --http-allow for them; the ceilings still
	// apply. Never a tool parameter; persisted with the stored record.
	Operator []string `json:"-"`
	// AgentTool is the agent tool that started the session, "" for the
	// other tools: only that tool continues it. Never a tool parameter;
	// persisted with the stored record.
	AgentTool string `json:"-"`
	// Grant, when not nil, narrows --http-allow for this session to the
	// classes it lists: those the scopes of the creator's OAuth token were
	// given (--oauth-scope-classes). nil: all of --http-allow. Never a
	// tool parameter; persisted with the stored record.
	Grant *[]string `json:"-"`
}

// AgentNames are the names of the agents o defines (agents), sorted.
func (o *CreateOptions) AgentNames() ([]string, error) {
	if len(o.Agents) == 0 {
		return nil, nil
	}
	var agents map[string]json.RawMessage
	if err := json.Unmarshal(o.Agents, &agents); err != nil {
		return nil, fmt.Errorf("invalid agents: %v", err)
	}
	return slices.Sorted(maps.Keys(agents)), nil
}

package agentfile

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/jsonstr"
)

// An Agent is one agent definition. Agents handed out by [Load] and a
// [Watcher] are shared: treat them as read-only.
type Agent struct {
	// Name is the agent's name in Claude Code: the key of --agents and the
	// value of --agent.
	Name string
	// ToolName is the agent's tool name, set by [Load] (see
	// [AssignToolNames]); "" for an agent only parsed.
	ToolName string
	// Source, Path and Line say where the agent was defined: the file and
	// the line of its name (in an operator file, of its entry).
	Source Source
	Path   string
	Line   int
	Definition
	// Color is the agent's display color; --agents does not take it.
	Color string
	// Unknown holds the fields this package does not know, as decoded from
	// YAML; they were reported in a warning and are not passed on.
	Unknown map[string]any
	// Operator holds the session options an operator file entry sets; zero
	// for agent files.
	Operator OperatorOptions
}

// Definition is an agent as the CLI's --agents flag takes it: the JSON of
// one entry of its object. The keys are those the CLI 2.1.330 accepts
// (2.1.197 ignores autoCompactWindow, omitClaudeMd and the observer
// fields).
type Definition struct {
	Description string `json:"description"`
	Prompt      string `json:"prompt"`
	// Tools are the tools the agent may use: nil inherits all of them, an
	// empty list allows none.
	Tools           []string `json:"tools,omitzero"`
	DisallowedTools []string `json:"disallowedTools,omitempty"`
	// Model is an alias, a model id or "inherit".
	Model             string          `json:"model,omitempty"`
	Effort            Effort          `json:"effort,omitempty"`
	PermissionMode    string          `json:"permissionMode,omitempty"`
	MCPServers        json.RawMessage `json:"mcpServers,omitempty"` // a list: server names or {name: config}
	Hooks             json.RawMessage `json:"hooks,omitempty"`      // an object, as in settings
	MaxTurns          int             `json:"maxTurns,omitempty"`
	AutoCompactWindow int             `json:"autoCompactWindow,omitempty"`
	Skills            []string        `json:"skills,omitempty"`
	InitialPrompt     string          `json:"initialPrompt,omitempty"`
	Memory            string          `json:"memory,omitempty"` // user, project or local
	Background        bool            `json:"background,omitempty"`
	OmitClaudeMd      bool            `json:"omitClaudeMd,omitempty"`
	Isolation         string          `json:"isolation,omitempty"` // worktree or remote
	Observer          string          `json:"observer,omitempty"`
	ObserverMessage   string          `json:"observerMessage,omitempty"`
	// ObserveSubagents and ObserveToolResults matter only when false.
	ObserveSubagents   *bool `json:"observeSubagents,omitempty"`
	ObserveToolResults *bool `json:"observeToolResults,omitempty"`
}

// Effort is an effort level (low, medium, high, xhigh, max) or, in an
// agent file, a positive integer; "" is unset.
type Effort string

// MarshalJSON writes an integer effort as a JSON number, as the CLI
// requires.
func (e Effort) MarshalJSON() ([]byte, error) {
	if n, err := strconv.Atoi(string(e)); err == nil {
		return []byte(strconv.Itoa(n)), nil
	}
	return json.Marshal(string(e))
}

// OperatorOptions are the session options an operator file entry may set
// besides the agent itself. The zero value sets none.
type OperatorOptions struct {
	// Effort is the session's effort level (--effort).
	Effort string
	// MaxBudgetUSD caps the session's spending; 0 is no cap.
	MaxBudgetUSD float64
	// Worktree asks for the session's own git worktree.
	Worktree Worktree
	// Profile names one of the server's profiles.
	Profile string
	// SettingSources are the settings loaded: nil is the CLI's default, an
	// empty list none.
	SettingSources []string
	// PermissionMode is the session's permission mode.
	PermissionMode string
	// MCPServers are the session's MCP servers, in the CLI's mcpServers form
	// ({name: config}).
	MCPServers map[string]json.RawMessage
	// Plugins are plugin directories, absolute (a relative one in the file is
	// taken from the file's directory).
	Plugins []string
	// AppendSystemPrompt is appended to the session's system prompt.
	AppendSystemPrompt string
}

// Worktree asks for a git worktree: On alone lets the server pick a name.
type Worktree struct {
	On   bool
	Name string
}

// AgentsJSON returns the value of --agents that defines this agent alone:
// {"<name>": {"description": …, "prompt": …, …}}.
func (a *Agent) AgentsJSON() (json.RawMessage, error) {
	// Without HTML escaping: the CLI reads the same, and a human the
	// prompt ("<example>") in the process's arguments.
	data, err := jsonstr.Marshal(map[string]Definition{a.Name: a.Definition})
	if err != nil {
		return nil, fmt.Errorf("encoding agent %q: %w", a.Name, err)
	}
	return data, nil
}

// SessionOptions returns the CLI options that run a session as this agent:
// Agents and Agent, and the operator options that are CLI options (effort,
// budget, permission mode, setting sources, appended system prompt). The
// worktree, profile, MCP servers and plugins of [Agent.Operator] are the
// caller's to apply.
func (a *Agent) SessionOptions() (claudeagent.SessionOptions, error) {
	agents, err := a.AgentsJSON()
	if err != nil {
		return claudeagent.SessionOptions{}, err
	}
	op := a.Operator
	return claudeagent.SessionOptions{
		Agents:             agents,
		Agent:              a.Name,
		Effort:             op.Effort,
		MaxBudgetUSD:       op.MaxBudgetUSD,
		PermissionMode:     op.PermissionMode,
		SettingSources:     op.SettingSources,
		AppendSystemPrompt: op.AppendSystemPrompt,
	}, nil
}

// A Warning is a problem found while reading agents: a file or entry
// skipped, a field ignored, a name shadowed or changed. None is fatal.
type Warning struct {
	Path  string // the file or directory, "" when none
	Line  int    // 1-based, 0 when unknown
	Agent string // the agent's name, "" when unknown
	Text  string
}

// String returns "path:line: text", leaving out what is unknown.
func (w Warning) String() string {
	switch {
	case w.Path != "" && w.Line > 0:
		return fmt.Sprintf("%s:%d: %s", w.Path, w.Line, w.Text)
	case w.Path != "":
		return w.Path + ": " + w.Text
	}
	return w.Text
}

// Error makes a Warning the error of a file that could not be read at all.
func (w Warning) Error() string { return w.String() }

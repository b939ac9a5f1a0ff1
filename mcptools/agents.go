// Agent tools: every agent definition that claudeagent/agentfile finds
// (the user's and the project's Claude Code agent files, the operator's
// directories and file) is one tool of the server, named after the agent,
// whose call runs a session as that agent (agentcall.go). An
// agentfile.Watcher keeps them current: a change adds, replaces or removes
// tools, and the go-sdk server sends notifications/tools/list_changed.
// They have their own definitions (name, description within
// MaxAgentToolBytes, the one input schema), registration, and the rule
// that a caller's overrides may only tighten the agent's session; their
// queries go the way of claude_chat_query's (handlers.agentCall). Arguments reach a
// handler already checked against agentInputSchema by the middleware.

package mcptools

import (
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent/agentfile"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/images"
)

// MaxAgentToolBytes caps what an agent tool costs the host's model: its
// name, description and input schema as JSON. The description is cut to
// fit.
const MaxAgentToolBytes = 600

// DefaultMaxAgentTools is how many agents are served as tools unless the
// operator says otherwise.
const DefaultMaxAgentTools = 20

// AgentOptions configure NewAgents.
type AgentOptions struct {
	// Config says where the agents are and how many are served; the
	// built-in tools' names are added to its Reserved names.
	Config agentfile.Config
	// Watch tunes the polling (tests drive it with Rescan).
	Watch  agentfile.WatchOptions
	Logger *slog.Logger
}

// Agents serves agent definitions as the tools of one server. Make it with
// NewAgents, pass it as mcptools.Options.Agents (mcptools.NewServer calls Start,
// then Attach), and Close it once the server is done.
type Agents struct {
	opts AgentOptions
	log  *slog.Logger

	mu     sync.Mutex
	w      *agentfile.Watcher
	srv    *mcp.Server
	h      *handlers
	output *jsonschema.Schema    // the tools' output schema, QueryOutput's
	tools  map[string]*agentTool // what is registered, by tool name
	warned map[string]bool       // the warnings of the current set, logged once
	closed bool
}

// agentTool is one registered agent tool.
type agentTool struct {
	agent *agentfile.Agent // as it was when the tool was registered
	def   *mcp.Tool
}

// NewAgents returns the agent tools of opts; nothing is read before Start.
func NewAgents(opts AgentOptions) *Agents {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Agents{opts: opts, log: logger, tools: map[string]*agentTool{}, warned: map[string]bool{}}
}

// Start reads the agents and starts watching, reserving the names of the
// built-in tools; it reports whether there are agents to serve (then the
// server's instructions get agentInstructions).
func (a *Agents) Start(builtin []string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.w != nil {
		panic("mcptools: an Agents serves one server")
	}
	if a.closed {
		return false
	}
	cfg := a.opts.Config
	cfg.Reserved = append(slices.Clone(cfg.Reserved), builtin...)
	slices.Sort(cfg.Reserved)
	a.w = agentfile.NewWatcher(cfg, a.opts.Watch, a.update)
	return len(a.w.Set().Agents) > 0
}

// Attach registers the agents' tools on srv, their calls served by h (as
// claude_chat_query's are); from then on the watcher's changes reach it. Start comes first.
func (a *Agents) Attach(srv *mcp.Server, h *handlers) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed || a.w == nil {
		return
	}
	a.srv, a.h, a.output = srv, h, queryOutputSchema()
	a.applyLocked(a.w.Set())
}

// update is the watcher's callback; before Attach, Attach applies the
// watcher's set itself.
func (a *Agents) update(set *agentfile.Set) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.closed && a.srv != nil {
		a.applyLocked(set)
	}
}

// Rescan reads the agents again now and updates the tools; it reports
// whether anything (agents or warnings) changed.
func (a *Agents) Rescan() bool {
	a.mu.Lock()
	w := a.w
	a.mu.Unlock()
	return w != nil && w.Rescan()
}

// Close stops watching (nil does nothing). The tools stay as they are.
func (a *Agents) Close() {
	if a == nil {
		return
	}
	a.mu.Lock()
	a.closed = true
	w := a.w
	a.mu.Unlock()
	if w != nil {
		w.Close() // after the unlock: it waits for a callback in progress
	}
}

// Has reports whether name is an agent tool now (nil has none).
func (a *Agents) Has(name string) bool {
	if a == nil {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.tools[name] != nil
}

// applyLocked makes the registered tools those of set: new and changed
// agents are (re)registered, the others removed; each change makes the
// server notify its clients (debounced by the SDK into one
// notifications/tools/list_changed). NewAgents warnings are logged.
func (a *Agents) applyLocked(set *agentfile.Set) {
	warned := map[string]bool{}
	for _, w := range set.Warnings {
		key := w.String()
		if !a.warned[key] && !warned[key] {
			a.log.Warn("agent definitions: " + key)
		}
		warned[key] = true
	}
	a.warned = warned

	next := map[string]*agentTool{}
	var added, removed []string
	for _, ag := range set.Agents {
		if old := a.tools[ag.ToolName]; old != nil && reflect.DeepEqual(old.agent, ag) {
			next[ag.ToolName] = old
			continue
		}
		t, err := newAgentTool(ag, a.output)
		if err != nil {
			a.log.Error("agent not served as a tool", "agent", ag.Name, "path", ag.Path, "err", err)
			continue
		}
		a.srv.AddTool(t.def, a.handler(t))
		next[ag.ToolName] = t
		added = append(added, ag.ToolName)
	}
	for name := range a.tools {
		if next[name] == nil {
			removed = append(removed, name)
		}
	}
	if len(removed) > 0 {
		a.srv.RemoveTools(removed...)
	}
	a.tools = next
	if len(added)+len(removed) > 0 {
		slices.Sort(removed)
		a.log.Info("agent tools", "tools", slices.Sorted(maps.Keys(next)), "added_or_changed", added, "removed", removed)
	}
}

// agentArguments are an agent tool's arguments: the prompt, a conversation of
// this tool to continue, and overrides that may only tighten the agent's
// session (call.go).
type agentArguments struct {
	Prompt          string         `json:"prompt"`
	SessionID       string         `json:"sessionId,omitempty"`
	Cwd             string         `json:"cwd,omitempty"`
	Images          []images.Input `json:"images,omitempty"`
	WaitSeconds     int            `json:"waitSeconds,omitempty"`
	Effort          string         `json:"effort,omitempty"`
	MaxBudgetUSD    float64        `json:"maxBudgetUsd,omitempty"`
	Tools           []string       `json:"tools,omitzero"`
	DisallowedTools []string       `json:"disallowedTools,omitempty"`
	PermissionMode  string         `json:"permissionMode,omitempty"`
}

// agentInput is the input schema of every agent tool; agentParams are its
// argument names.
var (
	agentInput  = buildAgentInputSchema()
	agentParams = slices.Sorted(maps.Keys(agentInput.Properties))
)

// agentInputSchema is the input schema of every agent tool, which the core's
// middleware checks each call against: one schema, shared; read it, never
// change it.
func agentInputSchema() *jsonschema.Schema { return agentInput }

// buildAgentInputSchema makes the input schema of every agent tool: as lean as it
// gets (427 bytes), since the description has what is left of
// MaxAgentToolBytes; what the parameters mean is said once, in the
// server's instructions (agentInstructions). The values the overrides take
// are checked by the handler, which says why a value is refused (an enum
// would only say that it is not listed).
func buildAgentInputSchema() *jsonschema.Schema {
	str := func() *jsonschema.Schema { return &jsonschema.Schema{Type: "string"} }
	list := func() *jsonschema.Schema { return &jsonschema.Schema{Type: "array", Items: str()} }
	return &jsonschema.Schema{Type: "object", Required: []string{"prompt"}, Properties: map[string]*jsonschema.Schema{
		"prompt":          str(),
		"sessionId":       str(),
		"cwd":             str(),
		"images":          {Type: "array", Items: &jsonschema.Schema{Type: "object"}},
		"waitSeconds":     {Type: "integer"},
		"effort":          str(),
		"maxBudgetUsd":    {Type: "number"},
		"tools":           list(),
		"disallowedTools": list(),
		"permissionMode":  str(),
	}}
}

// agentInstructions are added to the server's instructions when there are
// agents to serve at start (the instructions are given once, at the
// client's initialize or server/discover).
const agentInstructions = `- Tools without the claude_ prefix run the operator's Claude Code agents (each its own prompt,
  tools and model): the prompt starts a conversation; pass the result's sessionId (to the same
  tool) to continue it. Their effort, maxBudgetUsd, tools, disallowedTools and permissionMode
  may only narrow the agent's own.
`

// visibleTool is what the host's model sees of a tool.
type visibleTool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	InputSchema any    `json:"inputSchema"`
}

// newAgentTool makes the tool of an agent, returning out: its description,
// its whitespace folded, cut so that the tool stays within MaxAgentToolBytes.
func newAgentTool(ag *agentfile.Agent, out *jsonschema.Schema) (*agentTool, error) {
	in := agentInputSchema()
	budget, err := agentfile.DescriptionBudget(visibleTool{Name: ag.ToolName, InputSchema: in}, MaxAgentToolBytes)
	if err != nil {
		return nil, err
	}
	desc := agentfile.CutDescription(strings.Join(strings.Fields(ag.Description), " "), budget)
	if desc == "" {
		return nil, fmt.Errorf("no room for a description within %d bytes", MaxAgentToolBytes)
	}
	def := &mcp.Tool{Name: ag.ToolName, Description: desc, InputSchema: in, OutputSchema: out}
	return &agentTool{agent: ag, def: def}, nil
}

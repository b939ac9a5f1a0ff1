package mcptools

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent/agentfile"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/options"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/worktree"
)

// A call of an agent tool runs a session as the agent: --agents holds its
// definition, --agent names it (so the session has its system prompt, its
// tools and its model), and the operator file's session options apply. The
// query is launched exactly as claude_chat_query's (waiting, tasks,
// permission questions, notifications). The session remembers the tool
// that started it (CreateOptions.AgentTool): only that tool continues it.
//
// The caller's overrides may only tighten the agent's session; a wider
// value is refused, saying why:
//   - effort: at most the agent's (low < medium < high < xhigh < max); any
//     level when the agent sets none;
//   - maxBudgetUsd: at most the agent's (the operator file's); any amount
//     when it sets none;
//   - tools: a subset of the agent's (any tools when it lists none);
//   - disallowedTools: added to the agent's;
//   - permissionMode: at most as permissive as the agent's mode (its
//     operator entry's, else its file's, else default), in
//     claudeagent.ModesByStrictness order.
// AgentOptions from the agent's definition and operator entry are the
// operator's (CreateOptions.Operator: a remote caller needs no --http-allow
// for them, the ceilings still apply), except for agents of the project,
// whose files come with whatever repository the server runs in; options
// the caller set never are.

// handler is an agent tool's handler. It decodes the arguments itself
// rather than through a typed tool's schema validation, so that a refused
// override says why; a protocol error (a busy session) stays one, any
// other error is a tool error.
func (a *Agents) handler(t *agentTool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in agentArguments
		if len(req.Params.Arguments) > 0 {
			if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
				return errorResult(fmt.Errorf("invalid arguments for %s: %v", t.def.Name, err)), nil
			}
		}
		res, err := encoded(a.h.agentCall(ctx, req, t, in))
		var rpcErr *jsonrpc.Error
		switch {
		case errors.As(err, &rpcErr):
			return nil, rpcErr
		case err != nil:
			return errorResult(err), nil
		}
		return res, nil
	}
}

func errorResult(err error) *mcp.CallToolResult {
	var r mcp.CallToolResult
	r.SetError(err)
	return &r
}

// agentCall runs one call of an agent tool t.
func (h *handlers) agentCall(ctx context.Context, req *mcp.CallToolRequest, t *agentTool, in agentArguments) (*mcp.CallToolResult, QueryOutput, error) {
	return h.queryCall(ctx, req, in.Prompt, in.WaitSeconds, func(wait time.Duration) (*mcp.CallToolResult, QueryOutput, error) {
		if in.SessionID != "" {
			return h.continueAgent(ctx, req, t, in, wait)
		}
		opts, err := agentSession(t.agent, in)
		if err != nil {
			return nil, QueryOutput{}, err
		}
		// The query starts the process (or takes a warm spare); the agent
		// is likely called again, so its options are wanted for spares,
		// filled when the turn ends.
		owned(ctx, &opts)
		s, images, err := h.mgr.OneShot(ctx, opts, in.Images)
		if err != nil {
			return nil, QueryOutput{}, toolError(err)
		}
		res, out, err := h.launch(ctx, req, s, in.Prompt, sessions.QueryOptions{Images: images}, wait)
		if err != nil {
			// No result names the session: nobody can continue it.
			h.mgr.Discard(s)
		}
		return res, out, err
	})
}

// continueAgent sends a prompt to a session the agent tool t started.
func (h *handlers) continueAgent(ctx context.Context, req *mcp.CallToolRequest, t *agentTool, in agentArguments, wait time.Duration) (*mcp.CallToolResult, QueryOutput, error) {
	tool := t.def.Name
	s, err := h.session(ctx, in.SessionID)
	if errors.Is(err, sessions.ErrNotFound) {
		return nil, QueryOutput{}, fmt.Errorf("%w: omit sessionId to start a new conversation with %s", err, tool)
	}
	if err != nil {
		return nil, QueryOutput{}, toolError(err)
	}
	switch by := s.Info().AgentTool; {
	case by == "":
		return nil, QueryOutput{}, fmt.Errorf("session %s was not started by %s but by claude_session_create or claude_direct_query: continue it with claude_chat_query, or omit sessionId to start a new conversation with %s", s.ID, tool, tool)
	case by != tool:
		return nil, QueryOutput{}, fmt.Errorf("session %s was started by the agent tool %s, not %s: continue it with %s", s.ID, by, tool, by)
	}
	var fixed []string
	for name, set := range map[string]bool{"cwd": in.Cwd != "", "maxBudgetUsd": in.MaxBudgetUSD != 0, "tools": in.Tools != nil,
		"disallowedTools": len(in.DisallowedTools) > 0, "permissionMode": in.PermissionMode != ""} {
		if set {
			fixed = append(fixed, name)
		}
	}
	if len(fixed) > 0 {
		slices.Sort(fixed)
		return nil, QueryOutput{}, fmt.Errorf("%s cannot change in a conversation: session %s keeps the options it started with; omit them with sessionId, or omit sessionId to start a new conversation", strings.Join(fixed, ", "), s.ID)
	}
	if in.Effort != "" {
		if err := checkEffort(t.agent, in.Effort); err != nil {
			return nil, QueryOutput{}, err
		}
	}
	images, err := s.LoadImages(in.Images)
	if err != nil {
		return nil, QueryOutput{}, err
	}
	return h.launch(ctx, req, s, in.Prompt, sessions.QueryOptions{Effort: in.Effort, Images: images}, wait)
}

// agentSession returns the options of a new session that runs as ag, with
// the caller's overrides, each checked to tighten (see the comment at the
// top).
func agentSession(ag *agentfile.Agent, in agentArguments) (sessions.CreateOptions, error) {
	def, op := ag.Definition, ag.Operator
	def.Tools, def.DisallowedTools = slices.Clone(def.Tools), slices.Clone(def.DisallowedTools)
	var caller []string // the options the caller set
	if in.Effort != "" {
		if err := checkEffort(ag, in.Effort); err != nil {
			return sessions.CreateOptions{}, err
		}
		op.Effort = in.Effort
		if def.Effort != "" {
			def.Effort = agentfile.Effort(in.Effort)
		}
		caller = append(caller, "effort")
	}
	if in.MaxBudgetUSD != 0 {
		switch {
		case !(in.MaxBudgetUSD > 0) || math.IsInf(in.MaxBudgetUSD, 0):
			return sessions.CreateOptions{}, fmt.Errorf("invalid maxBudgetUsd %v: use a positive amount in USD, or omit it", in.MaxBudgetUSD)
		case op.MaxBudgetUSD > 0 && in.MaxBudgetUSD > op.MaxBudgetUSD:
			return sessions.CreateOptions{}, fmt.Errorf("maxBudgetUsd %v is refused: the agent %q may spend at most $%v a session, and an agent tool's overrides may only tighten (pass at most %v)",
				in.MaxBudgetUSD, ag.Name, op.MaxBudgetUSD, op.MaxBudgetUSD)
		}
		op.MaxBudgetUSD = in.MaxBudgetUSD
		caller = append(caller, "maxBudgetUsd")
	}
	if in.Tools != nil {
		if err := options.ValidateToolNames("tools", in.Tools); err != nil {
			return sessions.CreateOptions{}, err
		}
		if def.Tools != nil {
			for _, t := range in.Tools {
				if !slices.Contains(def.Tools, t) {
					return sessions.CreateOptions{}, fmt.Errorf("tools entry %q is refused: it is not one of the agent %q's tools (%s), and an agent tool's overrides may only tighten (pass some of them, [] for none)",
						t, ag.Name, strings.Join(def.Tools, ", "))
				}
			}
		}
		def.Tools = slices.Clone(in.Tools)
	}
	for _, t := range in.DisallowedTools {
		if !slices.Contains(def.DisallowedTools, t) {
			def.DisallowedTools = append(def.DisallowedTools, t)
		}
	}
	if in.PermissionMode != "" {
		if err := checkMode(ag, in.PermissionMode); err != nil {
			return sessions.CreateOptions{}, err
		}
		op.PermissionMode = in.PermissionMode
		if def.PermissionMode != "" {
			def.PermissionMode = in.PermissionMode
		}
		caller = append(caller, "permissionMode")
	}
	run := *ag
	run.Definition, run.Operator = def, op
	if !options.ValidAgentName(ag.Name) { // runs under a name sessions accept
		run.Name = strings.TrimLeft(ag.ToolName, "_-")
		if run.Name == "" {
			run.Name = "agent"
		}
	}
	so, err := run.SessionOptions()
	if err != nil {
		return sessions.CreateOptions{}, err
	}
	so.Plugins = op.Plugins
	so.DisallowedTools = in.DisallowedTools // also for the session, whatever --agent makes of the definition's
	o := sessions.CreateOptions{Cwd: in.Cwd, SessionOptions: so, MCPServers: op.MCPServers, Profile: op.Profile,
		Worktree: worktree.Option{On: op.Worktree.On, Name: op.Worktree.Name}, AgentTool: ag.ToolName}
	if ag.Source != agentfile.SourceProject {
		o.Operator = operatorOptions(&o, caller)
	}
	return o, nil
}

// operatorOptions names the options of o that come from the agent's
// definition and operator entry, leaving out those the caller set.
func operatorOptions(o *sessions.CreateOptions, caller []string) []string {
	names := []string{"agents", "agent"}
	for name, set := range map[string]bool{
		"effort": o.Effort != "", "maxBudgetUsd": o.MaxBudgetUSD > 0, "permissionMode": o.PermissionMode != "",
		"settingSources": o.SettingSources != nil, "appendSystemPrompt": o.AppendSystemPrompt != "",
		"plugins": len(o.Plugins) > 0, "mcpServers": len(o.MCPServers) > 0, "profile": o.Profile != "", "worktree": o.Worktree.On,
	} {
		if set && !slices.Contains(caller, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// checkEffort checks that effort is no higher than ag's.
// The effort's form is checked by the query (or the new session's
// options), once.
func checkEffort(ag *agentfile.Agent, effort string) error {
	limit := ag.Operator.Effort
	if limit == "" {
		limit = string(ag.Effort)
	}
	if limit == "" {
		return nil
	}
	levels := claudeagent.EffortLevels
	top := slices.Index(levels, limit)
	switch {
	case top < 0:
		return fmt.Errorf("effort %q is refused: the agent %q sets its effort as a number (%s), which a level cannot be compared with; omit effort", effort, ag.Name, limit)
	case slices.Index(levels, effort) > top:
		return fmt.Errorf("effort %q is refused: the agent %q runs at effort %s, and an agent tool's overrides may only tighten (use %s)",
			effort, ag.Name, limit, strings.Join(levels[:top+1], ", "))
	}
	return nil
}

// checkMode checks that mode is no more permissive than ag's.
func checkMode(ag *agentfile.Agent, mode string) error {
	if err := options.ValidatePermissionMode(mode); err != nil {
		return err
	}
	limit := cmp.Or(ag.Operator.PermissionMode, ag.PermissionMode, "default")
	top := slices.Index(claudeagent.ModesByStrictness, limit)
	if slices.Index(claudeagent.ModesByStrictness, mode) > top {
		return fmt.Errorf("permissionMode %q is refused: it is more permissive than the agent %q's %s, and an agent tool's overrides may only tighten (use %s; strictest first)",
			mode, ag.Name, limit, strings.Join(claudeagent.ModesByStrictness[:top+1], ", "))
	}
	return nil
}

// queryOutputSchema is an agent tool's output schema: QueryOutput's,
// shaped as the query tools' are.
func queryOutputSchema() *jsonschema.Schema {
	out := mustSchema[QueryOutput]()
	shape(out, outputKeys[reflect.TypeFor[QueryOutput]()])
	return out
}

// agentOnly refuses a tool other than the agent tool that started s: the
// agent tools' overrides may only tighten, and tool (claude_chat_query,
// claude_chat_mode, claude_chat_model) could widen.
func agentOnly(s *sessions.Session, tool string) error {
	if by := s.Info().AgentTool; by != "" {
		return fmt.Errorf("session %s was started by the agent tool %s, and only that tool continues it (its overrides may only tighten the agent's session), so %s does not take it: call %s with this sessionId and a prompt", s.ID, by, tool, by)
	}
	return nil
}

package mcptools

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/toolargs"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The server's middleware, and what it decides for a tools/call: whose
// call it is, whether it may become a task, and after how long (the task
// grace and the fan-out rule).

// taskSlot carries a tools/call's task from the handler to the middleware
// that answers the call with it.
type taskSlot struct {
	start time.Time     // when the call arrived: the grace counts from here
	after time.Duration // the grace: --task-after, or burstGrace in a fan-out
	task  *task
}

// grace is what is left of the task grace of the call.
func (s *taskSlot) grace() time.Duration {
	return max(s.after-time.Since(s.start), time.Millisecond)
}

// The fan-out rule. A host such as Claude Code runs a model's tool calls
// that are not read-only one after another, so a model that fans out four
// sub-agents waits for each call's grace in turn. A query call that
// arrives within burstWindow after a call of the same client (its user, or
// on stdio its MCP session) was answered with a task is taken for part of
// such a fan-out: its grace is burstGrace, so it becomes a task at once
// (the host is waiting for nothing else). Within a fan-out the host sends
// the next call as soon as it has the previous one's task (after one
// tasks/get): a few hundred milliseconds even on a loaded machine, while a
// call that follows a model turn comes later; a tasks/cancel or
// tasks/update of the client (TaskStop, a permission answer) ends the
// burst too, as the model acted in between. A lone query keeps
// --task-after, and one that ends within it still gets a plain result.
const (
	burstWindow = 1500 * time.Millisecond
	burstGrace  = 10 * time.Millisecond
)

// bursts remembers, per client, when a call was last answered with a task.
type bursts struct {
	mu   sync.Mutex
	last map[string]time.Time
}

// grace is the task grace of a call of scope arriving now.
func (b *bursts) grace(scope string, after time.Duration, now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s, t := range b.last {
		if now.Sub(t) > burstWindow {
			delete(b.last, s) // forget old bursts: the map stays small
		}
	}
	if t, ok := b.last[scope]; ok && now.Sub(t) <= burstWindow {
		return min(after, burstGrace)
	}
	return after
}

// tasked notes that a call of scope was answered with a task now.
func (b *bursts) tasked(scope string, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.last == nil {
		b.last = map[string]time.Time{}
	}
	b.last[scope] = now
}

// end ends scope's burst: its next call waits --task-after.
func (b *bursts) end(scope string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.last, scope)
}

type taskSlotKey struct{}

// scopeKey carries whose bound a call's tasks count against.
type scopeKey struct{}

// withScope puts the scope of req's tasks into ctx: its user, or, without
// one (stdio), its MCP session.
func withScope(ctx context.Context, req mcp.Request) context.Context {
	scope := userOf(ctx)
	if scope == "" {
		scope = fmt.Sprintf("mcp-session %p", req.GetSession())
	}
	return context.WithValue(ctx, scopeKey{}, scope)
}

func scopeOf(ctx context.Context) string {
	s, _ := ctx.Value(scopeKey{}).(string)
	return s
}

func taskSlotFrom(ctx context.Context) *taskSlot {
	s, _ := ctx.Value(taskSlotKey{}).(*taskSlot)
	return s
}

// requestWantsTasks reports whether a call may be answered with a task: it
// uses protocol 2026-07-28 or later and declares the extension in its own
// capabilities (never in an earlier request's).
func requestWantsTasks(req *mcp.CallToolRequest) bool {
	if !modernEra(req) || req.Params == nil {
		return false
	}
	return declaresTasks(req.Params.GetMeta())
}

// declaresTasks reports whether a request's _meta declares the tasks
// extension among the client's capabilities.
func declaresTasks(meta map[string]any) bool {
	caps, ok := meta[mcp.MetaKeyClientCapabilities]
	if !ok {
		return false
	}
	raw, err := json.Marshal(caps)
	if err != nil {
		return false
	}
	var c struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	if json.Unmarshal(raw, &c) != nil {
		return false
	}
	_, ok = c.Extensions[TasksExtension]
	return ok
}

// logLevels are the levels of logging/setLevel (RFC 5424 names).
var logLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// taskTools are the tools whose calls may become tasks, besides the agent
// tools.
var taskTools = []string{"claude_chat_query", "claude_direct_query"}

// middleware checks logging/setLevel's level; with tasks on, it declares
// the extension in server/discover and answers a tools/call whose handler
// made a task with that task.
func (h *handlers) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ctx = withUser(ctx, req)
		ctx = withScope(ctx, req)
		switch method {
		case "logging/setLevel":
			//lint:ignore SA1019 logging/setLevel is served to clients of protocols before 2026-07-28
			if p, ok := req.GetParams().(*mcp.SetLoggingLevelParams); ok && !slices.Contains(logLevels, string(p.Level)) {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("invalid level %q: use one of %s", p.Level, strings.Join(logLevels, ", "))}
			}
		case "server/discover":
			res, err := next(ctx, method, req)
			if d, ok := res.(*mcp.DiscoverResult); ok && err == nil && d.Capabilities != nil && !h.opts.NoTasks {
				caps := *d.Capabilities
				caps.Extensions = maps.Clone(caps.Extensions)
				caps.AddExtension(TasksExtension, nil)
				d.Capabilities = &caps
			}
			return res, err
		case "tools/call":
			if ctr, ok := req.(*mcp.CallToolRequest); ok && ctr.Params != nil {
				start := time.Now()
				entry, err := h.auditStarted(ctx, ctr, start)
				if err != nil {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "refused: " + err.Error() + "; nothing was run"}
				}
				ctx, sp := traceCall(ctx, ctr)
				res, err := h.callTool(ctx, ctr, next)
				endCall(sp, res, err)
				h.auditCall(ctx, ctr, entry, start, res, err)
				if h.dash != nil {
					h.dash.SessionsChanged(userOf(ctx)) // the lists of the caller's sessions show creates, closes and the rest
				}
				return res, err
			}
		}
		return next(ctx, method, req)
	}
}

// callTool runs a tools/call: arguments that do not fit the tool's input
// schema are refused (toolargs.Check); a query from a client that takes tasks
// may be answered with one.
func (h *handlers) callTool(ctx context.Context, req *mcp.CallToolRequest, next mcp.MethodHandler) (mcp.Result, error) {
	name := req.Params.Name
	agent := h.agents.Has(name)
	input := h.inputs[name]
	if agent {
		input = agentInputSchema()
	}
	if input != nil {
		if _, ok := h.toolAction(name); !ok {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: unclassifiedTool(name).Error()}}, IsError: true}, nil
		}
		if err := toolargs.Check(input, name, req.Params.Arguments, legacyForm); err != nil {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}, IsError: true}, nil
		}
	}
	if h.opts.NoTasks || !(slices.Contains(taskTools, name) || agent) || !requestWantsTasks(req) {
		return next(ctx, "tools/call", req)
	}
	now := time.Now()
	slot := &taskSlot{start: now, after: h.bursts.grace(scopeOf(ctx), h.opts.TaskAfter, now)}
	res, err := next(context.WithValue(ctx, taskSlotKey{}, slot), "tools/call", req)
	if slot.task != nil {
		h.bursts.tasked(scopeOf(ctx), time.Now())
		return slot.task.createResult(), nil
	}
	return res, err
}

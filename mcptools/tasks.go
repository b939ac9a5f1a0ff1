package mcptools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/textcut"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// MCP tasks (extension io.modelcontextprotocol/tasks, SEP-2663) on protocol
// 2026-07-28: a query call from a client that declares the extension on the
// request, and whose turn has not ended within --task-after, is answered
// with a task instead of waiting. The client polls tasks/get, answers
// permission questions with tasks/update and may stop the turn with
// tasks/cancel. A task is one more view of the query's sessions.Run.

// TasksExtension is the extension's identifier.
const TasksExtension = "io.modelcontextprotocol/tasks"

// Task statuses.
const (
	taskWorking       = "working"
	taskInputRequired = "input_required"
	taskCompleted     = "completed"
	taskFailed        = "failed"
	taskCancelled     = "cancelled"
)

// maxFinishedTasks bounds the finished tasks kept for their TTL for each
// user (on stdio, each MCP session); past it that user's oldest are dropped
// early, so that one user's tasks never evict another's results.
// maxAllFinishedTasks bounds them all: past it the oldest of the user with
// the most go first.
const (
	maxFinishedTasks    = 256
	maxAllFinishedTasks = 4096
)

// task is one query answered with a task.
type task struct {
	id      string
	owner   string // the user who may see it
	scope   string // whose bound it counts against: the user, or on stdio the MCP session
	tool    string
	run     *sessions.Run
	created time.Time
	ttl     time.Duration

	mu        sync.Mutex
	updated   time.Time
	finished  time.Time // zero while running
	status    string    // final status once finished
	message   string    // statusMessage once finished
	result    *mcp.CallToolResult
	rpcErr    *jsonrpc.Error
	cancelled bool // tasks/cancel took the turn down (or asked to)
}

// taskStore holds the tasks of a server.
type taskStore struct {
	ttl time.Duration

	mu    sync.Mutex
	tasks map[string]*task
}

func newTaskStore(ttl time.Duration) *taskStore {
	return &taskStore{ttl: ttl, tasks: map[string]*task{}}
}

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
// (the host is waiting for nothing else). A lone query keeps --task-after, and one
// that ends within it still gets a plain result.
const (
	burstWindow = 3 * time.Second
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
				if err := h.audit.started(ctx, ctr, start); err != nil {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "refused: " + err.Error() + "; nothing was run"}
				}
				res, err := h.callTool(ctx, ctr, next)
				h.audit.call(ctx, ctr, start, res, err)
				if h.dash != nil {
					h.dash.poke("") // the lists show creates, closes and the rest
				}
				return res, err
			}
		}
		return next(ctx, method, req)
	}
}

// callTool runs a tools/call: unknown arguments are refused; a query from
// a client that takes tasks may be answered with one.
func (h *handlers) callTool(ctx context.Context, req *mcp.CallToolRequest, next mcp.MethodHandler) (mcp.Result, error) {
	name := req.Params.Name
	agent := h.agents.has(name)
	params := h.params[name]
	if agent {
		params = agentParams
	}
	if params != nil {
		if _, ok := h.toolAction(name); !ok {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: unclassifiedTool(name).Error()}}, IsError: true}, nil
		}
		if err := checkArgs(params, name, req.Params.Arguments); err != nil {
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

// newTask makes a task of the run r, which the call's handler stopped
// waiting for. The task exists (tasks/get resolves) before the call is
// answered with it; a goroutine collects the result when the turn ends.
func (h *handlers) newTask(ctx context.Context, tool string, r *sessions.Run) *task {
	now := time.Now()
	t := &task{id: uuid.NewString(), owner: userOf(ctx), scope: scopeOf(ctx), tool: tool, run: r, created: now, updated: now, ttl: h.tasks.ttl}
	r.SetOwner("task " + t.id)
	h.hold(r)
	h.tasks.add(t)
	h.log.Info("query continues as a task", "task", t.id, "session_id", r.Session().ID, "tool", tool)
	go func() {
		<-r.Done()
		res, err, ok := r.Collect()
		if !ok {
			t.finish(taskFailed, "the result was collected elsewhere", nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the result was collected elsewhere"})
			return
		}
		t.complete(h, r.Session(), res, err)
		h.audit.taskEnded(t)
	}()
	return t
}

// complete records the end of the turn: completed with exactly the result
// the synchronous call would have returned, cancelled when tasks/cancel (or
// closing the session) took the turn down, failed for a protocol error.
func (t *task) complete(h *handlers, s *sessions.Session, res *sessions.TurnResult, err error) {
	t.mu.Lock()
	cancelled := t.cancelled
	t.mu.Unlock()
	if err == nil && res.Interrupted {
		switch {
		case cancelled:
			t.finish(taskCancelled, "Cancelled; the session is kept and takes the next query.", nil, nil)
			return
		case s.Info().State == sessions.StateClosed:
			t.finish(taskCancelled, "Cancelled: the session was closed.", nil, nil)
			return
		}
	}
	callRes, out, cerr := h.finalResult(s, res, err)
	var rpcErr *jsonrpc.Error
	switch {
	case errors.As(cerr, &rpcErr):
		t.finish(taskFailed, rpcErr.Message, nil, rpcErr)
		return
	case cerr != nil:
		callRes = &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: cerr.Error()}}, IsError: true}
	default:
		callRes.StructuredContent = out
	}
	msg := "Completed."
	if callRes.IsError {
		msg = "Completed with an error: " + textcut.Cut(firstLine(textOf(callRes)), 300)
	}
	t.finish(taskCompleted, msg, callRes, nil)
}

func (t *task) finish(status, message string, res *mcp.CallToolResult, rpcErr *jsonrpc.Error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	t.status, t.message, t.result, t.rpcErr = status, message, res, rpcErr
	t.finished, t.updated = now, now
}

func textOf(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

// taskState is the task object of SEP-2663 as tasks/get returns it
// (resultType "complete") and as the CreateTaskResult of a call (resultType
// "task", without result, error or inputRequests).
type taskState struct {
	mcp.ResultBase
	ResultType    string              `json:"resultType"`
	TaskID        string              `json:"taskId"`
	Status        string              `json:"status"`
	StatusMessage string              `json:"statusMessage,omitempty"`
	CreatedAt     string              `json:"createdAt"`
	LastUpdatedAt string              `json:"lastUpdatedAt"`
	TTLSeconds    int64               `json:"ttlSeconds"`
	PollInterval  int64               `json:"pollIntervalMilliseconds,omitempty"`
	InputRequests mcp.InputRequestMap `json:"inputRequests,omitempty"`
	Result        *mcp.CallToolResult `json:"result,omitempty"`
	Error         *jsonrpc.Error      `json:"error,omitempty"`
}

// state is the task as it is now.
func (t *task) state() *taskState {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := &taskState{ResultType: "complete", TaskID: t.id, CreatedAt: t.created.UTC().Format(time.RFC3339Nano),
		TTLSeconds: int64(t.ttl / time.Second)}
	if !t.finished.IsZero() {
		st.Status, st.StatusMessage, st.Result, st.Error = t.status, t.message, t.result, t.rpcErr
		st.LastUpdatedAt = t.updated.UTC().Format(time.RFC3339Nano)
		return st
	}
	p := t.run.Progress()
	st.PollInterval = pollInterval(p.Elapsed)
	if qs := t.run.Questions(); len(qs) > 0 {
		st.Status = taskInputRequired
		st.InputRequests = mcp.InputRequestMap{}
		for _, q := range qs {
			st.InputRequests[q.ID] = elicitParams(q)
		}
		st.StatusMessage = "Waiting for permission: " + firstLine(permissionMessage(qs[0].PermissionRequest))
	} else {
		st.Status = taskWorking
		st.StatusMessage = progressMessage(p)
		if t.cancelled {
			st.StatusMessage = "Cancelling: " + st.StatusMessage
		}
	}
	// The task changes with every step of the turn.
	t.updated = t.run.Started().Add(p.LastAt)
	if t.updated.Before(t.created) {
		t.updated = t.created
	}
	st.LastUpdatedAt = t.updated.UTC().Format(time.RFC3339Nano)
	return st
}

// createResult is the CreateTaskResult a call is answered with.
func (t *task) createResult() *taskState {
	st := t.state()
	st.ResultType = "task"
	st.InputRequests, st.Result, st.Error = nil, nil, nil
	return st
}

// progressMessage tells a person what a running query is doing: the same
// facts as the progress heartbeat, and the latest step.
func progressMessage(p sessions.Progress) string {
	msg := fmt.Sprintf("Running for %s: %d API turn(s), %d tool call(s) so far.", p.Elapsed.Round(time.Second), p.Turns, p.ToolsUsed)
	if p.LastStep != "" {
		msg += " Latest: " + textcut.Cut(p.LastStep, 200)
	}
	return msg
}

// pollInterval suggests how often to poll: often at first, when most
// turns end, then less.
func pollInterval(elapsed time.Duration) int64 {
	switch {
	case elapsed < 10*time.Second:
		return 500
	case elapsed < time.Minute:
		return 1000
	default:
		return 2000
	}
}

func (ts *taskStore) add(t *task) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.sweepLocked(time.Now())
	ts.tasks[t.id] = t
}

// get returns the task id of user, or nil once it is unknown or expired
// (another user's task is unknown).
func (ts *taskStore) get(id, user string) *task {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.sweepLocked(time.Now())
	if t := ts.tasks[id]; t != nil && t.owner == user {
		return t
	}
	return nil
}

// sweepLocked forgets finished tasks past their TTL (from creation; a task
// that ran longer than its TTL is kept a little — the TTL, at most a minute
// — after it finished, so that its poller sees the result), and the oldest
// finished tasks beyond maxFinishedTasks. Running tasks are kept.
func (ts *taskStore) sweepLocked(now time.Time) {
	finished := map[string][]*task{}
	total := 0
	for id, t := range ts.tasks {
		t.mu.Lock()
		end := t.finished
		t.mu.Unlock()
		if end.IsZero() {
			continue
		}
		if now.After(t.created.Add(t.ttl)) && now.After(end.Add(min(t.ttl, time.Minute))) {
			delete(ts.tasks, id)
			continue
		}
		finished[t.scope] = append(finished[t.scope], t)
		total++
	}
	for scope, list := range finished {
		slices.SortFunc(list, func(a, b *task) int { return a.created.Compare(b.created) })
		if n := len(list) - maxFinishedTasks; n > 0 {
			for _, t := range list[:n] {
				delete(ts.tasks, t.id)
			}
			total -= n
			finished[scope] = list[n:]
		}
	}
	for total > maxAllFinishedTasks {
		most := ""
		for scope, list := range finished {
			if len(list) > len(finished[most]) {
				most = scope
			}
		}
		delete(ts.tasks, finished[most][0].id)
		finished[most] = finished[most][1:]
		total--
	}
}

// runningTask returns the id of the task running in session id, if any.
func (ts *taskStore) runningTask(sessionID string) string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, t := range ts.tasks {
		t.mu.Lock()
		running := t.finished.IsZero()
		t.mu.Unlock()
		if running && t.run.Session().ID == sessionID {
			return t.id
		}
	}
	return ""
}

// Parameters and results of the tasks methods.

type taskParams struct {
	mcp.ParamsBase
	TaskID       string               `json:"taskId"`
	RequestState string               `json:"requestState,omitempty"`
	Responses    mcp.InputResponseMap `json:"inputResponses,omitempty"`
}

type ackResult struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
}

func ack() *ackResult { return &ackResult{ResultType: "complete"} }

// cancelWait bounds how long tasks/cancel waits for the turn to end: the
// interrupt's acknowledgement (2 s) and the stop of a process that gave none.
const cancelWait = 5 * time.Second

// errTasksUndeclared answers a tasks method from a request that does not
// declare the extension (SEP-2663): -32021 with the capability it needs.
func errTasksUndeclared(method string) error {
	caps := &mcp.ClientCapabilities{}
	caps.AddExtension(TasksExtension, nil)
	data, err := json.Marshal(mcp.MissingRequiredClientCapabilityData{RequiredCapabilities: caps})
	if err != nil {
		return err
	}
	return &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: fmt.Sprintf("%s needs the client capability extensions[%q] in the request's _meta", method, TasksExtension), Data: data}
}

// addTaskMethods registers tasks/get, tasks/update and tasks/cancel.
func (h *handlers) addTaskMethods(srv *mcp.Server) error {
	if err := mcp.AddReceivingCustomMethod(srv, "tasks/get", func(ctx context.Context, _ *mcp.ServerSession, p *taskParams) (*taskState, error) {
		if !declaresTasks(p.GetMeta()) {
			return nil, errTasksUndeclared("tasks/get")
		}
		t := h.tasks.get(p.TaskID, userOf(ctx))
		if t == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("Failed to retrieve task: task %q not found (unknown, or expired after its ttlSeconds)", p.TaskID)}
		}
		return t.state(), nil
	}); err != nil {
		return err
	}
	if err := mcp.AddReceivingCustomMethod(srv, "tasks/update", func(ctx context.Context, _ *mcp.ServerSession, p *taskParams) (*ackResult, error) {
		if !declaresTasks(p.GetMeta()) {
			return nil, errTasksUndeclared("tasks/update")
		}
		if t := h.tasks.get(p.TaskID, userOf(ctx)); t != nil {
			for key, resp := range p.Responses {
				answer(t.run, key, resp) // unknown or answered keys are ignored
			}
		}
		return ack(), nil
	}); err != nil {
		return err
	}
	return mcp.AddReceivingCustomMethod(srv, "tasks/cancel", func(ctx context.Context, _ *mcp.ServerSession, p *taskParams) (*ackResult, error) {
		if !declaresTasks(p.GetMeta()) {
			return nil, errTasksUndeclared("tasks/cancel")
		}
		if t := h.tasks.get(p.TaskID, userOf(ctx)); t != nil {
			t.mu.Lock()
			running := t.finished.IsZero()
			if running {
				t.cancelled = true
			}
			t.mu.Unlock()
			if running {
				h.log.Info("task cancelled by the client; interrupting its turn", "task", t.id)
				t.run.Cancel()
				// Answer once the cancel took effect: the turn has ended
				// (the interrupt escalates within seconds when claude does
				// not acknowledge it), so tasks/get says cancelled and the
				// session takes the next query.
				wait := time.NewTimer(cancelWait)
				select {
				case <-t.run.Done():
				case <-ctx.Done():
				case <-wait.C:
				}
				wait.Stop()
			}
		}
		return ack(), nil
	})
}

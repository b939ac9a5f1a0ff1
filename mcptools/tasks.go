package mcptools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/textcut"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/resulttext"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
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
	done    chan struct{} // closed by finish: the task has its final state (nil in some tests)

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

// newTask makes a task of the run r, which the call's handler stopped
// waiting for. The task exists (tasks/get resolves) before the call is
// answered with it; a goroutine collects the result when the turn ends.
func (h *handlers) newTask(ctx context.Context, tool string, r *sessions.Run) *task {
	now := time.Now()
	t := &task{id: uuid.NewString(), owner: userOf(ctx), scope: scopeOf(ctx), tool: tool, run: r, created: now, updated: now, ttl: h.tasks.ttl, done: make(chan struct{})}
	r.SetOwner("task " + t.id)
	h.tasks.add(t)
	h.log.Info("query continues as a task", "task", t.id, "session_id", r.Session().ID, "tool", tool)
	go func() {
		<-r.Done()
		res, err, ok := r.Collect()
		if !ok {
			t.finish(taskFailed, "the result was collected elsewhere", nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the result was collected elsewhere"})
			return
		}
		var follow *turn.Result
		if err == nil && res.FollowUp {
			follow = awaitFollowUp(r.Session()) // it ends the task
		}
		t.complete(h, r.Session(), res, err, follow)
		auditTaskEnded(h.audit, t)
	}()
	return t
}

// complete records the end of the turn: completed with exactly the result
// the synchronous call would have returned, cancelled when tasks/cancel (or
// closing the session) took the turn down, failed for a protocol error.
func (t *task) complete(h *handlers, s *sessions.Session, res *turn.Result, err error, follow *turn.Result) {
	t.mu.Lock()
	cancelled := t.cancelled
	t.mu.Unlock()
	if err == nil && res.Interrupted {
		switch {
		case cancelled:
			t.finish(taskCancelled, "Cancelled; the session is kept and takes the next query.", nil, nil)
			return
		case s.Info().State == state.Closed:
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
		if follow != nil {
			out.FollowUp = followUpOf(follow)
			callRes.Content = []mcp.Content{&mcp.TextContent{Text: resulttext.Result(s.ID, res) + followUpText(s.ID, follow)}}
		}
		callRes.StructuredContent = out
	}
	msg := "Completed."
	if callRes.IsError {
		msg = "Completed with an error: " + textcut.Cut(resulttext.FirstLine(resulttext.OfTool(callRes)), 300)
	}
	t.finish(taskCompleted, msg, callRes, nil)
}

func (t *task) finish(status, message string, res *mcp.CallToolResult, rpcErr *jsonrpc.Error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	first := t.finished.IsZero()
	t.status, t.message, t.result, t.rpcErr = status, message, res, rpcErr
	t.finished, t.updated = now, now
	if first && t.done != nil {
		close(t.done)
	}
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
		st.StatusMessage = "Waiting for permission: " + resulttext.FirstLine(resulttext.Permission(qs[0].PermissionRequest))
		if asked, ok := questionsOf(qs[0].PermissionRequest); ok {
			st.StatusMessage = "Waiting for an answer: " + asked[0].Question
		}
	} else {
		st.Status = taskWorking
		st.StatusMessage = resulttext.Progress(p)
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
		h.bursts.end(scopeOf(ctx)) // the model acted: what follows is no fan-out
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
		h.bursts.end(scopeOf(ctx)) // the model acted: what follows is no fan-out
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
				case <-t.done: // the task's final state, not only the run's end
				case <-ctx.Done():
				case <-wait.C:
				}
				wait.Stop()
			}
		}
		return ack(), nil
	})
}

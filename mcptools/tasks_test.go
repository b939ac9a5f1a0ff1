package mcptools

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// taskOpts answers with a task after 100 ms, so that a SLOW3 turn (about a
// second with the fake CLI) becomes one and a plain turn does not.
var taskOpts = Options{TaskAfter: 100 * time.Millisecond}

// pollTask polls tasks/get until the task's status is want (or a terminal
// status), and returns the last state.
// asking is a task that asks: its session, its id, the input request's
// key and the request, and the task's status then.
type asking struct {
	sid, id, key string
	req, status  map[string]any
}

// taskAsking starts a new session's query of prompt as a task and waits
// for it to ask (input_required with one input request).
func (c *rawClient) taskAsking(prompt string) asking {
	c.t.Helper()
	a := asking{sid: c.create(map[string]any{})}
	res := c.tool("claude_chat_query", map[string]any{"sessionId": a.sid, "prompt": prompt})
	if res["resultType"] != "task" {
		c.t.Fatalf("a query that asks (%s): %v", prompt, res)
	}
	a.id = res["taskId"].(string)
	a.status = c.pollTask(a.id, taskInputRequired)
	reqs, _ := a.status["inputRequests"].(map[string]any)
	if len(reqs) != 1 {
		c.t.Fatalf("inputRequests = %v", a.status["inputRequests"])
	}
	for k, v := range reqs {
		a.key, a.req = k, v.(map[string]any)
	}
	return a
}

func (c *rawClient) pollTask(id string, want ...string) map[string]any {
	c.t.Helper()
	var st map[string]any
	testkit.Until(c.t, 30*time.Second, fmt.Sprintf("task %s to be %v", id, want), func() bool {
		st = c.result(c.call("tasks/get", map[string]any{"taskId": id}))
		status, _ := st["status"].(string)
		if slices.Contains(want, status) {
			return true
		}
		if status == taskCompleted || status == taskFailed || status == taskCancelled {
			c.t.Fatalf("task %s ended %s, want %v: %v", id, status, want, st)
		}
		iv, _ := st["pollIntervalMilliseconds"].(float64)
		if iv <= 0 || iv > 5000 {
			c.t.Fatalf("pollIntervalMilliseconds = %v", st["pollIntervalMilliseconds"])
		}
		return false
	})
	return st
}

// TestTasksMethodsNeedTheExtension: tasks/get, tasks/update and
// tasks/cancel from a request that does not declare the extension fail with
// -32021 and name the capability (SEP-2663), even for a task that exists.
func TestTasksMethodsNeedTheExtension(t *testing.T) {
	t.Parallel()
	c := newRawClient(t, "2026-07-28", tasksCaps, sessions.Config{}, taskOpts)
	res := c.tool("claude_direct_query", map[string]any{"prompt": "SLOW3", "cwd": t.TempDir()})
	id, _ := res["taskId"].(string)
	if id == "" {
		t.Fatalf("no task: %v", res)
	}
	c.caps = map[string]any{} // the next requests do not declare it
	for _, method := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		m := c.call(method, map[string]any{"taskId": id})
		if m.Error == nil || m.Error.Code != -32021 || !strings.Contains(string(m.Error.Data), TasksExtension) {
			t.Errorf("%s without the extension: %+v", method, m.Error)
		}
	}
	c.caps = tasksCaps
	if st := c.pollTask(id, "completed"); st["status"] != "completed" {
		t.Errorf("the task after the refused cancel: %v", st)
	}
}

func (c *rawClient) create(args map[string]any) string {
	c.t.Helper()
	res := c.tool("claude_session_create", args)
	sid, _ := structured(res)["sessionId"].(string)
	if sid == "" {
		c.t.Fatalf("create: %v", res)
	}
	return sid
}

// TestTasksDiscover: the extension is declared on 2026-07-28 only.
func TestTasksDiscover(t *testing.T) {
	t.Parallel()
	c := newRawClient(t, "2026-07-28", tasksCaps, sessions.Config{}, taskOpts)
	res := c.result(c.hello)
	if ext, _ := res["capabilities"].(map[string]any)["extensions"].(map[string]any); ext[TasksExtension] == nil {
		t.Errorf("server/discover capabilities lack the tasks extension: %v", res["capabilities"])
	}
	old := newRawClient(t, "2025-11-25", map[string]any{}, sessions.Config{}, taskOpts)
	res = old.result(old.hello)
	if strings.Contains(fmt.Sprint(res["capabilities"]), TasksExtension) {
		t.Errorf("a 2025-11-25 client sees the tasks extension: %v", res["capabilities"])
	}
	off := newRawClient(t, "2026-07-28", tasksCaps, sessions.Config{}, Options{NoTasks: true})
	res = off.result(off.hello)
	if strings.Contains(fmt.Sprint(res["capabilities"]), TasksExtension) {
		t.Errorf("--tasks=false still declares the extension: %v", res["capabilities"])
	}
}

// TestTaskCompleted: a long direct query becomes a task once its grace is
// over, before its turn ends; tasks/get reports working with what happens
// now, then completed with exactly the result the synchronous call
// returns. No clock bounds the call from above (a 900 ms bound can fail
// under -race on a loaded machine): a task that is working when created
// came before the turn's end, and the call waited at least the grace.
func TestTaskCompleted(t *testing.T) {
	t.Parallel()
	c := newRawClient(t, "2026-07-28", tasksCaps, sessions.Config{}, taskOpts)
	start := time.Now()
	res := c.tool("claude_direct_query", map[string]any{"prompt": "SLOW3"})
	if d := time.Since(start); d < taskOpts.TaskAfter {
		t.Errorf("the task came after %s, before the grace of %s", d, taskOpts.TaskAfter)
	}
	if res["resultType"] != "task" || res["status"] != taskWorking || res["result"] != nil || res["inputRequests"] != nil {
		t.Fatalf("CreateTaskResult = %v", res)
	}
	id, _ := res["taskId"].(string)
	t.Logf("CreateTaskResult: %v", res)
	for _, k := range []string{"createdAt", "lastUpdatedAt", "ttlSeconds", "pollIntervalMilliseconds"} {
		if res[k] == nil {
			t.Errorf("CreateTaskResult lacks %s: %v", k, res)
		}
	}
	if res["ttlSeconds"] != float64(3600) {
		t.Errorf("ttlSeconds = %v, want the default hour", res["ttlSeconds"])
	}
	st := c.result(c.call("tasks/get", map[string]any{"taskId": id}))
	if st["resultType"] != "complete" || st["status"] != taskWorking {
		t.Errorf("tasks/get while running = %v", st)
	}
	if msg, _ := st["statusMessage"].(string); !strings.HasPrefix(msg, "Running for ") || !strings.Contains(msg, "API turn(s)") || !strings.Contains(msg, "tool call(s)") {
		t.Errorf("statusMessage = %q", msg)
	}
	st = c.pollTask(id, taskCompleted)
	result, _ := st["result"].(map[string]any)
	sc := structured(result)
	if sc["finalText"] != "chunk0 chunk1 chunk2 " || sc["status"] != "completed" || result["isError"] == true {
		t.Fatalf("completed task result = %v", result)
	}
	// The same query without tasks returns the same result.
	plain := newRawClient(t, "2026-07-28", map[string]any{}, sessions.Config{}, taskOpts)
	want := plain.tool("claude_direct_query", map[string]any{"prompt": "SLOW3"})
	if want["resultType"] == "task" {
		t.Fatalf("a request without the extension got a task: %v", want)
	}
	if !sameShape(result, want) {
		t.Errorf("task result and synchronous result differ:\n task %v\n sync %v", result, want)
	}
	// The temporary session is gone with the collected result.
	if n := c.mgr.Count(); n != 0 {
		t.Errorf("%d sessions left after the direct query's task completed", n)
	}
}

// sameShape compares two CallToolResults, ignoring what differs from run to
// run (ids, durations, text naming ids).
func sameShape(a, b map[string]any) bool {
	norm := func(m map[string]any) string {
		sc := structured(m)
		return fmt.Sprint(sc["finalText"], sc["status"], sc["interrupted"], m["isError"], len(m["content"].([]any)))
	}
	return norm(a) == norm(b)
}

// TestTaskNotForEveryone: a turn that ends within the grace, a client
// without the extension and a 2025-11-25 client get plain results.
func TestTaskNotForEveryone(t *testing.T) {
	t.Parallel()
	c := newRawClient(t, "2026-07-28", tasksCaps, sessions.Config{}, Options{TaskAfter: 5 * time.Second})
	if res := c.tool("claude_direct_query", map[string]any{"prompt": "hi"}); res["resultType"] == "task" || structured(res)["finalText"] != "Hello from fake API (n_messages=1)" {
		t.Errorf("a quick turn: %v", res)
	}
	noExt := newRawClient(t, "2026-07-28", map[string]any{"elicitation": map[string]any{}}, sessions.Config{}, taskOpts)
	if res := noExt.tool("claude_direct_query", map[string]any{"prompt": "SLOW3"}); res["resultType"] == "task" || structured(res)["status"] != "completed" {
		t.Errorf("a client without the extension: %v", res)
	}
	old := newRawClient(t, "2025-11-25", tasksCaps, sessions.Config{}, taskOpts)
	if res := old.tool("claude_direct_query", map[string]any{"prompt": "SLOW3"}); res["resultType"] == "task" || structured(res)["status"] != "completed" {
		t.Errorf("a 2025-11-25 client: %v", res)
	}
}

// TestTaskInputRequired: a permission question inside a task is
// input_required with the elicitation form; tasks/update answers it
// (unknown and repeated keys are ignored) and the task completes.
func TestTaskInputRequired(t *testing.T) {
	t.Parallel()
	c := newRawClient(t, "2026-07-28", tasksCaps, sessions.Config{}, taskOpts)
	a := c.taskAsking("TOOL_BASH[touch made_by_tool.txt && echo hi]")
	id, key, req, st, sid := a.id, a.key, a.req, a.status, a.sid
	params, _ := req["params"].(map[string]any)
	if req["method"] != "elicitation/create" || params["mode"] != "form" || !strings.Contains(fmt.Sprint(params["message"]), "Claude Code wants to use Bash") ||
		!strings.Contains(fmt.Sprint(params["requestedSchema"]), "allow_session") {
		t.Fatalf("input request = %v", req)
	}
	if msg, _ := st["statusMessage"].(string); !strings.Contains(msg, "Waiting for permission") {
		t.Errorf("statusMessage = %q", msg)
	}
	if list := c.tool("claude_session_list", map[string]any{"sessionId": sid}); !strings.Contains(fmt.Sprint(structured(list)["sessions"]), id) {
		t.Errorf("claude_session_list does not show the running task: %v", structured(list))
	}
	if res := c.tool("claude_chat_wait", map[string]any{"sessionId": sid}); res["isError"] != true || !strings.Contains(fmt.Sprint(res["content"]), "tasks/get") {
		t.Errorf("claude_chat_wait on a task's query: %v", res)
	}
	// An unknown key and an unknown task are acknowledged and ignored.
	c.result(c.call("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{"nope": map[string]any{"action": "accept", "content": map[string]any{"decision": "deny"}}}}))
	c.result(c.call("tasks/update", map[string]any{"taskId": "unknown", "inputResponses": map[string]any{}}))
	if st := c.pollTask(id, taskInputRequired); len(st["inputRequests"].(map[string]any)) != 1 {
		t.Fatalf("an unknown key changed the question: %v", st)
	}
	allow := map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"decision": "allow_once"}}}
	if ack := c.result(c.call("tasks/update", map[string]any{"taskId": id, "inputResponses": allow})); ack["resultType"] != "complete" {
		t.Errorf("tasks/update ack = %v", ack)
	}
	c.result(c.call("tasks/update", map[string]any{"taskId": id, "inputResponses": allow})) // answered already: ignored
	st = c.pollTask(id, taskCompleted)
	sc := structured(st["result"].(map[string]any))
	inv, _ := sc["toolInvocations"].([]any)
	if len(inv) != 1 || inv[0].(map[string]any)["output"] != "hi" || inv[0].(map[string]any)["isError"] == true {
		t.Errorf("after allowing: %v", sc)
	}
}

// TestTaskPermissionTimeout: a question nobody answers gets the policy.
func TestTaskPermissionTimeout(t *testing.T) {
	t.Parallel()
	c := newRawClient(t, "2026-07-28", tasksCaps, sessions.Config{PermissionTimeout: 300 * time.Millisecond}, taskOpts)
	res := c.tool("claude_direct_query", map[string]any{"prompt": "TOOL_BASH[touch made_by_tool.txt && echo hi]"})
	st := c.pollTask(res["taskId"].(string), taskCompleted)
	sc := structured(st["result"].(map[string]any))
	if d, _ := sc["metadata"].(map[string]any)["permissionDenials"].([]any); len(d) != 1 {
		t.Errorf("an unanswered question was not denied by the policy: %v", sc)
	}
}

// TestTaskCancel: tasks/cancel interrupts the turn and answers once the
// task is cancelled; the session survives; unknown ids and repeats are
// acknowledged.
func TestTaskCancel(t *testing.T) {
	t.Parallel()
	c := newRawClient(t, "2026-07-28", tasksCaps, sessions.Config{}, taskOpts)
	sid := c.create(map[string]any{})
	res := c.tool("claude_chat_query", map[string]any{"sessionId": sid, "prompt": "SLOW"})
	id := res["taskId"].(string)
	c.result(c.call("tasks/cancel", map[string]any{"taskId": id}))
	c.result(c.call("tasks/cancel", map[string]any{"taskId": id})) // the host sends it twice
	if ack := c.result(c.call("tasks/cancel", map[string]any{"taskId": "no-such-task"})); ack["resultType"] != "complete" {
		t.Errorf("cancel of an unknown task = %v", ack)
	}
	// The cancel was answered once it took effect: no polling needed.
	st := c.result(c.call("tasks/get", map[string]any{"taskId": id}))
	if st["status"] != taskCancelled || st["result"] != nil || !strings.Contains(fmt.Sprint(st["statusMessage"]), "session is kept") {
		t.Errorf("cancelled task = %v", st)
	}
	// The session takes the next query.
	if res := c.tool("claude_chat_query", map[string]any{"sessionId": sid, "prompt": "hi"}); res["resultType"] == "task" && res["status"] != taskWorking {
		t.Fatalf("query after the cancel: %v", res)
	} else if res["resultType"] == "task" {
		c.pollTask(res["taskId"].(string), taskCompleted)
	}
}

// TestTaskSessionClosed: closing a session cancels its task.
func TestTaskSessionClosed(t *testing.T) {
	t.Parallel()
	c := newRawClient(t, "2026-07-28", tasksCaps, sessions.Config{}, taskOpts)
	sid := c.create(map[string]any{})
	res := c.tool("claude_chat_query", map[string]any{"sessionId": sid, "prompt": "SLOW"})
	c.tool("claude_session_close", map[string]any{"sessionId": sid})
	st := c.pollTask(res["taskId"].(string), taskCancelled)
	if !strings.Contains(fmt.Sprint(st["statusMessage"]), "session was closed") {
		t.Errorf("task of a closed session = %v", st)
	}
}

// TestTaskTTL: a finished task is forgotten after its TTL; tasks/get then
// answers -32602.
func TestTaskTTL(t *testing.T) {
	t.Parallel()
	c := newRawClient(t, "2026-07-28", tasksCaps, sessions.Config{}, Options{TaskAfter: 100 * time.Millisecond, TaskTTL: 2 * time.Second})
	res := c.tool("claude_direct_query", map[string]any{"prompt": "SLOW3"})
	id := res["taskId"].(string)
	if res["ttlSeconds"] != float64(2) {
		t.Errorf("ttlSeconds = %v", res["ttlSeconds"])
	}
	c.pollTask(id, taskCompleted)
	testkit.Until(t, 10*time.Second, "the task to be forgotten (its TTL is 2 s)", func() bool {
		m := c.call("tasks/get", map[string]any{"taskId": id})
		if m.Error == nil {
			return false
		}
		if m.Error.Code != jsonrpc.CodeInvalidParams || !strings.Contains(m.Error.Message, "not found") {
			t.Errorf("tasks/get after the TTL: %d %s", m.Error.Code, m.Error.Message)
		}
		return true
	})
	if m := c.call("tasks/get", map[string]any{"taskId": "never-was"}); m.Error == nil || m.Error.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("tasks/get of an unknown task: %+v", m)
	}
}

// TestTaskFailed: a protocol-level error ends a task failed with the error.
func TestTaskFailed(t *testing.T) {
	t.Parallel()
	h := &handlers{opts: Options{MaxResultChars: 100}}
	tk := &task{id: "t", created: time.Now(), ttl: time.Hour}
	tk.complete(h, nil, nil, fmt.Errorf("%w: boom", sessions.ErrBusy), nil)
	st := tk.state()
	var rpcErr *jsonrpc.Error
	if st.Status != taskFailed || st.Error == nil || st.Result != nil || !errors.As(error(st.Error), &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams {
		b, _ := json.Marshal(st)
		t.Errorf("failed task = %s", b)
	}
}

package mcptools

import (
	"strings"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// running waits until the session's query runs and its progress passes
// ready.
func running(t *testing.T, mgr *sessions.Manager, sid string, ready func(p runProgress) bool) {
	t.Helper()
	s, err := mgr.Get(sid)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Until(t, 10*time.Second, "the query to run", func() bool {
		r := s.CurrentRun()
		return r != nil && ready(runProgress{tools: r.Progress().ToolsUsed})
	})
}

type runProgress struct{ tools int }

// queryAsync runs claude_chat_query in the background.
func (f *fakeServer) queryAsync(t *testing.T, args map[string]any) <-chan map[string]any {
	done := make(chan map[string]any, 1)
	go func() {
		res, out := f.call(t, "claude_chat_query", args, nil)
		if res.IsError {
			t.Errorf("query: %s", resText(res))
		}
		out["text"] = resText(res)
		done <- out
	}()
	return done
}

// TestSteerFoldedMCP: claude_chat_steer during a tool call answers at
// once, and the query returns its one result, without a follow-up.
func TestSteerFoldedMCP(t *testing.T) {
	t.Parallel()
	f := newFakeServer(t, "2025-11-25", sessions.Config{}, Options{})
	_, out := f.call(t, "claude_session_create", map[string]any{"cwd": t.TempDir(), "permissionMode": "bypassPermissions"}, nil)
	sid := out["sessionId"].(string)
	done := f.queryAsync(t, map[string]any{"sessionId": sid, "prompt": "TOOL_BASH[sleep 1; echo slept]"})
	running(t, f.mgr, sid, func(p runProgress) bool { return p.tools > 0 })
	res, sout := f.call(t, "claude_chat_steer", map[string]any{"sessionId": sid, "message": "also say hi"}, nil)
	if res.IsError || sout["sent"] != true || !strings.Contains(resText(res), "claude_chat_wait") {
		t.Fatalf("steer: %s %v", resText(res), sout)
	}
	q := <-done
	if q["finalText"] != "Tool said: slept" || q["followUp"] != nil {
		t.Errorf("the query's result %v", q)
	}
}

// TestSteerFollowUpMCP: a message steered while the answer streams is
// answered in a turn of its own: the query's result says followUp
// running, claude_chat_wait returns the follow-up's answer, and the next
// query gets its own. claude_session_list says what the session does.
func TestSteerFollowUpMCP(t *testing.T) {
	t.Parallel()
	f := newFakeServer(t, "2025-11-25", sessions.Config{}, Options{})
	_, out := f.call(t, "claude_session_create", map[string]any{"cwd": t.TempDir(), "name": "writer"}, nil)
	sid := out["sessionId"].(string)
	done := f.queryAsync(t, map[string]any{"sessionId": sid, "prompt": "SLOW6"})
	running(t, f.mgr, sid, func(runProgress) bool { return true })
	list, _ := f.call(t, "claude_session_list", map[string]any{}, nil)
	if text := resText(list); !strings.Contains(text, `"writer" (`+sid+`): running for `) {
		t.Errorf("the list does not say what the session does:\n%s", text)
	}
	if res, _ := f.call(t, "claude_chat_steer", map[string]any{"sessionId": sid, "message": "STEERED also say hi"}, nil); res.IsError {
		t.Fatalf("steer: %s", resText(res))
	}
	q := <-done
	fu, _ := q["followUp"].(map[string]any)
	if q["finalText"] != "chunk0 chunk1 chunk2 chunk3 chunk4 chunk5 " || fu["status"] != "running" || !strings.Contains(q["text"].(string), "claude_chat_wait") {
		t.Fatalf("the query's result %v", q)
	}
	res, w := f.call(t, "claude_chat_wait", map[string]any{"sessionId": sid}, nil)
	if res.IsError || w["finalText"] != "Hello from fake API (n_messages=1)" || w["status"] != "completed" {
		t.Errorf("claude_chat_wait: %s %v", resText(res), w)
	}
	res, next := f.call(t, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "hi"}, nil)
	if res.IsError || next["finalText"] != "Hello from fake API (n_messages=1)" || next["followUp"] != nil {
		t.Errorf("the next query: %s %v", resText(res), next)
	}
}

// TestSteerRefusedMCP: an idle session refuses a message, naming
// claude_chat_query; another user's session is not found; a message too
// large is refused.
func TestSteerRefusedMCP(t *testing.T) {
	t.Parallel()
	f := newFakeServer(t, "2025-11-25", sessions.Config{}, Options{MaxPromptBytes: 100})
	_, out := f.call(t, "claude_session_create", map[string]any{"cwd": t.TempDir()}, nil)
	sid := out["sessionId"].(string)
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"sessionId": sid, "message": "hi"}, "claude_chat_query"},
		{map[string]any{"sessionId": sid, "message": strings.Repeat("x", 101)}, "message is too large"},
		{map[string]any{"sessionId": "nope", "message": "hi"}, "no open session has id"},
	} {
		res, _ := f.call(t, "claude_chat_steer", tc.args, nil)
		if !res.IsError || !strings.Contains(resText(res), tc.want) {
			t.Errorf("%v: %s (isError %v), want %q", tc.args["sessionId"], resText(res), res.IsError, tc.want)
		}
	}
}

// TestSteerTask: a query running as a task that is steered into a
// follow-up ends with the follow-up: its result carries the query's
// answer and the follow-up's.
func TestSteerTask(t *testing.T) {
	t.Parallel()
	c := newRawClient(t, "2026-07-28", tasksCaps, sessions.Config{}, taskOpts)
	create := c.tool("claude_session_create", map[string]any{"cwd": t.TempDir()})
	sid, _ := structured(create)["sessionId"].(string)
	res := c.tool("claude_chat_query", map[string]any{"sessionId": sid, "prompt": "SLOW6"})
	id, _ := res["taskId"].(string)
	if res["resultType"] != "task" || id == "" {
		t.Fatalf("not a task: %v", res)
	}
	if steer := c.tool("claude_chat_steer", map[string]any{"sessionId": sid, "message": "STEERED also say hi"}); steer["isError"] == true {
		t.Fatalf("steer: %v", steer)
	}
	st := c.pollTask(id, taskCompleted)
	result, _ := st["result"].(map[string]any)
	sc := structured(result)
	fu, _ := sc["followUp"].(map[string]any)
	if sc["finalText"] != "chunk0 chunk1 chunk2 chunk3 chunk4 chunk5 " || fu["status"] != "completed" || fu["finalText"] != "Hello from fake API (n_messages=1)" {
		t.Fatalf("the task's result: %v", sc)
	}
	var text strings.Builder
	for _, c := range result["content"].([]any) {
		text.WriteString(c.(map[string]any)["text"].(string))
	}
	if !strings.Contains(text.String(), "answered in a turn of its own:\n\nHello from fake API") {
		t.Errorf("the task's text: %s", text.String())
	}
}

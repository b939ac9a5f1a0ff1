package mcptools

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakecli"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// The fake CLI's LIMIT[…] replays a turn refused by the usage limit
// (usage_limit capture), LIMITWARN one with a warning; FAKE_CLAUDE_RESETS_IN
// puts their reset an hour from now.
var limitEnv = map[string]string{fakecli.EnvResetsIn: "1h"}

// checkReset checks that v is an RFC 3339 time about an hour from now
// (a whole second) and returns it.
func checkReset(t *testing.T, what string, v any) string {
	t.Helper()
	s, _ := v.(string)
	at, err := time.Parse(time.RFC3339, s)
	if err != nil || at.Before(time.Now().Add(59*time.Minute)) || at.After(time.Now().Add(61*time.Minute)) {
		t.Errorf("%s limitedUntil = %v, want RFC 3339 an hour from now", what, v)
	}
	return s
}

// TestUsageLimitViews: a query the usage limit ended (onUsageLimit fail)
// says until when, in its structured result and its text; so does the
// session list; a query on the limited session waits (status running with
// the reset, after waitSeconds), and claude_chat_interrupt ends the wait.
func TestUsageLimitViews(t *testing.T) {
	t.Parallel()
	f := newFakeServer(t, "2025-11-25", sessions.Config{Env: limitEnv}, Options{})
	_, out := f.call(t, "claude_session_create", map[string]any{"cwd": t.TempDir()}, nil)
	sid := out["sessionId"].(string)

	res, out := f.call(t, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "LIMIT[600] hi", "onUsageLimit": "fail"}, nil)
	until := checkReset(t, "the result's", out["limitedUntil"])
	if text := resText(res); !res.IsError || !strings.Contains(text, "limited until "+until+" (in ") || !strings.Contains(text, "onUsageLimit fail") ||
		!strings.Contains(fmt.Sprint(out["error"]), "limited until "+until) {
		t.Errorf("result: %v\n%s", out, text)
	}

	res, out = f.call(t, "claude_session_list", map[string]any{}, nil)
	ss, _ := out["sessions"].([]any)
	if len(ss) != 1 || ss[0].(map[string]any)["limitedUntil"] != until || !strings.Contains(resText(res), "limited until "+until) {
		t.Errorf("list: %v\n%s", out, resText(res))
	}

	res, out = f.call(t, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "again", "waitSeconds": 1}, mcp.Meta{"progressToken": "p1"})
	if out["status"] != "running" || out["limitedUntil"] != until || !strings.Contains(resText(res), "Waiting for the usage limit to reset: limited until "+until) {
		t.Errorf("a query on the limited session: %v\n%s", out, resText(res))
	}
	if _, out = f.call(t, "claude_chat_interrupt", map[string]any{"sessionId": sid}, nil); out["interrupted"] != true {
		t.Errorf("interrupt: %v", out)
	}
	res, out = f.call(t, "claude_chat_wait", map[string]any{"sessionId": sid}, nil)
	if out["interrupted"] != true || out["limitedUntil"] != until || !strings.Contains(resText(res), "The usage limit had stopped it: limited until "+until) {
		t.Errorf("the interrupted query: %v\n%s", out, resText(res))
	}
	f.waitEvents(t, "progress:limited until "+until, "log:warning")
}

// TestUsageLimitWarningViews: the CLI's warning is a note in the result
// and the list; the query is not held up.
func TestUsageLimitWarningViews(t *testing.T) {
	t.Parallel()
	f := newFakeServer(t, "2025-11-25", sessions.Config{Env: limitEnv}, Options{})
	res, out := f.call(t, "claude_direct_query", map[string]any{"prompt": "LIMITWARN hi", "cwd": t.TempDir()}, nil)
	const want = "usage limit warning: 90% of the 5-hour limit used; it resets at "
	if res.IsError || out["finalText"] == "" || !strings.HasPrefix(fmt.Sprint(out["limitNote"]), want) ||
		!strings.Contains(resText(res), "Note: "+want) || out["limitedUntil"] != nil {
		t.Errorf("result: %v\n%s", out, resText(res))
	}
	_, out = f.call(t, "claude_session_create", map[string]any{"cwd": t.TempDir()}, nil)
	sid := out["sessionId"].(string)
	f.call(t, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "LIMITWARN hi"}, nil)
	res, out = f.call(t, "claude_session_list", map[string]any{"sessionId": sid}, nil)
	if ss, _ := out["sessions"].([]any); len(ss) != 1 || !strings.HasPrefix(fmt.Sprint(ss[0].(map[string]any)["limitNote"]), want) ||
		!strings.Contains(resText(res), "note: "+want) {
		t.Errorf("list: %v\n%s", out, resText(res))
	}
}

// TestUsageLimitOption: onUsageLimit takes wait or fail, in both query
// tools.
func TestUsageLimitOption(t *testing.T) {
	t.Parallel()
	f := newFakeServer(t, "2025-11-25", sessions.Config{}, Options{})
	_, out := f.call(t, "claude_session_create", map[string]any{"cwd": t.TempDir()}, nil)
	sid := out["sessionId"].(string)
	res, _ := f.call(t, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "hi", "onUsageLimit": "later"}, nil)
	if !res.IsError || !strings.Contains(resText(res), "onUsageLimit") {
		t.Errorf("chat query with onUsageLimit later: %s", resText(res))
	}
	res, _ = f.call(t, "claude_direct_query", map[string]any{"prompt": "hi", "onUsageLimit": "later"}, nil)
	if !res.IsError || !strings.Contains(resText(res), "onUsageLimit") || f.mgr.Count() != 1 {
		t.Errorf("direct query with onUsageLimit later: %s (sessions %d)", resText(res), f.mgr.Count())
	}
	if res, out := f.call(t, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "hi", "onUsageLimit": "wait"}, nil); res.IsError || out["finalText"] == "" {
		t.Errorf("onUsageLimit wait: %s", resText(res))
	}
}

// TestUsageLimitTask: a task whose query waits for the reset says so in its
// status message; tasks/cancel ends the wait.
func TestUsageLimitTask(t *testing.T) {
	t.Parallel()
	c := newRawClient(t, "2026-07-28", tasksCaps, sessions.Config{Env: limitEnv}, taskOpts)
	sid := c.create(map[string]any{})
	res := c.tool("claude_chat_query", map[string]any{"sessionId": sid, "prompt": "LIMIT[600] hi"})
	id, _ := res["taskId"].(string)
	if id == "" {
		t.Fatalf("no task: %v", res)
	}
	var st map[string]any
	testkit.Until(t, 30*time.Second, "the task's status message to say it waits for the reset", func() bool {
		st = c.result(c.call("tasks/get", map[string]any{"taskId": id}))
		msg, _ := st["statusMessage"].(string)
		return strings.HasPrefix(msg, "Waiting for the usage limit to reset: limited until ")
	})
	if msg, _ := st["statusMessage"].(string); st["status"] != taskWorking || !strings.Contains(msg, "limited until ") || !strings.Contains(msg, "the 5-hour limit") {
		t.Fatalf("task while waiting: %v", st)
	}
	c.result(c.call("tasks/cancel", map[string]any{"taskId": id}))
	if st = c.result(c.call("tasks/get", map[string]any{"taskId": id})); st["status"] != taskCancelled {
		t.Errorf("cancelled task = %v", st)
	}
}

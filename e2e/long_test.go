package e2e_test

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestE2ELongRunning: with the real CLI, a slow turn with waitSeconds
// returns running, claude_chat_wait returns the final text exactly once,
// heartbeats arrive while it runs, and list and history show the session.
func TestE2ELongRunning(t *testing.T) {
	t.Parallel()
	e := startE2E(t, e2eOptions{protocol: "2025-11-25", args: []string{"--heartbeat-interval", "500ms"}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, out := e.call(t, ctx, "claude_session_create", map[string]any{"cwd": e.cwd}, nil)
	sid := out["sessionId"].(string)

	res, out := e.call(t, ctx, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "SLOW8", "waitSeconds": 1}, "hb")
	if out["status"] != "running" {
		t.Fatalf("status = %v: %s", out["status"], text(res))
	}
	_, out = e.call(t, ctx, "claude_session_list", map[string]any{"sessionId": sid}, nil)
	if st := out["sessions"].([]any)[0].(map[string]any)["state"]; st != "running" {
		t.Errorf("list state while running = %v", st)
	}
	res, out = e.call(t, ctx, "claude_chat_wait", map[string]any{"sessionId": sid}, "hb2")
	ft, _ := out["finalText"].(string)
	if res.IsError || out["status"] != "completed" || !strings.Contains(ft, "chunk7") {
		t.Fatalf("wait: %v %s", out, text(res))
	}
	if !strings.Contains(text(res), out["claudeSessionId"].(string)) {
		t.Errorf("claudeSessionId missing from the text")
	}
	res, _ = e.call(t, ctx, "claude_chat_wait", map[string]any{"sessionId": sid}, nil)
	if !res.IsError {
		t.Errorf("the result was returned twice: %s", text(res))
	}
	beats := 0
	for _, p := range e.rec.Progress() {
		if strings.HasPrefix(p.Message, "running for") {
			beats++
		}
	}
	if beats < 2 {
		t.Errorf("%d heartbeats during a ~4 s turn with a 500 ms interval", beats)
	}

	_, out = e.call(t, ctx, "claude_session_list", map[string]any{}, nil)
	info := out["sessions"].([]any)[0].(map[string]any)
	if info["state"] != "idle" || info["queries"].(float64) != 1 || info["pid"].(float64) == 0 || info["cwd"] != e.cwd {
		t.Errorf("list entry = %v", info)
	}
	_, out = e.call(t, ctx, "claude_session_history", map[string]any{"sessionId": sid}, nil)
	entries := out["entries"].([]any)
	if len(entries) < 2 || entries[0].(map[string]any)["text"] != "SLOW8" || entries[1].(map[string]any)["kind"] != "text" {
		t.Errorf("history = %v", entries)
	}
}

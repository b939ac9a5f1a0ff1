package mcptools

import (
	"strings"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// TestWaitSecondsClamped: a waitSeconds too large for a time.Duration is
// clamped to the documented maximum (a day), not overflowed into an
// immediate "running"; a negative one is refused.
func TestWaitSecondsClamped(t *testing.T) {
	t.Parallel()
	f := newFakeServer(t, "2025-11-25", sessions.Config{}, Options{})
	_, out := f.call(t, "claude_session_create", map[string]any{"cwd": t.TempDir()}, nil)
	sid := out["sessionId"].(string)
	// 18446744074 s in nanoseconds wraps around int64 to 0.29 s: unclamped,
	// the 1 s turn would come back "running".
	res, out := f.call(t, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "SLOW2", "waitSeconds": int64(18446744074)}, nil)
	if res.IsError || out["status"] != "completed" {
		t.Errorf("huge waitSeconds: isError=%v %v", res.IsError, out)
	}
	res, _ = f.call(t, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "hi", "waitSeconds": -1}, nil)
	if !res.IsError || !strings.Contains(resText(res), "waitSeconds") {
		t.Errorf("negative waitSeconds: %s", resText(res))
	}
}

// TestPromptLimit: a prompt over --max-prompt-bytes is refused as a tool
// error that names the flag, for a chat query and a one-shot query alike,
// and reaches no CLI.
func TestPromptLimit(t *testing.T) {
	t.Parallel()
	f := newFakeServer(t, "2025-11-25", sessions.Config{}, Options{MaxPromptBytes: 16})
	_, out := f.call(t, "claude_session_create", map[string]any{"cwd": t.TempDir()}, nil)
	sid := out["sessionId"].(string)
	long := strings.Repeat("x", 17)
	res, _ := f.call(t, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": long}, nil)
	if !res.IsError || !strings.Contains(resText(res), "--max-prompt-bytes") {
		t.Errorf("chat query over the limit: %s", resText(res))
	}
	res, _ = f.call(t, "claude_direct_query", map[string]any{"prompt": long, "cwd": t.TempDir()}, nil)
	if !res.IsError || !strings.Contains(resText(res), "--max-prompt-bytes") {
		t.Errorf("direct query over the limit: %s", resText(res))
	}
	if res, out := f.call(t, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "hi"}, nil); res.IsError || out["status"] != "completed" {
		t.Errorf("a prompt within the limit: %s", resText(res))
	}
}

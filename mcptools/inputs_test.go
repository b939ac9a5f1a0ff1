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

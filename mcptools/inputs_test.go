package mcptools

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

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

// TestErrorHints: the sessions layer speaks no MCP; the errors a tool call
// can mend get that tool's name here: a busy session names
// claude_chat_interrupt (a JSON-RPC error), too many sessions
// claude_session_close, an unknown one claude_session_create.
func TestErrorHints(t *testing.T) {
	t.Parallel()
	f := newFakeServer(t, "2025-11-25", sessions.Config{MaxSessions: 1}, Options{})
	_, out := f.call(t, "claude_session_create", map[string]any{"cwd": t.TempDir()}, nil)
	sid := out["sessionId"].(string)
	res, _ := f.call(t, "claude_session_create", map[string]any{"cwd": t.TempDir()}, nil)
	if !res.IsError || !strings.Contains(resText(res), "--max-sessions is 1; close one with claude_session_close first") {
		t.Errorf("too many sessions: %s", resText(res))
	}
	res, _ = f.call(t, "claude_chat_wait", map[string]any{"sessionId": "nope"}, nil)
	if !res.IsError || !strings.Contains(resText(res), "create one with claude_session_create") {
		t.Errorf("unknown session: %s", resText(res))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	first := make(chan error, 1)
	go func() {
		_, err := f.cs.CallTool(ctx, &mcp.CallToolParams{Name: "claude_chat_query", Arguments: map[string]any{"sessionId": sid, "prompt": "SLOW4"}})
		first <- err
	}()
	waitFor(t, "the first query to run", func() bool { return f.mgr.Count() == 1 && runningQuery(f.mgr, sid) })
	_, err := f.cs.CallTool(ctx, &mcp.CallToolParams{Name: "claude_chat_query", Arguments: map[string]any{"sessionId": sid, "prompt": "hi"}})
	if err == nil || !strings.Contains(err.Error(), "already running a query; wait for it to finish (claude_chat_wait) or call claude_chat_interrupt") {
		t.Errorf("busy session: %v", err)
	}
	if err := <-first; err != nil {
		t.Errorf("the first query: %v", err)
	}
}

// runningQuery reports whether session id has a query running.
func runningQuery(m *sessions.Manager, id string) bool {
	s, err := m.Get(id)
	return err == nil && s.Info().State == sessions.StateRunning
}

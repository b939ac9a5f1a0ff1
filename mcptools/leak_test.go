package mcptools

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/leakcheck"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// TestNoGoroutineLeaks: a server that served queries with notifications
// and heartbeats, a cancelled call, a one-shot query and a task leaves no
// goroutine behind once its client and server sessions are closed and its
// manager is shut down.
func TestNoGoroutineLeaks(t *testing.T) {
	before := leakcheck.Take()
	t.Run("client", func(t *testing.T) {
		f := newFakeServer(t, "2025-11-25", sessions.Config{}, Options{HeartbeatInterval: 100 * time.Millisecond})
		_, out := f.call(t, "claude_session_create", map[string]any{"cwd": t.TempDir()}, nil)
		sid := out["sessionId"].(string)
		if res, _ := f.call(t, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "TOOL_BASH[echo hi]"}, mcp.Meta{"progressToken": "p1"}); res.IsError {
			t.Fatalf("query: %s", resText(res))
		}
		f.waitEvents(t, "progress:done", "log:debug")
		if res, _ := f.call(t, "claude_direct_query", map[string]any{"prompt": "hi", "cwd": t.TempDir()}, nil); res.IsError {
			t.Fatalf("direct query: %s", resText(res))
		}
		// A call cancelled while its turn runs.
		f.rec.Reset()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := f.cs.CallTool(ctx, &mcp.CallToolParams{Name: "claude_chat_query", Arguments: map[string]any{"sessionId": sid, "prompt": "SLOW"},
				Meta: mcp.Meta{"progressToken": "p2"}})
			done <- err
		}()
		f.waitEvents(t, "progress:turn started")
		cancel()
		if err := <-done; err == nil {
			t.Error("the cancelled call returned no error")
		}
		if res, _ := f.call(t, "claude_session_close", map[string]any{"sessionId": sid}, nil); res.IsError {
			t.Fatalf("close: %s", resText(res))
		}
	})
	t.Run("task", func(t *testing.T) {
		c := newRawClient(t, "2026-07-28", tasksCaps, sessions.Config{}, taskOpts)
		res := c.tool("claude_direct_query", map[string]any{"prompt": "SLOW3", "cwd": t.TempDir()})
		id, _ := res["taskId"].(string)
		if id == "" {
			t.Fatalf("no task: %v", res)
		}
		c.pollTask(id, taskCompleted)
	})
	before.Check(t, 5*time.Second)
}

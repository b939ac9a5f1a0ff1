package mcptools

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
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
	testkit.Until(t, 10*time.Second, "the first query to run", func() bool { return f.mgr.Count() == 1 && runningQuery(f.mgr, sid) })
	_, err := f.cs.CallTool(ctx, &mcp.CallToolParams{Name: "claude_chat_query", Arguments: map[string]any{"sessionId": sid, "prompt": "hi"}})
	if err == nil || !strings.Contains(err.Error(), "already running a query; wait for it to finish (claude_chat_wait) or call claude_chat_interrupt") {
		t.Errorf("busy session: %v", err)
	}
	if err := <-first; err != nil {
		t.Errorf("the first query: %v", err)
	}
}

// TestMissingCLIHint: a query when the CLI cannot be found says how to
// install it and how the operator names it.
func TestMissingCLIHint(t *testing.T) {
	t.Parallel()
	mgr := sessions.NewManager(sessions.Config{CLIPath: filepath.Join(t.TempDir(), "no-claude")})
	t.Cleanup(mgr.Shutdown)
	st, ct := mcp.NewInMemoryTransports()
	ss, err := NewServer(mgr, Options{}).Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	c, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	res, err := c.CallTool(context.Background(), &mcp.CallToolParams{Name: "claude_direct_query", Arguments: map[string]any{"prompt": "hi", "cwd": t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	if text := resText(res); !res.IsError || !strings.Contains(text, "npm install -g @anthropic-ai/claude-code") || !strings.Contains(text, "--claude-path (CLAUDE_AGENT_MCP_CLAUDE_PATH)") {
		t.Errorf("a query without the CLI: %s", text)
	}
}

// runningQuery reports whether session id has a query running.
func runningQuery(m *sessions.Manager, id string) bool {
	s, err := m.Get(id)
	return err == nil && s.Info().State == state.Running
}

package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestE2ESecurity replays, against the built server over real HTTP with
// the real CLI, what an adversarial pass found (the "Fail closed" issue):
// an unknown tool name crashed a server that keeps an audit log; an
// agent's hooks and MCP servers ran programs past every ceiling; a mode
// switch widened permissions without --http-allow; a user resumed another
// user's conversation and read it.
func TestE2ESecurity(t *testing.T) {
	t.Parallel()
	e := startHTTPE2E(t, httpE2EOptions{users: []string{"alice", "bob"}, audit: true, args: []string{
		"--allow-session-mcp-servers=false", "--allowed-tools-ceiling", "Read,Grep,Glob",
		"--allowed-permission-modes", "default,plan,acceptEdits"}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	alice := e.connect(t, "alice", "")
	bob := e.connect(t, "bob", "2025-11-25")

	t.Run("unknown_tool", func(t *testing.T) {
		for _, name := range []string{"claude_nope", ""} {
			if _, err := alice.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}}); err == nil {
				t.Errorf("calling %q succeeded", name)
			}
		}
		if res, _ := httpCall(t, ctx, alice, "claude_session_list", map[string]any{}); res.IsError {
			t.Errorf("the server does not answer after unknown tools: %v", res.Content)
		}
		select {
		case <-e.exited:
			t.Fatal("the server died")
		default:
		}
	})

	t.Run("agent_hooks", func(t *testing.T) {
		marker := filepath.Join(e.home, "pwned-by-hook")
		marker2 := filepath.Join(e.home, "pwned-by-mcp")
		agents := map[string]any{"x": map[string]any{
			"description": "an agent", "prompt": "You are x.",
			"hooks": map[string]any{"SessionStart": []any{map[string]any{"hooks": []any{
				map[string]any{"type": "command", "command": "touch " + marker}}}}},
			"mcpServers": []any{map[string]any{"evil": map[string]any{"command": "/bin/sh", "args": []string{"-c", "touch " + marker2}}}},
		}}
		res, _ := httpCall(t, ctx, alice, "claude_session_create", map[string]any{"agents": agents, "agent": "x"})
		if !res.IsError || !strings.Contains(text(res), `agents["x"]`) {
			t.Fatalf("a create with an agent's hooks and MCP server: %s", text(res))
		}
		res, _ = httpCall(t, ctx, alice, "claude_direct_query", map[string]any{"prompt": "hi", "settings": map[string]any{
			"hooks": map[string]any{"SessionStart": []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": "touch " + marker}}}}}}})
		if !res.IsError || !strings.Contains(text(res), "settings.hooks") {
			t.Fatalf("a query with settings hooks: %s", text(res))
		}
		for _, m := range []string{marker, marker2} {
			if _, err := os.Stat(m); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a refused option ran a program: %s exists", m)
			}
		}
	})

	t.Run("mode_switch", func(t *testing.T) {
		_, out := httpCall(t, ctx, alice, "claude_session_create", map[string]any{})
		sid, _ := out["sessionId"].(string)
		if sid == "" {
			t.Fatalf("create: %v", out)
		}
		defer httpCall(t, ctx, alice, "claude_session_close", map[string]any{"sessionId": sid})
		for mode, want := range map[string]string{"acceptEdits": "--http-allow widens-permissions", "bypassPermissions": "--allowed-permission-modes"} {
			res, _ := httpCall(t, ctx, alice, "claude_chat_mode", map[string]any{"sessionId": sid, "permissionMode": mode})
			if !res.IsError || !strings.Contains(text(res), want) {
				t.Errorf("switching to %s over HTTP: %s", mode, text(res))
			}
		}
		if res, _ := httpCall(t, ctx, alice, "claude_chat_mode", map[string]any{"sessionId": sid, "permissionMode": "plan"}); res.IsError {
			t.Errorf("switching to plan: %s", text(res))
		}
		_, list := httpCall(t, ctx, alice, "claude_session_list", map[string]any{"sessionId": sid})
		if got := list["sessions"].([]any)[0].(map[string]any)["permissionMode"]; got != "plan" {
			t.Errorf("mode after the switches: %v", got)
		}
	})

	t.Run("resume_other_user", func(t *testing.T) {
		secret := "alice's secret plan ECHO"
		_, out := httpCall(t, ctx, alice, "claude_session_create", map[string]any{})
		sid, _ := out["sessionId"].(string)
		_, q := httpCall(t, ctx, alice, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": secret})
		conv, _ := q["claudeSessionId"].(string)
		if conv == "" {
			t.Fatalf("alice's query: %v", q)
		}
		for _, fork := range []bool{false, true} {
			res, _ := httpCall(t, ctx, bob, "claude_session_create", map[string]any{"resumeSessionId": conv, "forkSession": fork})
			if !res.IsError || !strings.Contains(text(res), "no conversation of yours") {
				t.Errorf("bob resuming alice's conversation (fork %v): %s", fork, text(res))
			}
		}
		_, bl := httpCall(t, ctx, bob, "claude_session_list", map[string]any{})
		if n := len(bl["sessions"].([]any)); n != 0 {
			t.Errorf("bob has %d sessions after refused resumes", n)
		}
		// Alice continues her own conversation after closing it.
		httpCall(t, ctx, alice, "claude_session_close", map[string]any{"sessionId": sid})
		res, out := httpCall(t, ctx, alice, "claude_session_create", map[string]any{"resumeSessionId": conv})
		if res.IsError {
			t.Fatalf("alice resuming her own conversation: %s", text(res))
		}
		_, h := httpCall(t, ctx, alice, "claude_session_history", map[string]any{"sessionId": out["sessionId"]})
		if !strings.Contains(fmt.Sprint(h), "secret plan") {
			t.Errorf("alice's resumed history lacks her prompt: %v", h)
		}
		httpCall(t, ctx, alice, "claude_session_close", map[string]any{"sessionId": out["sessionId"]})
	})
}

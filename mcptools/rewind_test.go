package mcptools

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/mcptest"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// claude_session_rewind against the fake CLI, whose turns stand for one new
// file each (/CWD/turn<n>.txt): the prompts numbered as
// claude_session_history numbers them, a dry run, a rewind, the refusals.

func TestRewindTool(t *testing.T) {
	t.Parallel()
	f := newFakeServer(t, "2025-11-25", sessions.Config{FileCheckpoints: true}, Options{})
	_, out := f.call(t, "claude_session_create", map[string]any{"cwd": t.TempDir()}, nil)
	sid := out["sessionId"].(string)
	for _, p := range []string{"first", "second"} {
		if res, _ := f.call(t, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": p}, nil); res.IsError {
			t.Fatalf("query: %s", resText(res))
		}
	}
	res, _ := f.call(t, "claude_session_history", map[string]any{"sessionId": sid}, nil)
	if text := resText(res); !strings.Contains(text, "> [prompt 1] first") || !strings.Contains(text, "> [prompt 2] second") {
		t.Errorf("the history does not number the prompts:\n%s", text)
	}
	// A page that starts after the first prompt numbers on from it.
	res, _ = f.call(t, "claude_session_history", map[string]any{"sessionId": sid, "cursor": "2"}, nil)
	if text := resText(res); !strings.Contains(text, "> [prompt 2] second") || strings.Contains(text, "[prompt 1]") {
		t.Errorf("a later page numbers the prompts from the start of the conversation:\n%s", text)
	}

	files := func(out map[string]any) string {
		var names []string
		for _, f := range out["files"].([]any) {
			names = append(names, f.(string)[strings.LastIndex(f.(string), "/")+1:])
		}
		return strings.Join(names, " ")
	}
	res, out = f.call(t, "claude_session_rewind", map[string]any{"sessionId": sid, "prompt": 1, "dryRun": true}, nil)
	if res.IsError || files(out) != "turn1.txt turn2.txt" || out["dryRun"] != true || out["deletions"] != float64(2) ||
		!strings.Contains(resText(res), "would restore 2 file(s) (+0 −2 lines): turn1.txt, turn2.txt") {
		t.Fatalf("dry run: %s %v", resText(res), out)
	}
	res, out = f.call(t, "claude_session_rewind", map[string]any{"sessionId": sid, "prompt": 2}, nil)
	if res.IsError || files(out) != "turn2.txt" || out["dryRun"] != nil || !strings.Contains(resText(res), "Rewound session "+sid+" to before its prompt 2: restored 1 file(s)") {
		t.Fatalf("rewind: %s %v", resText(res), out)
	}
	res, out = f.call(t, "claude_session_rewind", map[string]any{"sessionId": sid, "prompt": 2, "dryRun": true}, nil)
	if res.IsError || files(out) != "" || !strings.Contains(resText(res), "nothing to rewind") {
		t.Errorf("a dry run after the rewind: %s %v", resText(res), out)
	}

	other, err := f.mgr.Create(context.Background(), sessions.CreateOptions{Cwd: t.TempDir(), Owner: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"sessionId": sid, "prompt": 3}, "prompts 1 to 2"},
		{map[string]any{"sessionId": sid, "prompt": 0, "dryRun": true}, "prompts 1 to 2"},
		{map[string]any{"sessionId": "nope", "prompt": 1}, "no open session has id"},
		{map[string]any{"sessionId": other.ID, "prompt": 1}, "no open session has id"}, // another user's
		{map[string]any{"sessionId": sid}, `"prompt"`},
	} {
		res, _ := f.call(t, "claude_session_rewind", tc.args, nil)
		if !res.IsError || !strings.Contains(resText(res), tc.want) {
			t.Errorf("%v: %s (isError %v), want %q", tc.args, resText(res), res.IsError, tc.want)
		}
	}
}

// TestRewindToolRefused: a running turn makes the call a JSON-RPC error
// that says to wait or interrupt; a server without checkpoints names the
// flag; a closed session is not found.
func TestRewindToolRefused(t *testing.T) {
	t.Parallel()
	f := newFakeServer(t, "2025-11-25", sessions.Config{FileCheckpoints: true}, Options{})
	_, out := f.call(t, "claude_session_create", map[string]any{"cwd": t.TempDir()}, nil)
	sid := out["sessionId"].(string)
	f.call(t, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "hi"}, nil)
	res, _ := f.call(t, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "SLOW6", "waitSeconds": 1}, nil)
	if res.IsError {
		t.Fatalf("query: %s", resText(res))
	}
	s, err := f.mgr.Get(sid)
	if err != nil {
		t.Fatal(err)
	}
	if s.Info().State != "running" {
		t.Fatalf("the session is %s, not running: the test proves nothing", s.Info().State)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = f.cs.CallTool(ctx, &mcp.CallToolParams{Name: "claude_session_rewind", Arguments: map[string]any{"sessionId": sid, "prompt": 1}})
	mcptest.WantRPCError(t, "a rewind during a turn", err, jsonrpc.CodeInvalidParams, "is running a query, and its files change while it runs; wait for it to finish (claude_chat_wait) or call claude_chat_interrupt")
	if s.Info().State != "running" {
		t.Errorf("the turn ended before the refused rewind was answered: the test proves nothing")
	}
	f.call(t, "claude_chat_interrupt", map[string]any{"sessionId": sid}, nil)
	f.call(t, "claude_session_close", map[string]any{"sessionId": sid}, nil)
	if res, _ := f.call(t, "claude_session_rewind", map[string]any{"sessionId": sid, "prompt": 1}, nil); !res.IsError || !strings.Contains(resText(res), "no open session") {
		t.Errorf("a closed session: %s", resText(res))
	}

	off := newFakeServer(t, "2025-11-25", sessions.Config{}, Options{})
	_, out = off.call(t, "claude_session_create", map[string]any{"cwd": t.TempDir()}, nil)
	sid = out["sessionId"].(string)
	off.call(t, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "hi"}, nil)
	if res, _ := off.call(t, "claude_session_rewind", map[string]any{"sessionId": sid, "prompt": 1, "dryRun": true}, nil); !res.IsError || !strings.Contains(resText(res), "--file-checkpoints") {
		t.Errorf("a server without checkpoints: %s", resText(res))
	}
}

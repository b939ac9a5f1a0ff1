package mcptools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/mcptest"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// gitRepo is a repository on main whose first commit holds a.txt.
func gitRepo(t *testing.T) (string, func(args ...string) string) {
	t.Helper()
	return testkit.GitRepo(t, map[string]string{"a.txt": "one\n"})
}

// worktreeSession creates a session with a worktree of repo and writes
// file in it (the session's work); it returns the session and the
// worktree's path.
func worktreeSession(t *testing.T, f *fakeServer, repo, file string) (string, string) {
	t.Helper()
	res, out := f.call(t, "claude_session_create", map[string]any{"cwd": repo, "worktree": "auto"}, nil)
	if res.IsError {
		t.Fatalf("create: %s", resText(res))
	}
	path := out["worktree"].(map[string]any)["path"].(string)
	if err := os.WriteFile(filepath.Join(path, file), []byte("work of the session\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return out["sessionId"].(string), path
}

// TestLandTool: the diff resource shows the session's work; a squash
// without a message asks the session for one (the fake CLI's answer),
// lands one commit on main, removes the worktree and closes the session;
// a discard removes the work.
func TestLandTool(t *testing.T) {
	repo, g := gitRepo(t)
	f := newFakeServer(t, "2025-11-25", sessions.Config{}, Options{})
	sid, path := worktreeSession(t, f, repo, "b.txt")

	diff, err := mcptest.ReadText(f.cs, mcptest.SessionURI(sid, "diff"))
	if err != nil || !strings.Contains(diff, "1 file(s) changed, +1 −0") || !strings.Contains(diff, "| `b.txt` | 1 | 0 |") || !strings.Contains(diff, "+work of the session") {
		t.Fatalf("diff: %v\n%s", err, diff)
	}
	before := g("rev-parse", "main")
	res, out := f.call(t, "claude_session_land", map[string]any{"sessionId": sid, "how": "squash"}, nil)
	if res.IsError {
		t.Fatalf("land: %s", resText(res))
	}
	if out["how"] != "squash" || out["target"] != "main" || out["messageBy"] != "session" || out["worktreeRemoved"] != true || out["sessionClosed"] != true {
		t.Errorf("land: %v", out)
	}
	msg, _ := out["message"].(string)
	if g("rev-parse", "main^") != before || g("log", "-1", "--format=%s", "main") != msg || g("show", "main:b.txt") != "work of the session" {
		t.Errorf("main: %s", g("log", "--format=%h %s", "main"))
	}
	if !strings.Contains(resText(res), "written by the session") || !strings.Contains(resText(res), "session "+sid+" is closed") {
		t.Errorf("text: %s", resText(res))
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the worktree is still there: %v", err)
	}
	// Closed: a second land, and the diff, find no session.
	res, _ = f.call(t, "claude_session_land", map[string]any{"sessionId": sid, "how": "discard"}, nil)
	if !res.IsError || !strings.Contains(resText(res), "no open session has id") {
		t.Errorf("land of a closed session: %s", resText(res))
	}
	_, err = mcptest.ReadText(f.cs, mcptest.SessionURI(sid, "diff"))
	mcptest.WantRPCError(t, "diff of a closed session", err, jsonrpc.CodeInvalidParams, mcptest.ResourceNotFound)

	sid, path = worktreeSession(t, f, repo, "c.txt")
	res, out = f.call(t, "claude_session_land", map[string]any{"sessionId": sid, "how": "discard"}, nil)
	if res.IsError || out["worktreeRemoved"] != true {
		t.Fatalf("discard: %s", resText(res))
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) || g("branch", "--list", "worktree-*") != "" {
		t.Errorf("after discard: %v, branches %q", err, g("branch", "--list"))
	}
}

// TestLandToolRefused: no worktree, an unknown session, a conflict: each a
// clear error, nothing changed; a session that was refused stays open.
func TestLandToolRefused(t *testing.T) {
	repo, g := gitRepo(t)
	f := newFakeServer(t, "2025-11-25", sessions.Config{}, Options{})
	_, plain := f.call(t, "claude_session_create", map[string]any{"cwd": t.TempDir()}, nil)
	res, _ := f.call(t, "claude_session_land", map[string]any{"sessionId": plain["sessionId"], "how": "merge"}, nil)
	if !res.IsError || !strings.Contains(resText(res), "was not created with worktree") {
		t.Errorf("no worktree: %s", resText(res))
	}
	_, err := mcptest.ReadText(f.cs, mcptest.SessionURI(plain["sessionId"].(string), "diff"))
	mcptest.WantRPCError(t, "diff without a worktree", err, jsonrpc.CodeInvalidParams, "has no worktree")
	res, _ = f.call(t, "claude_session_land", map[string]any{"sessionId": "nope", "how": "merge"}, nil)
	if !res.IsError || !strings.Contains(resText(res), "no open session has id") {
		t.Errorf("unknown session: %s", resText(res))
	}

	sid, path := worktreeSession(t, f, repo, "a.txt")
	if err := os.WriteFile(filepath.Join(repo, "a.txt"), []byte("main's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g("commit", "-qam", "main's")
	before := g("rev-parse", "main")
	res, _ = f.call(t, "claude_session_land", map[string]any{"sessionId": sid, "how": "merge", "message": "m"}, nil)
	if !res.IsError || !strings.Contains(resText(res), "conflict with the branch main in 1 file(s): a.txt") {
		t.Errorf("conflict: %s", resText(res))
	}
	if g("rev-parse", "main") != before {
		t.Error("main moved")
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("the worktree after a refused land: %v", err)
	}
	if res, out := f.call(t, "claude_session_list", map[string]any{}, nil); res.IsError || !strings.Contains(resText(res), sid) {
		t.Errorf("the session after a refused land: %v", out)
	}
	// Mid-turn: refused as busy (InvalidParams), the turn goes on.
	if res, _ := f.call(t, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "SLOW6", "waitSeconds": 1}, nil); res.IsError {
		t.Fatalf("query: %s", resText(res))
	}
	_, err = f.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "claude_session_land", Arguments: map[string]any{"sessionId": sid, "how": "discard"}})
	mcptest.WantRPCError(t, "land mid-turn", err, jsonrpc.CodeInvalidParams, "is running a query")
	if res, _ := f.call(t, "claude_chat_wait", map[string]any{"sessionId": sid}, nil); res.IsError {
		t.Errorf("the turn after a refused land: %s", resText(res))
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("the worktree after a land refused mid-turn: %v", err)
	}
}

package httpserve_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/mcptest"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// TestLandHTTPUsers: over --http bob can neither land nor read the diff of
// alice's worktree session (not found, as for every tool and resource);
// alice can, and her land by fast-forward reaches main.
func TestLandHTTPUsers(t *testing.T) {
	repo := t.TempDir()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"commit", "-q", "--allow-empty", "-m", "first"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo, "-c", "user.email=t@example.com", "-c", "user.name=t"}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	h := newHTTPServer(t, sessions.Config{}, mcptools.Options{})
	alice := mcptest.ConnectHTTP(t, h.url+"/mcp", "alice-secret", "")
	bob := mcptest.ConnectHTTP(t, h.url+"/mcp", "bob-secret", "")
	res, out := mcptest.CallJSON(t, alice, "claude_session_create", map[string]any{"cwd": repo, "worktree": "auto"})
	if res.IsError {
		t.Fatalf("create: %s", mcptest.Text(res))
	}
	sid := out["sessionId"].(string)
	path := out["worktree"].(map[string]any)["path"].(string)
	if err := os.WriteFile(filepath.Join(path, "f.txt"), []byte("alice's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := mcptest.ReadText(bob, mcptest.SessionURI(sid, "diff"))
	mcptest.WantRPCError(t, "bob reads alice's diff", err, jsonrpc.CodeInvalidParams, mcptest.ResourceNotFound)
	res, _ = mcptest.CallJSON(t, bob, "claude_session_land", map[string]any{"sessionId": sid, "how": "discard"})
	if !res.IsError || !strings.Contains(mcptest.Text(res), "no open session has id") {
		t.Errorf("bob lands alice's session: %s", mcptest.Text(res))
	}
	if _, err := os.Stat(filepath.Join(path, "f.txt")); err != nil {
		t.Fatalf("alice's work after bob's land: %v", err)
	}
	if text, err := mcptest.ReadText(alice, mcptest.SessionURI(sid, "diff")); err != nil || !strings.Contains(text, "`f.txt`") {
		t.Errorf("alice's diff: %v %s", err, text)
	}
	res, out = mcptest.CallJSON(t, alice, "claude_session_land", map[string]any{"sessionId": sid, "how": "fast-forward", "message": "Add f"})
	if res.IsError || out["worktreeRemoved"] != true {
		t.Fatalf("alice lands: %s", mcptest.Text(res))
	}
	if b, err := os.ReadFile(filepath.Join(repo, "f.txt")); err != nil || string(b) != "alice's\n" {
		t.Errorf("main's checkout after the land: %q %v", b, err)
	}
}

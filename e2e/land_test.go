//go:build linux

package e2e_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// landRepo is a repository on main whose checkout holds the user's own
// uncommitted work (a changed tracked file, an untracked one), with a
// local bare repository as its remote origin.
func landRepo(t *testing.T, e *e2e) (repo, remote string) {
	t.Helper()
	repo, remote = filepath.Join(e.home, "repo"), filepath.Join(e.home, "remote.git")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"README": "base\n", "user.txt": "the user's\n"} {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitRun(t, repo, "init", "--quiet", "-b", "main")
	gitRun(t, repo, "add", ".")
	gitRun(t, repo, "commit", "--quiet", "-m", "base")
	gitRun(t, e.home, "init", "--quiet", "--bare", remote)
	gitRun(t, repo, "remote", "add", "origin", remote)
	for name, content := range map[string]string{"user.txt": "the user's, changed and not committed\n", "scratch.txt": "untracked\n"} {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return repo, remote
}

// worked creates a session with worktree name in repo whose turn writes
// file (the real CLI's Write tool, scripted by the fake API), and returns
// the session and its worktree.
func worked(t *testing.T, ctx context.Context, e *e2e, repo, name, file, content string) (string, string) {
	t.Helper()
	res, out := e.call(t, ctx, "claude_session_create", map[string]any{"cwd": repo, "worktree": name, "permissionMode": "acceptEdits"}, nil)
	if res.IsError {
		t.Fatalf("create: %s", text(res))
	}
	sid, _ := out["sessionId"].(string)
	path, _ := out["worktree"].(map[string]any)["path"].(string)
	if res, _ := e.query(t, ctx, sid, "TOOL_WRITE["+filepath.Join(path, file)+"|"+content+"]"); res.IsError {
		t.Fatalf("the turn writing %s: %s", file, text(res))
	}
	if b, err := os.ReadFile(filepath.Join(path, file)); err != nil || string(b) != content {
		t.Fatalf("the CLI's Write in the worktree: %q %v", b, err)
	}
	return sid, path
}

// land calls claude_session_land.
func (e *e2e) land(t *testing.T, ctx context.Context, args map[string]any) (bool, string, map[string]any) {
	t.Helper()
	res, out := e.call(t, ctx, "claude_session_land", args, nil)
	return res.IsError, text(res), out
}

// TestE2ELand: with the real CLI, sessions whose turns write files in their
// worktrees are reviewed through the …/diff resource and landed in main by
// fast-forward, merge (after main moved, where fast-forward is refused)
// and squash (the message written by the session), opened as a pull
// request (a fake gh, a local bare remote), and discarded; a conflict is
// refused before anything changed, naming the file. The user's own
// uncommitted work in main's checkout stays byte for byte; in the end no
// worktree or branch is left but main, and every landed session is closed.
func TestE2ELand(t *testing.T) {
	t.Parallel()
	requireGit(t)
	ghDir := t.TempDir()
	ghArgs := filepath.Join(ghDir, "args")
	if err := os.WriteFile(filepath.Join(ghDir, "gh"), []byte("#!/bin/sh\nprintf '%s\\n' \"$@\" > "+ghArgs+"\necho https://example.com/pr/1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	e := startE2E(t, e2eOptions{protocol: "2025-11-25", elicit: noElicitation(t), env: map[string]string{"PATH": ghDir + ":" + os.Getenv("PATH")}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	repo, remote := landRepo(t, e)

	sid, path := worked(t, ctx, e, repo, "ff", "ff.txt", "fast")
	diff := readResource(ctx, e.session, "claude-agent-mcp://sessions/"+sid+"/diff")
	if !strings.Contains(diff, "| `ff.txt` | 1 | 0 |") || !strings.Contains(diff, "+fast") {
		t.Errorf("the diff resource:\n%s", diff)
	}
	isErr, msg, out := e.land(t, ctx, map[string]any{"sessionId": sid, "how": "fast-forward", "message": "Add ff.txt"})
	if isErr || out["worktreeRemoved"] != true || out["target"] != "main" || gitRun(t, repo, "log", "-1", "--format=%s", "main") != "Add ff.txt" {
		t.Fatalf("fast-forward: %s", msg)
	}
	landedGone(t, ctx, e, sid, path)

	sid, path = worked(t, ctx, e, repo, "merge", "merge.txt", "merged")
	gitRun(t, repo, "commit", "--quiet", "--allow-empty", "-m", "main moved")
	if isErr, msg, _ := e.land(t, ctx, map[string]any{"sessionId": sid, "how": "fast-forward"}); !isErr || !strings.Contains(msg, "use how merge or squash") {
		t.Errorf("fast-forward of a moved main: %s", msg)
	}
	if isErr, msg, _ := e.land(t, ctx, map[string]any{"sessionId": sid, "how": "merge", "message": "Add merge.txt"}); isErr ||
		len(strings.Fields(gitRun(t, repo, "log", "-1", "--format=%P", "main"))) != 2 {
		t.Fatalf("merge: %s", msg)
	}
	landedGone(t, ctx, e, sid, path)

	sid, path = worked(t, ctx, e, repo, "squash", "squash.txt", "squashed")
	isErr, msg, out = e.land(t, ctx, map[string]any{"sessionId": sid, "how": "squash"})
	written, _ := out["message"].(string)
	if isErr || out["messageBy"] != "session" || written == "" || gitRun(t, repo, "log", "-1", "--format=%s", "main") != written ||
		len(strings.Fields(gitRun(t, repo, "log", "-1", "--format=%P", "main"))) != 1 {
		t.Fatalf("squash with the session's message: %s", msg)
	}
	landedGone(t, ctx, e, sid, path)

	conflictThenDiscard(t, ctx, e, repo)

	sid, path = worked(t, ctx, e, repo, "pr", "pr.txt", "for review")
	isErr, msg, out = e.land(t, ctx, map[string]any{"sessionId": sid, "how": "pull-request", "message": "Add pr.txt"})
	if isErr || out["pullRequest"] != "https://example.com/pr/1" || gitRun(t, remote, "show", "worktree-pr:pr.txt") != "for review" {
		t.Fatalf("pull-request: %s", msg)
	}
	if args, _ := os.ReadFile(ghArgs); !strings.Contains(string(args), "--head\nworktree-pr\n--base\nmain\n--title\nAdd pr.txt\n") {
		t.Errorf("gh got %q", args)
	}
	landedGone(t, ctx, e, sid, path)

	for name, want := range map[string]string{"user.txt": "the user's, changed and not committed\n", "scratch.txt": "untracked\n", "ff.txt": "fast",
		"merge.txt": "merged", "squash.txt": "squashed", "notes.txt": "main's\n", "README": "base\n"} {
		if b, err := os.ReadFile(filepath.Join(repo, name)); err != nil || string(b) != want {
			t.Errorf("main's checkout: %s is %q (%v), want %q", name, b, err, want)
		}
	}
	if st := gitRun(t, repo, "status", "--porcelain"); st != "M user.txt\n?? scratch.txt" {
		t.Errorf("main's checkout's status:\n%s", st)
	}
	if b := gitRun(t, repo, "branch", "--format=%(refname:short)"); b != "main" {
		t.Errorf("branches left: %s", b)
	}
}

// landedGone checks that a landed session's worktree is gone and the
// session closed.
func landedGone(t *testing.T, ctx context.Context, e *e2e, sid, path string) {
	t.Helper()
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the worktree %s is still there (%v)", path, err)
	}
	res, _ := e.call(t, ctx, "claude_session_list", map[string]any{}, nil)
	if strings.Contains(text(res), sid) {
		t.Errorf("the landed session %s is still listed", sid)
	}
}

// conflictThenDiscard: a session and main both add notes.txt; a merge is
// refused before anything changed, naming it; discard drops the work.
func conflictThenDiscard(t *testing.T, ctx context.Context, e *e2e, repo string) {
	t.Helper()
	// Both add notes.txt (a new file: the CLI writes no file it has not
	// read).
	sid, path := worked(t, ctx, e, repo, "conflict", "notes.txt", "the session's")
	if err := os.WriteFile(filepath.Join(repo, "notes.txt"), []byte("main's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitRun(t, repo, "add", "notes.txt")
	gitRun(t, repo, "commit", "--quiet", "-m", "main's notes", "notes.txt")
	before := gitRun(t, repo, "rev-parse", "main")
	if isErr, msg, _ := e.land(t, ctx, map[string]any{"sessionId": sid, "how": "merge", "message": "m"}); !isErr || !strings.Contains(msg, "1 file(s): notes.txt") || !strings.Contains(msg, "nothing was changed") {
		t.Errorf("a conflict: %s", msg)
	}
	if gitRun(t, repo, "rev-parse", "main") != before {
		t.Error("a conflicting land moved main")
	}
	if _, err := os.Stat(filepath.Join(path, "notes.txt")); err != nil {
		t.Errorf("the worktree after a refused land: %v", err)
	}
	if isErr, msg, out := e.land(t, ctx, map[string]any{"sessionId": sid, "how": "discard"}); isErr || out["worktreeRemoved"] != true || gitRun(t, repo, "rev-parse", "main") != before {
		t.Fatalf("discard: %s", msg)
	}
	landedGone(t, ctx, e, sid, path)
}

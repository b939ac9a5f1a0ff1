//go:build linux

package e2e_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestE2EWorktreeInclude: a session with a worktree, in a repository whose
// .worktreeinclude names its ignored .env, finds a copy of .env in its
// worktree, mode kept, which the real CLI reads there; create reports the
// copy; an untracked file the list names that git does not ignore is not
// copied, nor is a pattern that leaves the repository or an ignored link
// to a file of the server's (both reported as skipped). The copy is no
// change: close removes the worktree.
func TestE2EWorktreeInclude(t *testing.T) {
	t.Parallel()
	requireGit(t)
	e := startE2E(t, e2eOptions{protocol: "2025-11-25", elicit: noElicitation(t)})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	repo := filepath.Join(e.home, "repo")
	const secret = "E2E_WORKTREE_SECRET=42\n"
	// Beside what it may copy, the list names a place outside the
	// repository, and an ignored link to a file of the server's.
	serverFile := filepath.Join(e.home, "server-secret")
	if err := os.WriteFile(serverFile, []byte("the server's\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{".gitignore": ".env\n*.link\n", ".worktreeinclude": "# what a build needs\n.env\nnotes.txt\n../server-secret\ntoken.link\n",
		"README": "base\n", ".env": secret, "notes.txt": "untracked, not ignored\n"} {
		if err := os.MkdirAll(repo, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(serverFile, filepath.Join(repo, "token.link")); err != nil {
		t.Fatal(err)
	}
	gitRun(t, repo, "init", "--quiet")
	gitRun(t, repo, "add", ".gitignore", ".worktreeinclude", "README")
	gitRun(t, repo, "commit", "--quiet", "-m", "base")

	res, out := e.call(t, ctx, "claude_session_create", map[string]any{"cwd": repo, "worktree": "env", "permissionMode": "acceptEdits"}, nil)
	if res.IsError {
		t.Fatalf("create: %s", text(res))
	}
	sid, _ := out["sessionId"].(string)
	w, _ := out["worktree"].(map[string]any)
	path, _ := w["path"].(string)
	copied, _ := w["copied"].(map[string]any)
	skipped := strings.Join(toStrings(copied["skipped"]), "\n")
	if path != filepath.Join(repo, ".claude", "worktrees", "env") || copied["count"] != 1.0 || !slices.Equal(toStrings(copied["files"]), []string{".env"}) ||
		!strings.Contains(skipped, `the pattern "../server-secret"`) || !strings.Contains(skipped, "token.link: a symbolic link") ||
		!strings.Contains(text(res), "got 1 git-ignored file(s) that .worktreeinclude names") {
		t.Fatalf("create: %s; worktree %v", text(res), w)
	}
	for _, name := range []string{"token.link", "server-secret"} {
		if _, err := os.Lstat(filepath.Join(path, name)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s reached the worktree (%v)", name, err)
		}
	}
	if fi, err := os.Lstat(filepath.Join(path, ".env")); err != nil || fi.Mode() != 0o600 {
		t.Errorf("the worktree's .env: %v, want a regular file of mode 0600 (%v)", fi, err)
	} else if data, _ := os.ReadFile(filepath.Join(path, ".env")); string(data) != secret {
		t.Errorf("the worktree's .env: %q, want a copy of the repository's", data)
	}
	if _, err := os.Lstat(filepath.Join(path, "notes.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("notes.txt, untracked and not ignored, was copied (%v)", err)
	}

	res, out = e.query(t, ctx, sid, "TOOL_READ["+filepath.Join(path, ".env")+"]")
	if final, _ := out["finalText"].(string); res.IsError || !strings.Contains(final, strings.TrimSpace(secret)) {
		t.Errorf("the CLI reading the worktree's .env: %s", text(res))
	}

	res, out = e.call(t, ctx, "claude_session_close", map[string]any{"sessionId": sid}, nil)
	if w, _ := out["worktree"].(map[string]any); res.IsError || w["removed"] != true {
		t.Errorf("close: %s %v, want the worktree removed (the copy is no change)", text(res), w)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the worktree %s is still there (%v)", path, err)
	}
}

// requireGit fails t without git under CI=true, and skips it elsewhere.
func requireGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git is not installed and CI=true")
		}
		t.Skip("git is not installed")
	}
}

// TestE2EWorktreeHook: a repository whose settings name a WorktreeCreate
// hook gets its session's worktree from the hook, as the CLI would: the
// hook (run under the session's ceiling) makes a git worktree and sets it
// up (an .env the tests need), create reports where and that setup
// succeeded, and the real CLI works there. A server whose sessions may run
// no program refuses the create before the hook runs, saying why.
func TestE2EWorktreeHook(t *testing.T) {
	t.Parallel()
	requireGit(t)
	repo := func(e *e2e) (dir, wt, marker string) {
		dir, wt, marker = filepath.Join(e.home, "repo"), filepath.Join(e.home, "hooked-wt"), filepath.Join(e.home, "hook-ran")
		hook := "touch " + marker + " && git -c core.hooksPath=/dev/null worktree add -q -b hooked " + wt + " >&2 && echo E2E_HOOK_SETUP=1 > " + wt + "/.env && echo " + wt
		settings := `{"hooks":{"WorktreeCreate":[{"hooks":[{"type":"command","command":` + jsString(hook) + `}]}]}}`
		for name, content := range map[string]string{".gitignore": ".env\n", "README": "base\n", ".claude/settings.json": settings} {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		gitRun(t, dir, "init", "--quiet")
		gitRun(t, dir, "add", ".")
		gitRun(t, dir, "commit", "--quiet", "-m", "base")
		return dir, wt, marker
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	e := startE2E(t, e2eOptions{protocol: "2025-11-25", elicit: noElicitation(t)})
	dir, wt, _ := repo(e)
	res, out := e.call(t, ctx, "claude_session_create", map[string]any{"cwd": dir, "worktree": "env", "permissionMode": "acceptEdits"}, nil)
	w, _ := out["worktree"].(map[string]any)
	setup, _ := w["setup"].(map[string]any)
	if res.IsError || w["path"] != wt || w["branch"] != "hooked" || setup["ok"] != true || !strings.Contains(text(res), "WorktreeCreate hook made the worktree") {
		t.Fatalf("create: %s; worktree %v", text(res), w)
	}
	sid, _ := out["sessionId"].(string)
	res, out = e.query(t, ctx, sid, "TOOL_READ["+filepath.Join(wt, ".env")+"]")
	if final, _ := out["finalText"].(string); res.IsError || !strings.Contains(final, "E2E_HOOK_SETUP=1") {
		t.Errorf("the CLI reading the hook's .env in its worktree: %s", text(res))
	}

	e = startE2E(t, e2eOptions{protocol: "2025-11-25", elicit: noElicitation(t), args: []string{"--allowed-tools-ceiling", "Read,Grep,Glob", "--warm-spares", "0"}})
	dir, _, marker := repo(e)
	res, _ = e.call(t, ctx, "claude_session_create", map[string]any{"cwd": dir, "worktree": "env"}, nil)
	if !res.IsError || !strings.Contains(text(res), "WorktreeCreate hook") || !strings.Contains(text(res), "may run none") {
		t.Errorf("create where sessions may run no program: %s", text(res))
	}
	if _, err := os.Stat(marker); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the refused hook ran (%v)", err)
	}
}

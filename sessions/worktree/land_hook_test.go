//go:build unix

package worktree

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestLandByHooks: a worktree the repository's WorktreeCreate hook made
// (a git worktree on a branch of its own) lands like one the server made,
// in the branch the repository was on, and its WorktreeRemove hook
// removes it.
func TestLandByHooks(t *testing.T) {
	out := t.TempDir()
	wt := filepath.Join(out, "wt")
	create := "git -c core.hooksPath=/dev/null worktree add -q -b from-hook " + wt + " >&2 && echo " + wt
	repo := hookRepo(t, create, out)
	hooks, err := Hooks(repo, "WorktreeCreate")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	start := func(cmd *exec.Cmd) error { return cmd.Start() }
	w, err := MakeByHooks(ctx, repo, "feature", hooks, allowAll, start)
	if err != nil {
		t.Fatal(err)
	}
	w.Start = start
	branch, _ := git(ctx, repo, nil, "symbolic-ref", "--short", "HEAD")
	write(t, filepath.Join(w.Path, "hooked.txt"), "by hook\n")
	got, err := w.Land(ctxFor(t), LandOptions{How: Squash, Message: "Hooked", Check: allowAll})
	if err != nil || !got.Removed || got.Target != branch {
		t.Fatalf("land: %+v, %v", got, err)
	}
	if s, _ := git(ctx, repo, nil, "log", "-1", "--format=%s", branch); s != "Hooked" {
		t.Errorf("the branch's last commit: %q", s)
	}
	if _, err := os.Stat(wt); !os.IsNotExist(err) {
		t.Errorf("the worktree is still there: %v", err)
	}
	if rm, _ := os.ReadFile(filepath.Join(out, "remove.json")); !strings.Contains(string(rm), `"worktree_path":"`+wt+`"`) {
		t.Errorf("the WorktreeRemove hook did not remove it: %s", rm)
	}
}

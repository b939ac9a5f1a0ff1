package worktree

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeGH puts a gh on PATH that records its arguments and prints a pull
// request's URL; it returns the file of the arguments.
func fakeGH(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	args := filepath.Join(dir, "args")
	script := "#!/bin/sh\nprintf '%s\\n' \"$@\" > " + args + "\necho https://example.com/pr/7\n"
	if err := os.WriteFile(filepath.Join(dir, "gh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return args
}

// TestLandPullRequest: the work is committed, pushed to the remote (a
// local bare repository) and gh opens the pull request against main; the
// worktree is removed; main is untouched.
func TestLandPullRequest(t *testing.T) {
	repo, w, g := landRepo(t)
	args := fakeGH(t)
	remote := filepath.Join(t.TempDir(), "remote.git")
	g(repo, "init", "-q", "--bare", remote)
	g(repo, "remote", "add", "origin", remote)
	write(t, filepath.Join(w.Path, "pr.txt"), "for review\n")
	before := g(repo, "rev-parse", "main")
	got, err := w.Land(ctxFor(t), LandOptions{How: PullRequest, Message: "Add pr.txt", Check: allowAll})
	if err != nil {
		t.Fatal(err)
	}
	if got.PR != "https://example.com/pr/7" || got.Target != "main" || len(got.Commits) != 1 || !got.Removed {
		t.Errorf("Landed = %+v", got)
	}
	if s := g(remote, "show", "worktree-w1:pr.txt"); s != "for review" {
		t.Errorf("the remote's branch: pr.txt %q", s)
	}
	if s := read(t, args); !strings.Contains(s, "pr\ncreate\n--head\nworktree-w1\n--base\nmain\n--title\nAdd pr.txt\n") {
		t.Errorf("gh got:\n%s", s)
	}
	if g(repo, "rev-parse", "main") != before {
		t.Error("main moved")
	}
	gone(t, repo, w, g)
}

// TestLandPullRequestRefused: no gh, or no remote: a clear error, nothing
// changed.
func TestLandPullRequestRefused(t *testing.T) {
	_, w, _ := landRepo(t)
	write(t, filepath.Join(w.Path, "pr.txt"), "x\n")
	t.Setenv("PATH", filepath.Dir(mustLook(t, "git")))
	if _, err := w.Land(ctxFor(t), LandOptions{How: PullRequest, Message: "m"}); err == nil || !strings.Contains(err.Error(), "needs the gh command") {
		t.Errorf("without gh: %v", err)
	}
	fakeGH(t)
	if _, err := w.Land(ctxFor(t), LandOptions{How: PullRequest, Message: "m"}); err == nil || !strings.Contains(err.Error(), "needs a remote") {
		t.Errorf("without a remote: %v", err)
	}
	if _, err := os.Stat(filepath.Join(w.Path, "pr.txt")); err != nil {
		t.Errorf("the worktree's work: %v", err)
	}
}

func mustLook(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

package worktree

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent/ceiling"
)

// The server's git runs in a jail (ceiling): this binary is the wrapper.
func TestMain(m *testing.M) {
	ceiling.Init()
	os.Exit(m.Run())
}

// hostileRepo makes a repository a session could have written: a
// post-checkout hook, a core.fsmonitor command and a smudge filter, each
// writing a marker into markers when run.
func hostileRepo(t *testing.T) (repo, markers string) {
	t.Helper()
	repo, markers = t.TempDir(), t.TempDir()
	mustGit := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	mustGit("init", "-q")
	mustGit("config", "user.email", "t@example.com")
	mustGit("config", "user.name", "t")
	write(t, filepath.Join(repo, ".gitattributes"), "*.txt filter=evil diff=evil\n")
	write(t, filepath.Join(repo, "a.txt"), "hello\n")
	mustGit("add", ".")
	mustGit("commit", "-qm", "one")
	mark := func(name string) string { return "id > " + filepath.Join(markers, name) }
	write(t, filepath.Join(repo, ".git", "hooks", "post-checkout"), "#!/bin/sh\n"+mark("hook")+"\n")
	if err := os.Chmod(filepath.Join(repo, ".git", "hooks", "post-checkout"), 0o755); err != nil {
		t.Fatal(err)
	}
	mustGit("config", "core.fsmonitor", mark("fsmonitor"))
	mustGit("config", "filter.evil.smudge", "sh -c '"+mark("smudge")+"; cat'")
	mustGit("config", "filter.evil.clean", "sh -c '"+mark("clean")+"; cat'")
	mustGit("config", "diff.evil.textconv", "sh -c '"+mark("textconv")+"; cat'")
	return repo, markers
}

func write(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func noMarkers(t *testing.T, markers string) {
	t.Helper()
	entries, _ := os.ReadDir(markers)
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(markers, e.Name()))
		t.Errorf("the repository's program ran as the server's user: %s (%s)", e.Name(), strings.TrimSpace(string(b)))
	}
}

// TestGitRunsNoRepositoryProgram: making, inspecting and removing a
// worktree of a repository with a post-checkout hook, a core.fsmonitor
// command, a smudge and clean filter and a textconv driver runs none of
// them (at 73d8d45 the hook and fsmonitor ran as the server's user).
func TestGitRunsNoRepositoryProgram(t *testing.T) {
	repo, markers := hostileRepo(t)
	// The control: the same repository runs them for a plain git.
	ctl := t.TempDir()
	if out, err := exec.Command("git", "-C", repo, "worktree", "add", "-q", "-b", "ctl", filepath.Join(ctl, "w")).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	if entries, _ := os.ReadDir(markers); len(entries) == 0 {
		t.Fatal("a plain git ran none of the repository's programs: the test proves nothing")
	}
	for _, e := range []string{"hook", "fsmonitor", "smudge", "clean", "textconv"} {
		os.Remove(filepath.Join(markers, e))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	allow := func(string, string) error { return nil }
	w, err := Make(ctx, repo, "w1", allow)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(w.Path, "a.txt")); err != nil || string(b) != "hello\n" {
		t.Errorf("the worktree's file: %q, %v", b, err)
	}
	write(t, filepath.Join(w.Path, "a.txt"), "changed\n")
	if files, _, err := w.Changed(ctx); err != nil || len(files) != 1 {
		t.Errorf("Changed = %v, %v", files, err)
	}
	if err := os.WriteFile(filepath.Join(w.Path, "a.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if in, err := w.Finish(ctx); err != nil || !in.Removed {
		t.Errorf("Finish = %+v, %v", in, err)
	}
	noMarkers(t, markers)
}

// TestWorktreesLinkPlanted: a session that replaced .claude/worktrees
// with a link to a directory outside gets no worktree made there.
func TestWorktreesLinkPlanted(t *testing.T) {
	repo, markers := hostileRepo(t)
	outside := t.TempDir()
	if err := os.MkdirAll(filepath.Join(repo, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(repo, ".claude", "worktrees")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := Make(ctx, repo, "w1", func(string, string) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("Make through a planted link = %v", err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("written outside the repository: %v", entries)
	}
	noMarkers(t, markers)
}

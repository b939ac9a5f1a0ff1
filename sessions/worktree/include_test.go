//go:build unix

package worktree

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/beneath"
)

// includeRepo is hostileRepo (its programs must not run) with ignored,
// untracked and tracked files for .worktreeinclude to name, and outside
// a directory of the server's that links lead to.
func includeRepo(t *testing.T) (repo, markers, outside string) {
	t.Helper()
	repo, markers = hostileRepo(t)
	outside = t.TempDir()
	mustGit := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	write(t, filepath.Join(repo, ".gitignore"), ".env*\n*.local\n*.log\n*.secret\nlocal.yml\ncache/\nbin/\nlinkdir\n")
	write(t, filepath.Join(repo, "app.local"), "committed\n")
	write(t, filepath.Join(repo, "config", "app.yml"), "tracked\n")
	mustGit("add", ".gitignore", "config/app.yml")
	mustGit("add", "-f", "app.local")
	mustGit("commit", "-qm", "two")
	files := map[string]string{
		".env":                "KEY=1\n",
		".env.example":        "KEY=\n",
		"app.local":           "edited in the repository\n", // tracked: the branch's version stays
		"notes.txt":           "untracked, not ignored\n",
		"debug.log":           "ignored, not named\n",
		"config/local.yml":    "db: local\n",
		"cache/a/b/data.bin":  "cached\n",
		"cache/a/linked.bin":  "two names\n",
		"bin/run.sh":          "#!/bin/sh\necho run\n",
		"bin/private.secret":  "mine\n",
		"deep/x/y/z/k.secret": "deep\n",
	}
	for name, content := range files {
		write(t, filepath.Join(repo, name), content)
	}
	chmod := map[string]os.FileMode{"bin/run.sh": 0o755, "bin/private.secret": 0o600}
	for name, mode := range chmod {
		if err := os.Chmod(filepath.Join(repo, name), mode); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(outside, "real.secret"), "the server's\n")
	write(t, filepath.Join(outside, "dir", "x.secret"), "the server's\n")
	links := [][2]string{
		{filepath.Join(outside, "real.secret"), "token.secret"}, // a link matched
		{filepath.Join(outside, "dir"), "linkdir"},              // a directory's link
	}
	for _, l := range links {
		if err := os.Symlink(l[0], filepath.Join(repo, l[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(filepath.Join(repo, "cache/a/linked.bin"), filepath.Join(outside, "second-name")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(repo, "cache", "pipe"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The plain gits above ran the repository's programs; the server's
	// must not.
	entries, _ := os.ReadDir(markers)
	for _, e := range entries {
		os.Remove(filepath.Join(markers, e.Name()))
	}
	return repo, markers, outside
}

func makeCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func allow(string, string) error { return nil }

// TestInclude: a new worktree gets a copy of the files .worktreeinclude
// names that git ignores (negations, directory patterns and ** as in a
// .gitignore), their modes kept; not a tracked file, an untracked one
// that is not ignored, one not named; no link, nothing through a link,
// no file of two names; a pattern leaving the repository is refused by
// name. The report says what was copied and what skipped; the copies
// count as no change. None of the repository's programs runs.
func TestInclude(t *testing.T) {
	repo, markers, _ := includeRepo(t)
	write(t, filepath.Join(repo, includeFile), strings.Join([]string{
		"# what a worktree needs to build",
		"",
		".env*",
		"!.env.example",
		"*.local",
		"notes.txt",
		"**/local.yml",
		"cache/",
		"bin/   ",
		"token.secret",
		"linkdir/**",
		"deep/**/*.secret",
		"../outside.secret",
		"!../x",
		repo + "/debug.log",
		"C:/Windows/x",
		"~/.ssh/id_rsa",
	}, "\n"))
	w, err := Make(makeCtx(t), repo, "w1", allow)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{".env", "bin/private.secret", "bin/run.sh", "cache/a/b/data.bin", "config/local.yml", "deep/x/y/z/k.secret"}
	c := w.Copied
	if c == nil {
		t.Fatal("no report of what was copied")
	}
	got := slices.Sorted(slices.Values(c.Files))
	if c.Count != len(want) || !slices.Equal(got, want) {
		t.Errorf("copied %d: %v, want %v", c.Count, got, want)
	}
	for _, name := range want {
		src, _ := os.Lstat(filepath.Join(repo, name))
		dst, err := os.Lstat(filepath.Join(w.Path, name))
		if err != nil || !dst.Mode().IsRegular() || dst.Mode().Perm() != src.Mode().Perm() {
			if err == nil {
				t.Errorf("%s in the worktree: %v, the repository's %v", name, dst.Mode(), src.Mode())
			} else {
				t.Errorf("%s in the worktree: %v", name, err)
			}
			continue
		}
		a, _ := os.ReadFile(filepath.Join(repo, name))
		b, _ := os.ReadFile(filepath.Join(w.Path, name))
		if string(a) != string(b) {
			t.Errorf("%s: %q, want %q", name, b, a)
		}
	}
	for _, name := range []string{".env.example", "notes.txt", "debug.log", "token.secret", "linkdir", "linkdir/x.secret", "cache/pipe", "cache/a/linked.bin", "outside.secret", "../outside.secret"} {
		if _, err := os.Lstat(filepath.Join(w.Path, name)); err == nil {
			t.Errorf("%s was copied", name)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(w.Path, "app.local")); string(b) != "committed\n" {
		t.Errorf("the tracked app.local: %q, want the branch's", b)
	}
	skipped := strings.Join(c.Skipped, "\n")
	for _, s := range []string{
		"token.secret: a symbolic link",
		"cache/a/linked.bin: a file with more than one hard link",
		`the pattern "../outside.secret" leaves the repository: refused`,
		`the pattern "!../x" leaves the repository: refused`,
		`the pattern "` + repo + `/debug.log" is an absolute path`,
		`the pattern "C:/Windows/x" is an absolute path`,
		`the pattern "~/.ssh/id_rsa" names a home directory`,
	} {
		if !strings.Contains(skipped, s) {
			t.Errorf("skipped does not say %q:\n%s", s, skipped)
		}
	}
	if len(c.Skipped) != 7 {
		t.Errorf("skipped %d, want 7:\n%s", len(c.Skipped), skipped)
	}
	// The copies are ignored: they change nothing, and close removes the
	// worktree as it would without them.
	if in, err := w.Finish(makeCtx(t)); err != nil || !in.Removed || len(in.ChangedFiles) != 0 {
		t.Errorf("Finish = %+v, %v", in, err)
	}
	noMarkers(t, markers)
}

// TestIncludeNone: without .worktreeinclude nothing is copied and nothing
// reported; a .worktreeinclude that is a link is not followed.
func TestIncludeNone(t *testing.T) {
	repo, _, outside := includeRepo(t)
	w, err := Make(makeCtx(t), repo, "w1", allow)
	if err != nil {
		t.Fatal(err)
	}
	if w.Copied != nil {
		t.Errorf("copied without a .worktreeinclude: %+v", w.Copied)
	}
	if _, err := os.Lstat(filepath.Join(w.Path, ".env")); err == nil {
		t.Error(".env was copied")
	}
	write(t, filepath.Join(outside, "include"), ".env\n")
	if err := os.Symlink(filepath.Join(outside, "include"), filepath.Join(repo, includeFile)); err != nil {
		t.Fatal(err)
	}
	w, err = Make(makeCtx(t), repo, "w2", allow)
	if err != nil {
		t.Fatal(err)
	}
	if c := w.Copied; c == nil || c.Count != 0 || len(c.Skipped) != 1 || !strings.Contains(c.Skipped[0], ".worktreeinclude: not read: a symbolic link") {
		t.Errorf("a linked .worktreeinclude: %+v", c)
	}
	if _, err := os.Lstat(filepath.Join(w.Path, ".env")); err == nil {
		t.Error(".env was copied")
	}
}

// TestIncludeOtherWorktrees: a pattern that matches everything copies
// nothing of the server's other worktrees (ignored, under
// .claude/worktrees) into a new one.
func TestIncludeOtherWorktrees(t *testing.T) {
	repo, _, _ := includeRepo(t)
	ctx := makeCtx(t)
	first, err := Make(ctx, repo, "w1", allow)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(first.Path, ".env"), "the first's own\n")
	write(t, filepath.Join(repo, includeFile), "**\n")
	w, err := Make(ctx, repo, "w2", allow)
	if err != nil {
		t.Fatal(err)
	}
	if w.Copied == nil {
		t.Fatal("no report of what was copied")
	}
	for _, f := range w.Copied.Files {
		if strings.HasPrefix(f, worktreesDir) {
			t.Errorf("copied from a worktree: %s", f)
		}
	}
	if !slices.Contains(w.Copied.Files, ".env") {
		t.Errorf("** copied %v, not .env", w.Copied.Files)
	}
	if _, err := os.Lstat(filepath.Join(w.Path, worktreesDir)); err == nil {
		t.Errorf("%s made in the new worktree", worktreesDir)
	}
}

// TestIncludeBounds: past the bounds, files are reported as not copied,
// with the bounds.
func TestIncludeBounds(t *testing.T) {
	repo, _, _ := includeRepo(t)
	write(t, filepath.Join(repo, includeFile), ".env\nbin/\ncache/\n")
	files, size := maxIncludeFiles, maxIncludeBytes
	t.Cleanup(func() { maxIncludeFiles, maxIncludeBytes = files, size })
	maxIncludeFiles, maxIncludeBytes = 3, 12
	w, err := Make(makeCtx(t), repo, "w1", allow)
	if err != nil {
		t.Fatal(err)
	}
	// .env (6 bytes) and bin/private.secret (5) fit; bin/run.sh (19) and
	// cache/a/b/data.bin (7) do not.
	want := []string{
		"cache/a/linked.bin: a file with more than one hard link",
		"2 more file(s) not copied: a worktree gets at most 3 files and 0 MiB",
	}
	if c := w.Copied; c == nil || c.Count != 2 || !slices.Equal(c.Files, []string{".env", "bin/private.secret"}) || !slices.Equal(c.Skipped, want) {
		t.Errorf("copied %+v", c)
	}
	maxIncludeFiles = 1
	w, err = Make(makeCtx(t), repo, "w2", allow)
	if err != nil {
		t.Fatal(err)
	}
	if c := w.Copied; c == nil || c.Count != 1 || len(c.Skipped) != 1 || !strings.HasPrefix(c.Skipped[0], "4 more file(s) not copied") {
		t.Errorf("copied %+v", c)
	}
}

// TestCopyFileRefuses: a path through a link to a directory is refused
// (git lists none, but one may be planted after it listed), so is a named
// pipe (never waited on); a file over
// the bound, or one that grows past it while copied, leaves nothing.
func TestCopyFileRefuses(t *testing.T) {
	repo, _, _ := includeRepo(t)
	dst := t.TempDir()
	c := &Copied{Files: []string{}}
	c.copyAll(makeCtx(t), repo, dst, []string{"linkdir/x.secret", "cache/pipe", "cache/a/"})
	want := []string{
		"linkdir/x.secret: a symbolic link, or reached through one: not followed",
		"cache/pipe: a named pipe, not a regular file",
		"cache/a/: a repository of its own, not copied",
	}
	if c.Count != 0 || !slices.Equal(c.Skipped, want) {
		t.Errorf("copied %d, skipped %q", c.Count, c.Skipped)
	}
	if _, err := copyFile(beneath.Path{Dir: repo, Rel: ".env"}, beneath.Path{Dir: dst, Rel: ".env"}, 3); !errors.Is(err, errOverCap) {
		t.Errorf("a file over the bound: %v", err)
	}
	if n, err := copyFile(beneath.Path{Dir: repo, Rel: ".env"}, beneath.Path{Dir: dst, Rel: ".env"}, 6); err != nil || n != 6 {
		t.Errorf("a file at the bound: %d, %v", n, err)
	}
	grows := &bounded{r: strings.NewReader("0123456789"), left: 4}
	if err := beneath.WriteNewFrom(beneath.Path{Dir: dst, Rel: "grown"}, grows, 0o600); !errors.Is(err, errOverCap) {
		t.Errorf("a file growing past the bound: %v", err)
	}
	if entries, _ := os.ReadDir(dst); len(entries) != 1 || entries[0].Name() != ".env" {
		t.Errorf("left: %v", entries)
	}
}

// TestOutside: which patterns leave the repository.
func TestOutside(t *testing.T) {
	for pattern, out := range map[string]bool{
		".env": false, "/.env": false, "!/build/": false, "a/**/b": false, `\#x`: false, "a..b": false, "..a": false,
		"..": true, "../x": true, "a/../../x": true, "!../x": true, "/repo/x": true, "D:\\x": true, "//srv/x": true, `\\srv\x`: true, "~/x": true,
	} {
		if got := outside("/repo", pattern) != ""; got != out {
			t.Errorf("outside(%q) = %v, want %v", pattern, got, out)
		}
	}
	if got := trimSpaces(`a\  `); got != `a\ ` {
		t.Errorf("trimSpaces = %q", got)
	}
}

package worktree

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// landRepo is a repository on branch main with a.txt and b.txt, made with
// no user git configuration (HOME is empty), and a worktree of it.
func landRepo(t *testing.T) (repo string, w *Worktree, g func(dir string, args ...string) string) {
	t.Helper()
	t.Setenv("HOME", t.TempDir())
	repo = t.TempDir()
	g = func(dir string, args ...string) string {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=u", "-c", "user.email=u@example.com"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	g(repo, "init", "-q", "-b", "main")
	write(t, filepath.Join(repo, "a.txt"), "one\ntwo\nthree\n")
	write(t, filepath.Join(repo, "b.txt"), "bee\n")
	g(repo, "add", ".")
	g(repo, "commit", "-qm", "start")
	var err error
	if w, err = Make(ctxFor(t), repo, "w1", allowAll); err != nil {
		t.Fatal(err)
	}
	if w.From != "main" {
		t.Fatalf("From = %q, want main", w.From)
	}
	return repo, w, g
}

func allowAll(string, string) error { return nil }

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// gone checks that the worktree and its branch were removed.
func gone(t *testing.T, repo string, w *Worktree, g func(string, ...string) string) {
	t.Helper()
	if _, err := os.Stat(w.Path); !os.IsNotExist(err) {
		t.Errorf("the worktree is still at %s (%v)", w.Path, err)
	}
	if b := g(repo, "branch", "--list", w.Branch); b != "" {
		t.Errorf("its branch is still there: %s", b)
	}
}

// TestLandFastForward: committed, uncommitted and untracked work lands on
// main by fast-forward, main's checkout follows, and the user's own
// uncommitted change and staged change there stay byte for byte.
func TestLandFastForward(t *testing.T) {
	repo, w, g := landRepo(t)
	write(t, filepath.Join(w.Path, "a.txt"), "one\ntwo\nthree\nfour\n")
	g(w.Path, "commit", "-qam", "four")
	write(t, filepath.Join(w.Path, "new.txt"), "new\n") // untracked
	write(t, filepath.Join(w.Path, "b.txt"), "bee\nsting\n")
	// The user's own work in main's checkout: b.txt is not theirs to lose
	// either, but the land changes it; so theirs is c.txt, staged, and d.txt.
	write(t, filepath.Join(repo, "b.txt"), "bee\n")
	write(t, filepath.Join(repo, "c.txt"), "staged\n")
	g(repo, "add", "c.txt")
	write(t, filepath.Join(repo, "c.txt"), "staged\nthen changed\n")
	write(t, filepath.Join(repo, "d.txt"), "untracked of the user\n")
	staged := g(repo, "diff", "--cached", "--", "c.txt")

	got, err := w.Land(ctxFor(t), LandOptions{How: FastForward, Check: allowAll})
	if err != nil {
		t.Fatal(err)
	}
	if got.Target != "main" || len(got.Commits) != 2 || got.MessageBy != ByDefault || got.Message == "" || !got.Removed || got.Checkout == "" {
		t.Errorf("Landed = %+v", got)
	}
	if paths := Paths(got.Files); !slices.Equal(paths, []string{"a.txt", "b.txt", "new.txt"}) {
		t.Errorf("files = %v", paths)
	}
	if head := g(repo, "rev-parse", "main"); head != got.Commits[0] {
		t.Errorf("main is at %s, want %s", head, got.Commits[0])
	}
	if s := read(t, filepath.Join(repo, "new.txt")); s != "new\n" {
		t.Errorf("main's checkout did not follow: new.txt %q", s)
	}
	if s := read(t, filepath.Join(repo, "c.txt")); s != "staged\nthen changed\n" {
		t.Errorf("the user's c.txt = %q", s)
	}
	if s := read(t, filepath.Join(repo, "d.txt")); s != "untracked of the user\n" {
		t.Errorf("the user's d.txt = %q", s)
	}
	if s := g(repo, "diff", "--cached", "--", "c.txt"); s != staged {
		t.Errorf("the user's staged change: %q, was %q", s, staged)
	}
	if s := g(repo, "status", "--porcelain", "--", "a.txt", "b.txt", "new.txt"); s != "" {
		t.Errorf("the landed files are not clean in the checkout: %q", s)
	}
	gone(t, repo, w, g)
}

// TestLandMerge: a main that moved is no fast-forward (refused, nothing
// changed); a merge makes a merge commit of both.
func TestLandMerge(t *testing.T) {
	repo, w, g := landRepo(t)
	write(t, filepath.Join(w.Path, "a.txt"), "one\ntwo\nthree\nfour\n")
	write(t, filepath.Join(repo, "b.txt"), "bee\nhive\n")
	g(repo, "commit", "-qam", "hive")
	before := g(repo, "rev-parse", "main")
	_, err := w.Land(ctxFor(t), LandOptions{How: FastForward, Message: "four"})
	if err == nil || !strings.Contains(err.Error(), "use how merge or squash") {
		t.Fatalf("fast-forward of a moved main: %v", err)
	}
	if g(repo, "rev-parse", "main") != before || read(t, filepath.Join(w.Path, "a.txt")) != "one\ntwo\nthree\nfour\n" {
		t.Fatal("a refused land changed something")
	}
	got, err := w.Land(ctxFor(t), LandOptions{How: Merge, Message: "four"})
	if err != nil {
		t.Fatal(err)
	}
	parents := strings.Fields(g(repo, "log", "-1", "--format=%P", "main"))
	if len(parents) != 2 || parents[0] != before || got.MessageBy != ByCaller || got.Message != "four" || len(got.Commits) != 2 {
		t.Errorf("merge: parents %v, landed %+v", parents, got)
	}
	if s := g(repo, "log", "-1", "--format=%s", "main^2"); s != "four" {
		t.Errorf("the work's commit message: %q", s)
	}
	if s := read(t, filepath.Join(repo, "a.txt")) + read(t, filepath.Join(repo, "b.txt")); s != "one\ntwo\nthree\nfour\nbee\nhive\n" {
		t.Errorf("merged files: %q", s)
	}
	gone(t, repo, w, g)
}

// TestLandSquash: the work becomes one commit on main with the message the
// session wrote; a session that cannot write one gets the default.
func TestLandSquash(t *testing.T) {
	repo, w, g := landRepo(t)
	write(t, filepath.Join(w.Path, "x.txt"), "x\n")
	g(w.Path, "add", "x.txt")
	g(w.Path, "commit", "-qm", "x")
	write(t, filepath.Join(w.Path, "y.txt"), "y\n")
	before := g(repo, "rev-parse", "main")
	got, err := w.Land(ctxFor(t), LandOptions{How: Squash, WriteMessage: func(context.Context) (string, error) { return "Add x and y", nil }})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Commits) != 1 || got.MessageBy != BySession || g(repo, "rev-parse", "main^") != before || g(repo, "log", "-1", "--format=%s", "main") != "Add x and y" {
		t.Errorf("squash: %+v; log %s", got, g(repo, "log", "--format=%h %s %p", "main"))
	}
	if g(repo, "show", "main:y.txt") != "y" {
		t.Error("the uncommitted y.txt did not land")
	}
	gone(t, repo, w, g)

	_, w2, _ := landRepoAgain(t, repo)
	write(t, filepath.Join(w2.Path, "z.txt"), "z\n")
	got, err = w2.Land(ctxFor(t), LandOptions{How: Squash, WriteMessage: func(context.Context) (string, error) { return "", errors.New("no turn") }})
	if err != nil || got.MessageBy != ByDefault || got.Message != "Work of worktree-w2" {
		t.Errorf("squash with a message that failed: %+v, %v", got, err)
	}
}

func landRepoAgain(t *testing.T, repo string) (string, *Worktree, error) {
	w, err := Make(ctxFor(t), repo, "w2", allowAll)
	if err != nil {
		t.Fatal(err)
	}
	return repo, w, nil
}

// TestLandConflict: a conflict is found before anything changes, and
// named; the session is not even asked for a message.
func TestLandConflict(t *testing.T) {
	repo, w, g := landRepo(t)
	write(t, filepath.Join(w.Path, "a.txt"), "one\nTWO\nthree\n")
	write(t, filepath.Join(w.Path, "b.txt"), "bee\nfine\n")
	write(t, filepath.Join(repo, "a.txt"), "one\n2\nthree\n")
	g(repo, "commit", "-qam", "2")
	before, wtHead, status := g(repo, "rev-parse", "main"), g(w.Path, "rev-parse", "HEAD"), g(w.Path, "status", "--porcelain")
	asked := false
	for _, how := range []string{Merge, Squash} {
		_, err := w.Land(ctxFor(t), LandOptions{How: how, WriteMessage: func(context.Context) (string, error) { asked = true; return "m", nil }})
		var ce *ConflictError
		if !errors.As(err, &ce) || !slices.Equal(ce.Files, []string{"a.txt"}) || !strings.Contains(err.Error(), "a.txt") || !strings.Contains(err.Error(), "nothing was changed") {
			t.Fatalf("%s with a conflict: %v", how, err)
		}
	}
	if asked {
		t.Error("the session was asked for a message before the conflict was found")
	}
	if g(repo, "rev-parse", "main") != before || g(w.Path, "rev-parse", "HEAD") != wtHead || g(w.Path, "status", "--porcelain") != status {
		t.Errorf("something changed: main %s, worktree %s, status %q", g(repo, "rev-parse", "main"), g(w.Path, "rev-parse", "HEAD"), g(w.Path, "status", "--porcelain"))
	}
	if read(t, filepath.Join(repo, "a.txt")) != "one\n2\nthree\n" {
		t.Error("main's checkout changed")
	}
}

// TestLandLocalChangesKept: a land that would overwrite the user's
// uncommitted change in main's checkout is refused, naming the file, and
// nothing changed: their file, their index, main.
func TestLandLocalChangesKept(t *testing.T) {
	repo, w, g := landRepo(t)
	write(t, filepath.Join(w.Path, "a.txt"), "one\ntwo\nthree\nfour\n")
	write(t, filepath.Join(repo, "a.txt"), "mine, not committed\n")
	write(t, filepath.Join(repo, "b.txt"), "bee staged\n")
	g(repo, "add", "b.txt")
	index := g(repo, "ls-files", "--stage")
	before := g(repo, "rev-parse", "main")
	for _, how := range []string{FastForward, Merge, Squash} {
		_, err := w.Land(ctxFor(t), LandOptions{How: how, Message: "four"})
		if err == nil || !strings.Contains(err.Error(), "a.txt") || !strings.Contains(err.Error(), "nothing was changed") {
			t.Fatalf("%s over a local change: %v", how, err)
		}
	}
	if read(t, filepath.Join(repo, "a.txt")) != "mine, not committed\n" || g(repo, "rev-parse", "main") != before {
		t.Error("the user's change or main changed")
	}
	if g(repo, "diff", "--cached", "--name-only") != "b.txt" || g(repo, "ls-files", "--stage") != index {
		t.Error("the user's index changed")
	}
	if _, err := os.Stat(w.Path); err != nil {
		t.Errorf("the worktree is gone after a refused land: %v", err)
	}
}

// TestLandBranchMoved: a branch that moves between the plan and its
// apply is refused by the ref's expected value, nothing changed.
func TestLandBranchMoved(t *testing.T) {
	repo, w, g := landRepo(t)
	write(t, filepath.Join(w.Path, "new.txt"), "new\n")
	ctx := ctxFor(t)
	s, err := w.snap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p, err := w.plan(ctx, Merge, "main", s, "m")
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(repo, "b.txt"), "moved\n")
	g(repo, "commit", "-qam", "moved")
	moved := g(repo, "rev-parse", "main")
	common, _ := commonDir(ctx, repo)
	_, err = w.apply(ctx, p, common, allowAll)
	if !errors.Is(err, ErrMoved) || !strings.Contains(err.Error(), "land again") {
		t.Fatalf("apply of a stale plan: %v", err)
	}
	if g(repo, "rev-parse", "main") != moved || read(t, filepath.Join(repo, "b.txt")) != "moved\n" {
		t.Error("something changed")
	}
	if _, err := os.Stat(filepath.Join(repo, "new.txt")); !os.IsNotExist(err) {
		t.Error("the checkout got the land's file")
	}
}

// TestLandDiscard removes the worktree and its branch; main is as it was.
func TestLandDiscard(t *testing.T) {
	repo, w, g := landRepo(t)
	write(t, filepath.Join(w.Path, "a.txt"), "gone\n")
	write(t, filepath.Join(w.Path, ".env"), "ignored or not, removed\n")
	before := g(repo, "rev-parse", "main")
	got, err := w.Land(ctxFor(t), LandOptions{How: Discard})
	if err != nil || !got.Removed {
		t.Fatalf("discard: %+v, %v", got, err)
	}
	if g(repo, "rev-parse", "main") != before || read(t, filepath.Join(repo, "a.txt")) != "one\ntwo\nthree\n" {
		t.Error("main changed")
	}
	gone(t, repo, w, g)
	if _, err := w.Land(ctxFor(t), LandOptions{How: "rebase"}); err == nil || !strings.Contains(err.Error(), "fast-forward, merge, squash, pull-request, discard") {
		t.Errorf("a bad how: %v", err)
	}
}

// TestLandNoLinkFollowed: a link the session planted in its worktree lands
// as a link (never the file it points to), in the diff and in main's
// checkout, and the repository's programs (hooks, filters) never run.
func TestLandNoLinkFollowed(t *testing.T) {
	repo, markers := hostileRepo(t)
	secret := filepath.Join(t.TempDir(), "secret")
	write(t, secret, "the server user's secret\n")
	w, err := Make(ctxFor(t), repo, "w1", allowAll)
	if err != nil {
		t.Fatal(err)
	}
	from, _ := git(ctxFor(t), repo, nil, "symbolic-ref", "--short", "HEAD")
	if err := os.Symlink(secret, filepath.Join(w.Path, "leak")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(secret), filepath.Join(w.Path, "dir")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(w.Path, "a.txt"), "hello\nmore\n")
	d, err := w.Diff(ctxFor(t))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(d.Patch, "the server user's secret") || !strings.Contains(d.Patch, "new file mode 120000") {
		t.Errorf("the diff followed a link, or does not show it as one:\n%s", d.Patch)
	}
	got, err := w.Land(ctxFor(t), LandOptions{How: Squash, Message: "links"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Target != from {
		t.Errorf("target %q, want %q", got.Target, from)
	}
	for _, name := range []string{"leak", "dir"} {
		fi, err := os.Lstat(filepath.Join(repo, name))
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s in the checkout: %v, %v (want a link)", name, fi, err)
		}
	}
	if s := read(t, secret); s != "the server user's secret\n" {
		t.Errorf("the link's target changed: %q", s)
	}
	noMarkers(t, markers)
}

// TestDiff: the summary and the patch have committed, uncommitted and
// untracked changes, not ignored files; the worktree's index is untouched.
func TestDiff(t *testing.T) {
	_, w, g := landRepo(t)
	write(t, filepath.Join(w.Path, ".gitignore"), "*.log\n")
	g(w.Path, "add", ".gitignore")
	g(w.Path, "commit", "-qm", "ignore logs")
	write(t, filepath.Join(w.Path, "a.txt"), "one\n2\nthree\n")
	write(t, filepath.Join(w.Path, "n.txt"), "n1\nn2\n")
	write(t, filepath.Join(w.Path, "x.log"), "ignored\n")
	if err := os.Remove(filepath.Join(w.Path, "b.txt")); err != nil {
		t.Fatal(err)
	}
	status := g(w.Path, "status", "--porcelain")
	d, err := w.Diff(ctxFor(t))
	if err != nil {
		t.Fatal(err)
	}
	want := []FileChange{{".gitignore", 1, 0, false}, {"a.txt", 1, 1, false}, {"b.txt", 0, 1, false}, {"n.txt", 2, 0, false}}
	if !slices.Equal(d.Files, want) {
		t.Errorf("files %+v, want %+v", d.Files, want)
	}
	for _, s := range []string{"-two\n+2\n", "+n2\n", "deleted file mode"} {
		if !strings.Contains(d.Patch, s) {
			t.Errorf("the patch lacks %q:\n%s", s, d.Patch)
		}
	}
	if strings.Contains(d.Patch, "x.log") {
		t.Error("an ignored file is in the diff")
	}
	if g(w.Path, "status", "--porcelain") != status {
		t.Error("reading the diff changed the worktree's status")
	}
}

// TestLandOutsideRoots: a repository the policy no longer lets the server
// write is refused by Check, for every how, before anything changed.
func TestLandOutsideRoots(t *testing.T) {
	repo, w, g := landRepo(t)
	write(t, filepath.Join(w.Path, "x.txt"), "x\n")
	before := g(repo, "rev-parse", "main")
	deny := func(what, path string) error { return errors.New(what + " " + path + " is outside the allowed roots") }
	for _, how := range Hows {
		if _, err := w.Land(ctxFor(t), LandOptions{How: how, Message: "m", Check: deny}); err == nil || !strings.Contains(err.Error(), "outside the allowed roots") {
			t.Errorf("%s outside the roots: %v", how, err)
		}
	}
	if g(repo, "rev-parse", "main") != before || read(t, filepath.Join(w.Path, "x.txt")) != "x\n" {
		t.Error("a refused land changed something")
	}
}

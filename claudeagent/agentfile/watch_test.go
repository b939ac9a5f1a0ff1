package agentfile

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/leakcheck"
)

// waitLimit bounds a wait for something that should happen; reaching it
// fails the test.
const waitLimit = 10 * time.Second

// recorder collects a watcher's callbacks.
type recorder chan *Set

func (r recorder) onChange(s *Set) { r <- s }

// none fails if a callback came.
func (r recorder) none(t *testing.T) {
	t.Helper()
	select {
	case s := <-r:
		t.Fatalf("unexpected callback with %q", summary(s))
	default:
	}
}

// next returns the callback that came, failing after waitLimit.
func (r recorder) next(t *testing.T) *Set {
	t.Helper()
	select {
	case s := <-r:
		return s
	case <-time.After(waitLimit):
		t.Fatal("no callback")
		return nil
	}
}

// TestWatcherRescan drives the scans by hand: a callback for each change,
// none without one.
func TestWatcherRescan(t *testing.T) {
	before := leakcheck.Take()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.md"), agentMD("a", "one"))
	rec := make(recorder, 10)
	never := make(chan time.Time)
	w := NewWatcher(Config{Sources: Sources(SourceUser), UserDir: dir}, WatchOptions{Tick: never}, rec.onChange)

	if got := summary(w.Set()); !slices.Equal(got, []string{"a=one (user)"}) {
		t.Errorf("first set %q", got)
	}
	rec.none(t) // not for the first scan
	steps := []struct {
		name   string
		change func()
		want   []string // nil: no callback
	}{
		{"nothing changed", func() {}, nil},
		{"a file added", func() { writeFile(t, filepath.Join(dir, "b.md"), agentMD("b", "two")) }, []string{"a=one (user)", "b=two (user)"}},
		{"a file changed", func() { writeFile(t, filepath.Join(dir, "a.md"), agentMD("a", "ONE")) }, []string{"a=ONE (user)", "b=two (user)"}},
		{"a file touched", func() {
			now := time.Now()
			if err := os.Chtimes(filepath.Join(dir, "a.md"), now, now); err != nil {
				t.Fatal(err)
			}
		}, nil},
		{"a file of another kind added", func() { writeFile(t, filepath.Join(dir, "notes.txt"), "x") }, nil},
		{"a file removed", func() {
			if err := os.Remove(filepath.Join(dir, "b.md")); err != nil {
				t.Fatal(err)
			}
		}, []string{"a=ONE (user)"}},
		{"nothing changed again", func() {}, nil},
	}
	for _, st := range steps {
		st.change()
		changed := w.Rescan()
		if changed != (st.want != nil) {
			t.Errorf("%s: Rescan = %v", st.name, changed)
		}
		if st.want == nil {
			rec.none(t)
			continue
		}
		s := rec.next(t)
		if got := summary(s); !slices.Equal(got, st.want) {
			t.Errorf("%s: callback with %q, want %q", st.name, got, st.want)
		}
		if w.Set() != s {
			t.Errorf("%s: Set is not the set of the callback", st.name)
		}
	}

	w.Close()
	w.Close() // twice is fine
	if w.Rescan() {
		t.Error("Rescan after Close reported a change")
	}
	before.Check(t, 5*time.Second)
}

// TestWatcherWarningsChange: a file that breaks differently is a change
// too: the warnings are part of the set.
func TestWatcherWarningsChange(t *testing.T) {
	before := leakcheck.Take()
	dir := t.TempDir()
	path := filepath.Join(dir, "a.md")
	writeFile(t, path, "---\nname: a\n")
	rec := make(recorder, 10)
	w := NewWatcher(Config{Sources: Sources(SourceUser), UserDir: dir}, WatchOptions{Tick: make(chan time.Time)}, rec.onChange)
	defer before.Check(t, 5*time.Second)
	defer w.Close()
	if ws := w.Set().Warnings; len(ws) != 1 {
		t.Fatalf("warnings %q", warningTexts(ws))
	}
	writeFile(t, path, "---\nname: a\n---\nbody\n")
	if !w.Rescan() {
		t.Fatal("no change")
	}
	s := rec.next(t)
	if len(s.Agents) != 0 || len(s.Warnings) != 1 || s.Warnings[0].Line != 1 || s.Warnings[0].Text != `skipped: missing required field "description"` {
		t.Errorf("agents %q, warnings %q", summary(s), warningTexts(s.Warnings))
	}
}

// TestWatcherTicks: the watcher's goroutine scans at each tick.
func TestWatcherTicks(t *testing.T) {
	before := leakcheck.Take()
	dir := t.TempDir()
	rec := make(recorder, 10)
	tick := make(chan time.Time)
	w := NewWatcher(Config{Sources: Sources(SourceDirs), Dirs: []string{dir}}, WatchOptions{Tick: tick}, rec.onChange)
	writeFile(t, filepath.Join(dir, "a.md"), agentMD("a", "one"))
	tick <- time.Now() // received by the goroutine, which then scans
	if got := summary(rec.next(t)); !slices.Equal(got, []string{"a=one (dirs)"}) {
		t.Errorf("callback with %q", got)
	}
	tick <- time.Now()
	tick <- time.Now() // the previous scan has ended: nothing changed
	rec.none(t)
	w.Close()
	before.Check(t, 5*time.Second)
}

// TestWatcherInterval: with no tick channel, a ticker drives the scans, and
// Close stops it and the goroutine.
func TestWatcherInterval(t *testing.T) {
	before := leakcheck.Take()
	dir := t.TempDir()
	rec := make(recorder, 10)
	w := NewWatcher(Config{Sources: Sources(SourceDirs), Dirs: []string{dir}}, WatchOptions{Interval: time.Millisecond}, rec.onChange)
	writeFile(t, filepath.Join(dir, "a.md"), agentMD("a", "one"))
	if got := summary(rec.next(t)); !slices.Equal(got, []string{"a=one (dirs)"}) {
		t.Errorf("callback with %q", got)
	}
	w.Close()
	rec.none(t)
	before.Check(t, 5*time.Second)
}

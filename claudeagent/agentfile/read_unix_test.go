//go:build unix

package agentfile

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// loadDeadline bounds a load that must not block: a load still running
// then fails the test instead of hanging it.
const loadDeadline = 30 * time.Second

// scanWithin runs scan and returns its set, failing the test when it has
// not returned within loadDeadline.
func scanWithin(t *testing.T, scan func() *Set) *Set {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), loadDeadline)
	defer cancel()
	done := make(chan *Set, 1)
	go func() { done <- scan() }()
	select {
	case s := <-done:
		return s
	case <-ctx.Done():
		t.Fatalf("the load has not returned after %v: blocked on a file", loadDeadline)
		return nil
	}
}

// mkfifo makes a named pipe; the test's cleanup opens it for writing, so
// that a reader blocked on it (the old code) ends.
func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// TestLoadFileReplacedAfterListing: an agent file replaced, between the
// listing of its directory and its read, by a symbolic link (to a named
// pipe, to /dev/zero, to another agent file) or by a named pipe is not
// read: one warning names it, the load returns at once and the other
// files are read. (Before, a named pipe blocked the watcher for ever and
// /dev/zero ran the server out of memory.)
func TestLoadFileReplacedAfterListing(t *testing.T) {
	for _, tc := range []struct {
		name    string
		replace func(t *testing.T, path, elsewhere string)
		want    string
	}{
		{"link to a named pipe", func(t *testing.T, path, elsewhere string) {
			fifo := filepath.Join(elsewhere, "pipe")
			mkfifo(t, fifo)
			symlink(t, fifo, path)
		}, "not read: replaced by a symbolic link since it was listed; not followed"},
		{"link to /dev/zero", func(t *testing.T, path, _ string) {
			symlink(t, "/dev/zero", path)
		}, "not read: replaced by a symbolic link since it was listed; not followed"},
		{"link to an agent file", func(t *testing.T, path, elsewhere string) {
			other := filepath.Join(elsewhere, "other.md")
			writeFile(t, other, agentMD("other", "read through a link"))
			symlink(t, other, path)
		}, "not read: replaced by a symbolic link since it was listed; not followed"},
		{"named pipe", func(t *testing.T, path, _ string) {
			mkfifo(t, path)
		}, "not read: a named pipe, not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, elsewhere := t.TempDir(), t.TempDir()
			swapped := filepath.Join(dir, "a.md")
			writeFile(t, swapped, agentMD("a", "listed"))
			writeFile(t, filepath.Join(dir, "b.md"), agentMD("b", "kept"))
			sc := newScanner()
			sc.listed = func(string) {
				if err := os.Remove(swapped); err != nil {
					t.Error(err)
				}
				tc.replace(t, swapped, elsewhere)
			}
			got := scanWithin(t, func() *Set { return sc.scan(Config{Sources: Sources(SourceDirs), Dirs: []string{dir}}) })
			if want := []string{"b=kept (dirs)"}; !slices.Equal(summary(got), want) {
				t.Errorf("agents %q, want %q", summary(got), want)
			}
			if ws, want := warningTexts(got.Warnings), swapped+": "+tc.want; !slices.Equal(ws, []string{want}) {
				t.Errorf("warnings %q, want [%q]", ws, want)
			}
		})
	}
}

// TestLoadOperatorFileNotRegular: an operator file that is a named pipe, a
// device or a directory, directly or through a symbolic link (links are
// followed for the operator's own path), is not read: a warning names it
// and the load returns at once.
func TestLoadOperatorFileNotRegular(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(t *testing.T, path string)
		want string
	}{
		{"named pipe", func(t *testing.T, path string) { mkfifo(t, path) }, "not read: a named pipe, not a regular file"},
		{"link to a named pipe", func(t *testing.T, path string) {
			mkfifo(t, path+".pipe")
			symlink(t, path+".pipe", path)
		}, "not read: a named pipe, not a regular file"},
		{"link to /dev/zero", func(t *testing.T, path string) { symlink(t, "/dev/zero", path) }, "not read: a device, not a regular file"},
		{"directory", func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o755); err != nil {
				t.Fatal(err)
			}
		}, "not read: a directory, not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "agents.yaml")
			tc.make(t, file)
			got := scanWithin(t, func() *Set { return Load(Config{Sources: Sources(SourceFile), File: file}) })
			if ws, want := warningTexts(got.Warnings), file+": "+tc.want; len(got.Agents) != 0 || !slices.Equal(ws, []string{want}) {
				t.Errorf("agents %q, warnings %q; want none and [%q]", summary(got), ws, want)
			}
		})
	}
}

// TestLoadThroughLinks: symbolic links resolved when listed are followed
// within the agents directory, as a Kubernetes ConfigMap's files are links
// to ..data/ beside them (an agent file that is a link, in a directory
// that is a link), and an operator file that is a link; a link out of the
// agents directory, which a session may have planted there, is not
// followed, nor is one that leaves it through another link.
func TestLoadThroughLinks(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "agents")
	writeFile(t, filepath.Join(dir, "..data", "a.txt"), agentMD("a", "linked file"))
	writeFile(t, filepath.Join(dir, "..data", "sub", "b.md"), agentMD("b", "linked directory"))
	writeFile(t, filepath.Join(root, "data", "ops.yaml"), "c: {description: linked operator file, prompt: p}\n")
	writeFile(t, filepath.Join(root, "outside", "x.md"), agentMD("x", "outside the directory"))
	symlink(t, filepath.Join("..data", "a.txt"), filepath.Join(dir, "a.md"))
	symlink(t, filepath.Join(dir, "..data", "sub"), filepath.Join(dir, "sub"))
	symlink(t, filepath.Join(root, "data", "ops.yaml"), filepath.Join(root, "ops.yaml"))
	symlink(t, filepath.Join(root, "outside", "x.md"), filepath.Join(dir, "x.md"))
	symlink(t, filepath.Join(root, "outside"), filepath.Join(dir, "..data", "out"))
	got := Load(Config{Sources: Sources(SourceDirs | SourceFile), Dirs: []string{dir}, File: filepath.Join(root, "ops.yaml")})
	want := []string{"a=linked file (dirs)", "b=linked directory (dirs)", "c=linked operator file (file)"}
	out := "not read: a symbolic link out of the agents directory; not followed (a session may write there)"
	wantWarns := []string{filepath.Join(dir, "..data", "out") + ": " + out, filepath.Join(dir, "x.md") + ": " + out}
	if ws := warningTexts(got.Warnings); !slices.Equal(summary(got), want) || !slices.Equal(ws, wantWarns) {
		t.Errorf("agents %q, warnings %q; want %q and %q", summary(got), ws, want, wantWarns)
	}
	if a := got.Lookup("b"); a == nil || (a.Path != filepath.Join(dir, "sub", "b.md") && a.Path != filepath.Join(dir, "..data", "sub", "b.md")) {
		t.Errorf("b's path: %+v, want a listed one", a)
	}
}

// TestReadCapped: a file is read up to MaxFileBytes, however much more it
// holds (it may grow after its size was read).
func TestReadCapped(t *testing.T) {
	if _, err := readCapped(strings.NewReader(strings.Repeat("a", 11)), 10); err != errTooLarge {
		t.Errorf("11 bytes under a cap of 10: %v, want errTooLarge", err)
	}
	if data, err := readCapped(strings.NewReader(strings.Repeat("a", 10)), 10); err != nil || len(data) != 10 {
		t.Errorf("10 bytes under a cap of 10: %d bytes, %v", len(data), err)
	}
	f, err := os.Open("/dev/zero")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := readCapped(f, MaxFileBytes); err != errTooLarge {
		t.Errorf("/dev/zero: %v, want errTooLarge", err)
	}
	if !strings.Contains(errTooLarge.Error(), "1048576 bytes") {
		t.Errorf("the cap's error %q does not name the cap", errTooLarge)
	}
}

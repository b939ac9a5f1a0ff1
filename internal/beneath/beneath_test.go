//go:build unix

package beneath

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/iotest"
)

// plant puts what at dir/rel: a link to target, a named pipe, a
// directory, a hard link to target, or a regular file.
func plant(t *testing.T, dir, rel, what, target string) {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	var err error
	switch what {
	case "symlink":
		err = os.Symlink(target, p)
	case "fifo":
		err = syscall.Mkfifo(p, 0o600)
	case "dir":
		err = os.Mkdir(p, 0o700)
	case "hardlink":
		err = os.Link(target, p)
	case "file":
		err = os.WriteFile(p, []byte("mine"), 0o600)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestOpenRefuses plants a link, a named pipe, a directory and a hard
// link at the file and on the way to it: nothing outside is read, nothing
// blocks, and each refusal says what it met.
func TestOpenRefuses(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(outside, []byte("SECRET"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, rel, what, target string
		want                    error
	}{
		{"link at the file", "a/b.jsonl", "symlink", outside, ErrLink},
		{"link on the way", "a", "symlink", filepath.Dir(outside), ErrLink},
		{"relative link", "a/b.jsonl", "symlink", "../../../../../../../../" + outside, ErrLink},
		{"named pipe", "a/b.jsonl", "fifo", "", ErrNotRegular},
		{"directory", "a/b.jsonl", "dir", "", ErrNotRegular},
		{"hard link", "a/b.jsonl", "hardlink", outside, ErrLinked},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			plant(t, dir, tc.rel, tc.what, tc.target)
			p := Path{Dir: dir, Rel: "a/b.jsonl"}
			if tc.what == "symlink" && tc.rel == "a" {
				// The file beyond the link exists: only the link refuses it.
				if err := os.WriteFile(filepath.Join(filepath.Dir(outside), "b.jsonl"), []byte("SECRET"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			data, err := ReadFile(p, 1<<20)
			if !errors.Is(err, tc.want) {
				t.Fatalf("ReadFile = %q, %v; want %v", data, err, tc.want)
			}
			var pe *fs.PathError
			if !errors.As(err, &pe) || pe.Path != p.String() {
				t.Errorf("the error %v does not name %s", err, p)
			}
		})
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	plant(t, dir, "x/y/z.txt", "file", "")
	data, err := ReadFile(Path{Dir: dir, Rel: "x/y/z.txt"}, 4)
	if err != nil || string(data) != "mine" {
		t.Fatalf("ReadFile = %q, %v", data, err)
	}
	if _, err := ReadFile(Path{Dir: dir, Rel: "x/y/z.txt"}, 3); !errors.Is(err, ErrTooLarge) {
		t.Errorf("over the cap: %v, want ErrTooLarge", err)
	}
	if _, err := ReadFile(Path{Dir: dir, Rel: "x/nope"}, 3); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %v, want fs.ErrNotExist", err)
	}
	for _, rel := range []string{"../x/y/z.txt", "/etc/passwd", "", "x/../../y"} {
		if _, err := ReadFile(Path{Dir: dir, Rel: rel}, 10); !errors.Is(err, ErrEscape) {
			t.Errorf("%q: %v, want ErrEscape", rel, err)
		}
	}
	// The directory itself may be a link: the operator's choice.
	link := filepath.Join(t.TempDir(), "config")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if data, err := ReadFile(Path{Dir: link, Rel: "x/y/z.txt"}, 10); err != nil || string(data) != "mine" {
		t.Errorf("through a linked directory: %q, %v", data, err)
	}
}

// TestWriteNewRefuses plants each kind of file where a write goes, and on
// the way: the write fails, the target outside keeps its bytes, and no
// temporary file is left.
func TestWriteNewRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, rel, what string
		want            error
	}{
		{"link at the file", "p/t.jsonl", "symlink", fs.ErrExist},
		{"link on the way", "p", "symlink", ErrLink},
		{"named pipe", "p/t.jsonl", "fifo", fs.ErrExist},
		{"directory", "p/t.jsonl", "dir", fs.ErrExist},
		{"a file", "p/t.jsonl", "file", fs.ErrExist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, out := t.TempDir(), t.TempDir()
			victim := filepath.Join(out, "t.jsonl")
			if err := os.WriteFile(victim, []byte("KEEP"), 0o600); err != nil {
				t.Fatal(err)
			}
			target := victim
			if tc.rel == "p" {
				target = out
			}
			plant(t, dir, tc.rel, tc.what, target)
			err := WriteNew(Path{Dir: dir, Rel: "p/t.jsonl"}, []byte("HOSTILE"), 0o600)
			if !errors.Is(err, tc.want) {
				t.Fatalf("WriteNew = %v, want %v", err, tc.want)
			}
			if b, _ := os.ReadFile(victim); string(b) != "KEEP" {
				t.Errorf("the file outside holds %q", b)
			}
			left, _ := filepath.Glob(filepath.Join(dir, "p", ".*.part"))
			if len(left) > 0 {
				t.Errorf("left behind: %v", left)
			}
		})
	}
}

func TestWriteNew(t *testing.T) {
	dir := t.TempDir()
	p := Path{Dir: dir, Rel: "projects/-x/id.jsonl"}
	if ok, err := Exists(p); ok || err != nil {
		t.Fatalf("Exists before = %v, %v", ok, err)
	}
	if err := WriteNew(p, []byte("line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(p.String())
	if err != nil || fi.Mode().Perm() != 0o600 || !fi.Mode().IsRegular() {
		t.Fatalf("written: %v, %v", fi, err)
	}
	if ok, err := Exists(p); !ok || err != nil {
		t.Errorf("Exists after = %v, %v", ok, err)
	}
	if data, err := ReadFile(p, 100); err != nil || string(data) != "line\n" {
		t.Errorf("read back %q, %v", data, err)
	}
	if err := WriteNew(p, []byte("again"), 0o600); !errors.Is(err, fs.ErrExist) {
		t.Errorf("a second write: %v, want fs.ErrExist", err)
	}
	// A dangling link is something: Exists says so, and nothing is
	// written through it.
	link := Path{Dir: dir, Rel: "projects/-x/l.jsonl"}
	if err := os.Symlink(filepath.Join(dir, "nowhere"), link.String()); err != nil {
		t.Fatal(err)
	}
	if ok, err := Exists(link); !ok || err != nil {
		t.Errorf("Exists of a dangling link = %v, %v", ok, err)
	}
	if _, err := Exists(Path{Dir: dir, Rel: "projects/-x/l.jsonl/more"}); err == nil {
		t.Error("a path through a link exists")
	}
}

// TestWriteNewFrom: a file is written from a reader, with its mode; a
// reader's error leaves nothing behind, neither the file nor its fresh
// name.
func TestWriteNewFrom(t *testing.T) {
	dir := t.TempDir()
	p := Path{Dir: dir, Rel: "a/b/run.sh"}
	if err := WriteNewFrom(p, strings.NewReader("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(p.String()); err != nil || fi.Mode().Perm()&0o100 == 0 {
		t.Errorf("written: %v, %v", fi, err)
	}
	if b, _ := os.ReadFile(p.String()); string(b) != "#!/bin/sh\n" {
		t.Errorf("read back %q", b)
	}
	failed := errors.New("the source failed")
	q := Path{Dir: dir, Rel: "a/b/half"}
	if err := WriteNewFrom(q, io.MultiReader(strings.NewReader("some"), iotest.ErrReader(failed)), 0o600); !errors.Is(err, failed) {
		t.Errorf("a failing reader: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "a", "b")); len(entries) != 1 {
		t.Errorf("left behind: %v", entries)
	}
}

// TestWriteMakesDir: the server's directory itself may be missing (a
// fresh HOME whose .claude no CLI has made yet): a write or a MkdirAll
// makes it, and a read says the file is not there.
func TestWriteMakesDir(t *testing.T) {
	home := t.TempDir()
	p := Path{Dir: filepath.Join(home, ".claude"), Rel: "projects/-x/id.jsonl"}
	if _, err := ReadFile(p, 100); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("read with no directory: %v, want fs.ErrNotExist", err)
	}
	if err := WriteNew(p, []byte("line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if data, err := ReadFile(p, 100); err != nil || string(data) != "line\n" {
		t.Errorf("read back %q, %v", data, err)
	}
	q := Path{Dir: filepath.Join(home, "other"), Rel: "projects/-y"}
	if err := MkdirAll(q); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(q.String()); err != nil || !fi.IsDir() {
		t.Errorf("made: %v, %v", fi, err)
	}
	r := Path{Dir: filepath.Join(home, "third"), Rel: "id.jsonl"}
	if err := Replace(r, []byte("x"), 0o600); err != nil {
		t.Errorf("replace with no directory: %v", err)
	}
}

func TestMkdirAll(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	if err := MkdirAll(Path{Dir: dir, Rel: "projects/-a-b"}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "projects", "-a-b")); err != nil || !fi.IsDir() {
		t.Fatalf("made: %v, %v", fi, err)
	}
	if err := MkdirAll(Path{Dir: dir, Rel: "projects/-a-b"}); err != nil {
		t.Errorf("again: %v", err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "projects", "l")); err != nil {
		t.Fatal(err)
	}
	if err := MkdirAll(Path{Dir: dir, Rel: "projects/l/x"}); !errors.Is(err, ErrLink) {
		t.Errorf("through a link: %v", err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("made outside: %v", entries)
	}
}

// TestReplace: a file, or a link planted at the name, is replaced (the
// link's target keeps its bytes); a directory there is an error.
func TestReplace(t *testing.T) {
	dir, out := t.TempDir(), t.TempDir()
	victim := filepath.Join(out, "v")
	if err := os.WriteFile(victim, []byte("KEEP"), 0o600); err != nil {
		t.Fatal(err)
	}
	plant(t, dir, "p/t.jsonl", "symlink", victim)
	p := Path{Dir: dir, Rel: "p/t.jsonl"}
	if err := Replace(p, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "KEEP" {
		t.Errorf("written through the link: %q", b)
	}
	if fi, err := os.Lstat(p.String()); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("after: %v, %v", fi, err)
	}
	if err := Replace(p, []byte("newer"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p.String()); string(b) != "newer" {
		t.Errorf("replaced: %q", b)
	}
	plant(t, dir, "p/d", "dir", "")
	if err := Replace(Path{Dir: dir, Rel: "p/d"}, []byte("x"), 0o600); err == nil {
		t.Error("a directory was replaced")
	}
	left, _ := filepath.Glob(filepath.Join(dir, "p", ".*.part"))
	if len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

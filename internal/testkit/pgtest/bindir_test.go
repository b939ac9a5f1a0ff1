package pgtest

import (
	"os"
	"path/filepath"
	"testing"
)

// TestBinDir: PGTEST_BIN wins, then the initdb on PATH (through its
// links: postgres is beside the real one); the versions of
// the distributions' directories are read from their paths.
func TestBinDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "initdb"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PGTEST_BIN", "")
	t.Setenv("PATH", dir)
	if got := BinDir(); got != dir {
		t.Errorf("with initdb on PATH: BinDir() = %q, want %q", got, dir)
	}
	links := t.TempDir() // as /usr/local/bin/initdb -> /usr/lib/postgresql/15/bin/initdb
	if err := os.Symlink(filepath.Join(dir, "initdb"), filepath.Join(links, "initdb")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", links)
	if got := BinDir(); got != dir {
		t.Errorf("with a link to initdb on PATH: BinDir() = %q, want the real initdb's %q", got, dir)
	}
	t.Setenv("PGTEST_BIN", "/somewhere/bin")
	if got := BinDir(); got != "/somewhere/bin" {
		t.Errorf("with PGTEST_BIN: BinDir() = %q", got)
	}
	for path, want := range map[string]int{"/usr/lib/postgresql/15/bin": 15, "/usr/pgsql-16/bin": 16,
		"/opt/homebrew/opt/postgresql@17/bin": 17, "/usr/local/pgsql/bin": 0} {
		if got := version(path); got != want {
			t.Errorf("version(%q) = %d, want %d", path, got, want)
		}
	}
}

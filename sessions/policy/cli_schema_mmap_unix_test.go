//go:build unix

package policy

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// mapFile maps the file at path read-only for the test: a CLI binary of
// hundreds of megabytes is read through the page cache, not copied.
func mapFile(t *testing.T, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_PRIVATE)
	if err != nil {
		t.Fatalf("mapping %s: %v", path, err)
	}
	t.Cleanup(func() { _ = unix.Munmap(data) })
	return data
}

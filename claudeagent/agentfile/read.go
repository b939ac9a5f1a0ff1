package agentfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
)

// Reading files safely: a file listed as a regular file may be replaced by
// anything before it is read (a symbolic link to a named pipe or to
// /dev/zero, a named pipe itself). Files are opened without following a
// link in their last component and without blocking, their descriptor's
// metadata decides (regular files only), and they are read up to
// MaxFileBytes.

// errSymlink is an open's refusal of a symbolic link: links are resolved
// when a directory is listed (or, for the operator file, just before the
// open), so one found at the open appeared since.
var errSymlink = errors.New("replaced by a symbolic link since it was listed; not followed")

// errTooLarge is a file over MaxFileBytes.
var errTooLarge = fmt.Errorf("larger than %d bytes, the cap of an agent file or the operator file", MaxFileBytes)

// openRegular opens path (its links already resolved) with openNoFollow
// and returns it with its metadata, read from the open descriptor, when it
// is a regular file; else an error saying what it is.
func openRegular(path string) (*os.File, fs.FileInfo, error) {
	f, err := openNoFollow(path)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = notRegular(fi.Mode())
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// notRegular says what a file that is not a regular file is.
func notRegular(m fs.FileMode) error {
	switch {
	case m.IsDir():
		return errors.New("a directory")
	case m&fs.ModeNamedPipe != 0:
		return errors.New("a named pipe, not a regular file")
	case m&fs.ModeDevice != 0:
		return errors.New("a device, not a regular file")
	case m&fs.ModeSocket != 0:
		return errors.New("a socket, not a regular file")
	}
	return errors.New("not a regular file")
}

// readCapped reads r to its end, at most limit bytes: errTooLarge when
// there is more (a file may grow after its size was read).
func readCapped(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, errTooLarge
	}
	return data, nil
}

// readDirNoBlock lists a directory, sorted by name, as os.ReadDir does,
// but opened with openDir: a named pipe put in its place is not waited on.
func readDirNoBlock(dir string) ([]fs.DirEntry, error) {
	f, err := openDir(dir)
	if err != nil {
		return nil, err
	}
	entries, err := f.ReadDir(-1)
	f.Close()
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, err
}

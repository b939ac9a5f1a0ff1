// Package beneath opens files that a session may have written, on behalf
// of the server, which runs with none of the session's ceilings. A session
// is a hostile tenant: where it may write (its CLI config directory, its
// working directory, a worktree) it may plant a symbolic link to any file
// of the server's user, a named pipe that blocks an open, a directory, or
// a hard link to another tenant's file. So every such file is named by a
// [Path]: a directory the server chose (it may itself be a link, the
// operator's choice) and a relative name beneath it, which is walked one
// component at a time, each opened without following a link (O_NOFOLLOW
// from the descriptor of the one before, never from a path string), so
// nothing outside the directory is reached and no link is followed on the
// way; a file opened must be a regular file (told by its descriptor, the
// open never blocks), with one link, and is read up to a cap; a file
// written is created exclusively under a fresh name and moved into a place
// where nothing is.
//
// It knows files and nothing of sessions.
package beneath

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Path is a file beneath a directory: Dir is opened as it is named (the
// server's choice), Rel is walked without following links.
type Path struct {
	Dir string
	Rel string
}

// String is the whole path, for messages and logs.
func (p Path) String() string {
	if p.Dir == "" && p.Rel == "" {
		return ""
	}
	return filepath.Join(p.Dir, p.Rel)
}

// IsZero reports whether p names no file.
func (p Path) IsZero() bool { return p.Dir == "" || p.Rel == "" }

// Errors of an open or a write beneath a directory; each wraps what the
// caller may branch on.
var (
	// ErrLink is a symbolic link met on the way or at the end.
	ErrLink = errors.New("a symbolic link, not followed")
	// ErrNotRegular is a file that is not a regular file (a directory, a
	// named pipe, a device, a socket).
	ErrNotRegular = errors.New("not a regular file")
	// ErrLinked is a regular file with more than one hard link: it may be
	// another file's second name.
	ErrLinked = errors.New("a file with more than one hard link")
	// ErrTooLarge is a file over the reader's cap.
	ErrTooLarge = errors.New("larger than the cap")
	// ErrEscape is a relative name that leaves its directory ("..", an
	// absolute path).
	ErrEscape = errors.New("not a name beneath its directory")
)

// components checks rel and splits it into its names.
func components(rel string) ([]string, error) {
	if rel == "" || !filepath.IsLocal(rel) {
		return nil, fmt.Errorf("%q: %w", rel, ErrEscape)
	}
	return strings.Split(filepath.ToSlash(filepath.Clean(rel)), "/"), nil
}

// Real is path with every link resolved, as a Path from the file system's
// root: opening it follows no link, so a path checked as Real resolved it
// (against allowed directories, say) cannot be redirected by a link
// planted before the open.
func Real(path string) (Path, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return Path{}, err
	}
	if real, err = filepath.Abs(real); err != nil {
		return Path{}, err
	}
	vol := filepath.VolumeName(real)
	root := vol + string(filepath.Separator)
	return Path{Dir: root, Rel: strings.TrimPrefix(real, root)}, nil
}

// Open opens p for reading: a regular file with one link, reached without
// following a link. A missing file is an error wrapping fs.ErrNotExist.
func Open(p Path) (*os.File, error) {
	f, err := openFile(p)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: p.String(), Err: err}
	}
	fi, err := f.Stat()
	if err == nil {
		err = checkRegular(fi)
	}
	if err != nil {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: p.String(), Err: err}
	}
	return f, nil
}

// checkRegular refuses what is not a regular file of one link.
func checkRegular(fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s, %w", Kind(fi.Mode()), ErrNotRegular)
	}
	if links(fi) > 1 {
		return ErrLinked
	}
	return nil
}

// Kind says what a file that is not a regular file is.
func Kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m.IsRegular():
		return "a regular file"
	}
	return "not a regular file"
}

// ReadFile reads p whole (see [Open]), at most max bytes: ErrTooLarge when
// it holds more.
func ReadFile(p Path, max int64) ([]byte, error) {
	f, err := Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadCapped(f, max)
}

// ReadCapped reads r to its end, at most max bytes: ErrTooLarge when
// there is more (a file may grow after its size was read).
func ReadCapped(r io.Reader, max int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%w of %d bytes", ErrTooLarge, max)
	}
	return data, nil
}

// Replace writes data to p in place of what is there: a fresh file,
// created exclusively beside it, takes p's name, so that a link there is
// replaced, never written through (a directory there is an error), and no
// link on the way is followed.
func Replace(p Path, data []byte, perm fs.FileMode) error {
	if err := replace(p, bytes.NewReader(data), perm); err != nil {
		return &fs.PathError{Op: "replace", Path: p.String(), Err: err}
	}
	return nil
}

// WriteNew writes data to p where nothing is: the directories on the way
// are made (perm 0700) where missing, never through a link; the data goes
// to a fresh file beside p, created exclusively, which then takes p's name
// only if nothing took it meanwhile (fs.ErrExist otherwise, and nothing
// is left behind).
func WriteNew(p Path, data []byte, perm fs.FileMode) error {
	return WriteNewFrom(p, bytes.NewReader(data), perm)
}

// WriteNewFrom is [WriteNew] with the data read from r to its end (a copy
// streamed, never held whole); an error of r's leaves nothing behind.
func WriteNewFrom(p Path, r io.Reader, perm fs.FileMode) error {
	if err := writeNew(p, r, perm); err != nil {
		return &fs.PathError{Op: "write", Path: p.String(), Err: err}
	}
	return nil
}

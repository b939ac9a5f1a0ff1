//go:build unix

package beneath

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// walk opens dir (as named) and then each of names below it as a
// directory, never following a link, and returns the last one's
// descriptor; with mkdir, a missing directory is made (0700), dir too
// (the server's choice, as it is named).
func walk(dir string, names []string, mkdir bool) (int, error) {
	open := func() (int, error) { return unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0) }
	fd, err := retry(open)
	if errors.Is(err, unix.ENOENT) && mkdir {
		if err = os.MkdirAll(dir, 0o700); err == nil {
			fd, err = retry(open)
		}
	}
	if err != nil {
		return -1, err
	}
	for _, name := range names {
		next, err := openAt(fd, name, unix.O_RDONLY|unix.O_DIRECTORY)
		if errors.Is(err, unix.ENOENT) && mkdir {
			if err = unix.Mkdirat(fd, name, 0o700); err == nil || errors.Is(err, unix.EEXIST) {
				next, err = openAt(fd, name, unix.O_RDONLY|unix.O_DIRECTORY)
			}
		}
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = next
	}
	return fd, nil
}

// openAt opens name in the directory fd without following a link (and
// without blocking on a named pipe): ErrLink for a link, as Linux and
// macOS (ELOOP) and FreeBSD (EMLINK) say it; a directory asked for that is
// something else says what it is.
func openAt(fd int, name string, flags int) (int, error) {
	f, err := retry(func() (int, error) {
		return unix.Openat(fd, name, flags|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	})
	switch {
	case errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EMLINK):
		return -1, ErrLink
	case errors.Is(err, unix.ENOTDIR):
		var st unix.Stat_t
		if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return -1, ErrLink
		}
	}
	return f, err
}

// retry calls open again while a signal interrupts it.
func retry(open func() (int, error)) (int, error) {
	for {
		fd, err := open()
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}

// split walks to p's directory: its descriptor and p's last name.
func split(p Path, mkdir bool) (int, string, error) {
	names, err := components(p.Rel)
	if err != nil {
		return -1, "", err
	}
	fd, err := walk(p.Dir, names[:len(names)-1], mkdir)
	return fd, names[len(names)-1], err
}

func openFile(p Path) (*os.File, error) {
	dir, name, err := split(p, false)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dir)
	fd, err := openAt(dir, name, unix.O_RDONLY)
	if err != nil {
		return nil, err
	}
	// Opened without blocking; what it is decides the rest (Open), and a
	// regular file is read as usual.
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), p.String()), nil
}

// links is how many hard links the file has.
func links(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

// Exists reports whether anything (a file, a link, a directory, a pipe) is
// at p; a link on the way is ErrLink.
func Exists(p Path) (bool, error) {
	dir, name, err := split(p, false)
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	if err != nil {
		return false, &fs.PathError{Op: "lstat", Path: p.String(), Err: err}
	}
	defer unix.Close(dir)
	var st unix.Stat_t
	switch err := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case err == nil:
		return true, nil
	case errors.Is(err, unix.ENOENT):
		return false, nil
	default:
		return false, &fs.PathError{Op: "lstat", Path: p.String(), Err: err}
	}
}

// ReadDir lists the directory p, sorted by name, reached without
// following a link (ErrLink) and never waited on (a named pipe in its
// place is not a directory).
func ReadDir(p Path) ([]fs.DirEntry, error) {
	names, err := components(p.Rel)
	var fd int
	if err == nil {
		fd, err = walk(p.Dir, names, false)
	}
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: p.String(), Err: err}
	}
	f := os.NewFile(uintptr(fd), p.String())
	defer f.Close()
	entries, err := f.ReadDir(-1)
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, err
}

// MkdirAll makes the directory p and those on the way (0700) where
// missing, never through a link (ErrLink).
func MkdirAll(p Path) error {
	names, err := components(p.Rel)
	if err == nil {
		var fd int
		if fd, err = walk(p.Dir, names, true); err == nil {
			unix.Close(fd)
		}
	}
	if err != nil {
		return &fs.PathError{Op: "mkdir", Path: p.String(), Err: err}
	}
	return nil
}

func writeNew(p Path, src io.Reader, perm fs.FileMode) error {
	return place(p, src, perm, func(dir int, tmp, name string) error {
		// A second name that fails where anything is: no file, link or
		// directory planted there is replaced or written through.
		err := unix.Linkat(dir, tmp, dir, name, 0)
		if errors.Is(err, unix.EEXIST) {
			err = fs.ErrExist
		}
		return err
	})
}

func replace(p Path, src io.Reader, perm fs.FileMode) error {
	return place(p, src, perm, func(dir int, tmp, name string) error {
		return unix.Renameat(dir, tmp, dir, name)
	})
}

// place writes src to a fresh file beside p (in the directory p walks
// to, made where missing) and gives it p's name with name; the fresh file
// is gone after.
func place(p Path, src io.Reader, perm fs.FileMode, name func(dir int, tmp, name string) error) error {
	dir, last, err := split(p, true)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	var salt [8]byte
	_, _ = rand.Read(salt[:])
	tmp := "." + last + "." + hex.EncodeToString(salt[:]) + ".part"
	fd, err := retry(func() (int, error) {
		return unix.Openat(dir, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
	})
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, err = io.Copy(f, src)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = name(dir, tmp, last)
	}
	unix.Unlinkat(dir, tmp, 0)
	return err
}

//go:build !unix

package beneath

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
)

// Elsewhere (Windows) an os.Root keeps every open beneath its directory;
// each name on the way is looked at first, and a link refused.

// checkWay refuses a link on the way through names in r.
func checkWay(r *os.Root, names []string) error {
	for i := range names {
		fi, err := r.Lstat(path.Join(names[:i+1]...))
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return ErrLink
		}
	}
	return nil
}

// root opens p's directory as a root and splits p's names; the caller
// closes the root.
func root(p Path) (*os.Root, []string, error) {
	names, err := components(p.Rel)
	if err != nil {
		return nil, nil, err
	}
	r, err := os.OpenRoot(p.Dir)
	return r, names, err
}

func openFile(p Path) (*os.File, error) {
	r, names, err := root(p)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if err := checkWay(r, names); err != nil {
		return nil, err
	}
	return r.Open(path.Join(names...))
}

func links(fs.FileInfo) uint64 { return 1 }

// Exists reports whether anything is at p; a link on the way is ErrLink.
func Exists(p Path) (bool, error) {
	r, names, err := root(p)
	if err != nil {
		return false, err
	}
	defer r.Close()
	err = checkWay(r, names)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// ReadDir lists the directory p, sorted by name; a link on the way is
// ErrLink.
func ReadDir(p Path) ([]fs.DirEntry, error) {
	r, names, err := root(p)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if names[0] != "." {
		if err := checkWay(r, names); err != nil {
			return nil, err
		}
	}
	f, err := r.Open(path.Join(names...))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, err
}

// MkdirAll makes the directory p and those on the way where missing; a
// link on the way is ErrLink.
func MkdirAll(p Path) error {
	if err := os.MkdirAll(p.Dir, 0o700); err != nil {
		return err
	}
	r, names, err := root(p)
	if err != nil {
		return err
	}
	defer r.Close()
	if err := checkWay(r, names); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return r.MkdirAll(path.Join(names...), 0o700)
}

func writeNew(p Path, src io.Reader, perm fs.FileMode) error {
	return place(p, src, perm, func(r *os.Root, tmp, name string) error { return r.Link(tmp, name) })
}

func replace(p Path, src io.Reader, perm fs.FileMode) error {
	return place(p, src, perm, func(r *os.Root, tmp, name string) error { return r.Rename(tmp, name) })
}

func place(p Path, src io.Reader, perm fs.FileMode, give func(r *os.Root, tmp, name string) error) error {
	if err := os.MkdirAll(p.Dir, 0o700); err != nil {
		return err
	}
	r, names, err := root(p)
	if err != nil {
		return err
	}
	defer r.Close()
	dir := path.Join(names[:len(names)-1]...)
	if dir != "" {
		if err := checkWay(r, names[:len(names)-1]); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if err := r.MkdirAll(dir, 0o700); err != nil {
			return err
		}
	}
	var salt [8]byte
	_, _ = rand.Read(salt[:])
	name := path.Join(names...)
	tmp := path.Join(dir, "."+names[len(names)-1]+"."+hex.EncodeToString(salt[:])+".part")
	f, err := r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, src)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = give(r, tmp, name)
	}
	r.Remove(tmp)
	return err
}

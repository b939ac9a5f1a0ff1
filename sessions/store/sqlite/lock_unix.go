//go:build unix

package sqlite

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// shmDMS is the byte of a WAL database's -shm file that every connection
// holds a shared lock on while it has the shared memory mapped (SQLite's
// "dead man switch", UNIX_SHM_DMS: 120 + 8).
const shmDMS = 128

// othersHaveOpen reports whether another process has the database at path
// open: in WAL mode each connection holds a shared lock on the -shm file's
// DMS byte, which a write lock would conflict with. (A lock of this
// process's own never conflicts: call it before opening the store.)
func othersHaveOpen(path string) (bool, error) {
	f, err := os.OpenFile(path+"-shm", os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: shmDMS, Len: 1}
	if err := unix.FcntlFlock(f.Fd(), unix.F_GETLK, &lk); err != nil {
		return false, err
	}
	return lk.Type != unix.F_UNLCK, nil
}

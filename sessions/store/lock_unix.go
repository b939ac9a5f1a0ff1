//go:build unix && !aix && !solaris

// (AIX and Solaris/illumos have no flock; they take lock_other.go.)

package store

import (
	"errors"
	"os"
	"syscall"
)

// lockFile takes an exclusive lock on the file at path (flock), creating it
// when missing, and returns the function that removes the file and releases
// the lock. Removing it keeps the state directory as it was; a waiter that
// then holds the lock on the removed file sees that the path names another
// file (or none) and locks again, so that only the holder of the file at
// path is ever in the critical section.
func lockFile(path string) (unlock func(), err error) {
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, err
		}
		for {
			err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
			if !errors.Is(err, syscall.EINTR) {
				break
			}
		}
		if err != nil {
			f.Close()
			return nil, err
		}
		held, herr := f.Stat()
		now, nerr := os.Stat(path)
		if herr == nil && nerr == nil && os.SameFile(held, now) {
			return func() {
				os.Remove(path)
				f.Close()
			}, nil
		}
		f.Close()
		switch {
		case herr != nil:
			return nil, herr
		case nerr != nil && !errors.Is(nerr, os.ErrNotExist):
			return nil, nerr
		}
		// The holder removed the file while this waited: lock the new one.
	}
}

// processAlive reports whether a process with pid exists on this machine
// (in this PID namespace).
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

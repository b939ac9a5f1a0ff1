//go:build unix

package agentfile

import (
	"errors"
	"os"
	"syscall"
)

// openNoFollow opens a file for reading without following a symbolic link
// in its last component (O_NOFOLLOW) and without waiting for a writer
// when it is a named pipe (O_NONBLOCK): the open never blocks, and what it
// opened is told by the descriptor's fstat (see openRegular).
func openNoFollow(path string) (*os.File, error) {
	return open(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK)
}

// openDir opens a directory, its links resolved, to list it, as
// openNoFollow opens a file; what is not a directory is refused
// (O_DIRECTORY).
func openDir(path string) (*os.File, error) {
	return open(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_DIRECTORY)
}

func open(path string, flags int) (*os.File, error) {
	f, err := os.OpenFile(path, flags, 0)
	// Linux and macOS say ELOOP for a link under O_NOFOLLOW, FreeBSD
	// EMLINK.
	if err != nil && (errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.EMLINK)) {
		return nil, errSymlink
	}
	return f, err
}

//go:build !unix

package agentfile

import (
	"os"
)

// openNoFollow opens a file for reading, refusing a symbolic link in its
// last component; without O_NOFOLLOW the check comes just before the
// open. What it opened is told by the descriptor's stat (see
// openRegular).
func openNoFollow(path string) (*os.File, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return nil, errSymlink
	}
	return os.Open(path)
}

// openDir opens a directory, its links resolved, to list it, refusing a
// symbolic link as openNoFollow does.
func openDir(path string) (*os.File, error) {
	return openNoFollow(path)
}

//go:build unix

package claudeagent

import (
	"io/fs"
	"os"
	"syscall"
)

// ownedPrivate reports whether the directory fi is this user's, for this
// user alone.
func ownedPrivate(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid() && fi.Mode().Perm()&0o077 == 0
}

//go:build !unix

package claudeagent

import "io/fs"

// ownedPrivate reports whether the directory fi is this user's: on Windows
// the temporary directory is the user's own.
func ownedPrivate(fs.FileInfo) bool { return true }

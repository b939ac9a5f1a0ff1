//go:build unix

package leakcheck

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// ProcessExists reports whether process pid exists (a zombie counts);
// known is false where that cannot be told.
func ProcessExists(pid int) (exists, known bool) {
	return signalZero(pid), true
}

// GroupExists reports whether process group pgid has a member; known is
// false where that cannot be told.
func GroupExists(pgid int) (exists, known bool) {
	return signalZero(-pgid), true
}

// signalZero is kill(pid, 0): it fails with ESRCH when there is no such
// process (EPERM: there is one, of another user).
func signalZero(pid int) bool {
	err := syscall.Kill(pid, 0)
	return !errors.Is(err, syscall.ESRCH)
}

// openFDs counts this process's open file descriptors (the directory read
// itself holds one, in every count alike); ok is false where they cannot
// be counted.
func openFDs() (n int, ok bool) {
	for _, dir := range []string{"/proc/self/fd", "/dev/fd"} {
		if entries, err := os.ReadDir(dir); err == nil {
			return len(entries), true
		}
	}
	return 0, false
}

// fdList describes the open descriptors, for a report.
func fdList() string {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return ""
	}
	var b strings.Builder
	b.WriteString(":")
	for _, e := range entries {
		target, _ := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		b.WriteString("\n  " + e.Name() + " → " + target)
	}
	return b.String()
}

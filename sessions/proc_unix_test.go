//go:build unix

package sessions

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// processExists reports whether pid exists (a zombie counts); known is
// false where that cannot be told.
func processExists(pid int) (exists, known bool) {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM), true
}

// openFDs counts this process's open file descriptors (the directory read
// itself holds one, in every count alike); ok is false where it cannot be
// counted.
func openFDs() (n int, ok bool) {
	for _, dir := range []string{"/proc/self/fd", "/dev/fd"} {
		if entries, err := os.ReadDir(dir); err == nil {
			return len(entries), true
		}
	}
	return 0, false
}

// fdList describes the open descriptors, for a leak report.
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

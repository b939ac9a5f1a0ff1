//go:build linux

package claudeagent

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// KillMarked kills every process whose environment holds the entry
// marker ("NAME=value"). The CLI starts Bash commands in sessions of their
// own, out of reach of its process group and of Pdeathsig; they inherit
// the CLI's environment, so a marker set there finds them. It returns how
// many processes it signalled.
func KillMarked(marker string) int {
	if marker == "" {
		return 0
	}
	needle := append([]byte(marker), 0)
	self := os.Getpid()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		if bytes.HasPrefix(env, needle) || bytes.Contains(env, append([]byte{0}, needle...)) {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				n++
			}
		}
	}
	return n
}

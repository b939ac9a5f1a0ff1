//go:build !linux

package claudeagent

// KillMarked finds processes by their environment only on Linux; elsewhere
// the process group has to do.
func KillMarked(string) int { return 0 }

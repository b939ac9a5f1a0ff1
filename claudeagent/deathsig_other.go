//go:build !linux

package claudeagent

import "syscall"

// setDeathSignal has no equivalent outside Linux; the process group and
// Close cover the ordinary cases.
func setDeathSignal(*syscall.SysProcAttr) {}

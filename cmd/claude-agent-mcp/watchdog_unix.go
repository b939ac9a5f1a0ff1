//go:build unix

package main

import (
	"os/exec"
	"syscall"
)

// setWatchdogAttr keeps the watchdog out of the server's process group, so
// that a signal to the group (Ctrl-C) does not end it before it has done
// its work.
func setWatchdogAttr(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

//go:build linux

package claudeagent

import "syscall"

// setDeathSignal makes the kernel kill the CLI when this process dies, even
// by SIGKILL. (Pdeathsig follows the thread that started the child; Go only
// retires threads of goroutines that exit while locked to them, which this
// package never does.)
func setDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }

package pgtest

import "syscall"

// setDeathSignal kills postgres when the test binary dies.
func setDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }

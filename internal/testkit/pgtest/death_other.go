//go:build unix && !linux

package pgtest

import "syscall"

func setDeathSignal(*syscall.SysProcAttr) {}

//go:build linux

// Package procwait waits for a child process to exit without holding a
// thread.
package procwait

import (
	"os"

	"golang.org/x/sys/unix"
)

// AwaitExit returns once the child pid has exited (it stays a zombie until
// reaped: pid must be this process's child, and nothing reap it meanwhile),
// without holding a thread: a pidfd is readable when its process
// exits, and Go's poller waits for that as for a pipe. os.Process.Wait
// blocks a thread in waitid for the whole life of the child instead, and
// Go keeps every thread it ever made, each with 48 KiB of stacks from the
// heap: one thread per live CLI for as long as the server runs. false when
// the kernel has no pollable pidfds (before Linux 5.3): the caller's Wait
// blocks then.
func AwaitExit(pid int) bool {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return false
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	// Read calls the function, and again each time the poller finds the
	// pidfd readable, until it returns true.
	err = rc.Read(func(uintptr) bool { return exited(pid) })
	return err == nil
}

// exited reports whether the child pid has exited, leaving it to be reaped
// (WNOWAIT). While it runs, Linux answers WNOHANG with a zeroed siginfo. An
// error ends the wait too: the caller's Wait then says what it is.
func exited(pid int) bool {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	return err != nil || info.Signo != 0
}

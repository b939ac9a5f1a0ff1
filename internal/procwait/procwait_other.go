//go:build !linux

// Package procwait waits for a child process to exit without holding a
// thread.
package procwait

// AwaitExit is Linux's way to wait for a child without a thread; elsewhere
// the caller's Wait blocks one.
func AwaitExit(int) bool { return false }

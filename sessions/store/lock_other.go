//go:build (!unix && !windows) || aix || solaris

package store

// lockFile does not lock where this package takes no file locks (no flock): instances
// sharing a registry there may lose each other's writes.
func lockFile(path string) (unlock func(), err error) { return func() {}, nil }

// processAlive cannot tell here: a claim stays valid until its lease ends.
func processAlive(pid int) bool { return true }

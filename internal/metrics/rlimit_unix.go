//go:build unix

package metrics

import "golang.org/x/sys/unix"

// maxFDs is the limit on open file descriptors (0 unknown).
func maxFDs() float64 {
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) != nil {
		return 0
	}
	return float64(lim.Cur)
}

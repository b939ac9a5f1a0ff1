//go:build !linux

package ceiling

import (
	"fmt"
	"os/exec"
	"runtime"
)

// Available returns an error wrapping ErrUnavailable: Landlock is Linux's.
func Available() (int, error) {
	return 0, fmt.Errorf("%w: Landlock is a Linux facility and this is %s", ErrUnavailable, runtime.GOOS)
}

func (c *Ceiling) startConfined(*exec.Cmd) error {
	_, err := Available()
	return err
}

func wrap(string, string, []string) error {
	_, err := Available()
	return err
}

// JailAvailable returns an error wrapping ErrUnavailable: the jail's
// namespaces are Linux's.
func JailAvailable() error {
	return fmt.Errorf("%w: the jail's namespaces are a Linux facility and this is %s", ErrUnavailable, runtime.GOOS)
}

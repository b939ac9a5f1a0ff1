//go:build linux

package options

import (
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// TestMaxArgBytesIsTheKernels: Linux runs a program with an argument of
// MaxArgBytes and refuses one byte more with "argument list too long", the
// failure ValidateArgSizes forestalls.
func TestMaxArgBytesIsTheKernels(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("true")
	if err != nil {
		t.Fatalf("true is needed: %v", err)
	}
	if err := exec.Command(bin, strings.Repeat("x", MaxArgBytes)).Run(); err != nil {
		t.Errorf("an argument of MaxArgBytes (%d): %v", MaxArgBytes, err)
	}
	err = exec.Command(bin, strings.Repeat("x", MaxArgBytes+1)).Run()
	if !errors.Is(err, syscall.E2BIG) {
		t.Errorf("an argument of MaxArgBytes+1: %v, want %v", err, syscall.E2BIG)
	}
}

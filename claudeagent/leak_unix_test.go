//go:build unix

package claudeagent

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"
)

// processGone reports whether pid (and its process group) no longer exist:
// kill(pid, 0) fails with ESRCH. A zombie (exited, not reaped) still exists.
func processGone(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("process %d still exists (kill 0: %v)", pid, err)
	}
	if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("process group %d still exists (kill 0: %v)", pid, err)
	}
}

func TestChildProcessGone(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		end  func(*Process) error
	}{
		{"close", nil, (*Process).Close},
		{"kill", nil, func(p *Process) error { p.Kill(); return nil }},
		{"sigterm", []string{"FAKE_CLAUDE_HANG_ON_EOF", "1"}, (*Process).Close},
		{"sigkill", []string{"FAKE_CLAUDE_HANG_ON_EOF", "1", "FAKE_CLAUDE_IGNORE_SIGTERM", "1"}, (*Process).Close},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opts := fakeOptions(t, tc.env...)
			opts.CloseTimeout = 300 * time.Millisecond
			p, err := Start(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			pid := p.PID()
			if err := syscall.Kill(pid, 0); err != nil {
				t.Fatalf("the child is not running: %v", err)
			}
			turn(t, p, "hi")
			if err := tc.end(p); err != nil {
				t.Fatal(err)
			}
			<-p.Done()
			processGone(t, pid)
		})
	}
}

//go:build unix

package claudeagent

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/leakcheck"
)

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
			leakcheck.CheckGone(t, pid)
			leakcheck.CheckGroupGone(t, pid)
		})
	}
}

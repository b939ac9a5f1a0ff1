package claudeagent

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/leakcheck"
)

func TestNoGoroutineLeaks(t *testing.T) {
	t.Run("full_cycle", func(t *testing.T) {
		before := leakcheck.Take()
		opts := fakeOptions(t)
		opts.PermissionPromptStdio = true
		opts.OnControlRequest = func(ctx context.Context, req *ControlRequest) (any, error) {
			c, err := req.CanUseTool()
			if err != nil {
				return nil, err
			}
			return Allow(c.Input), nil
		}
		p, err := Start(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		initialize(t, p)
		turn(t, p, "hi")
		turn(t, p, "TOOL_BASH[touch x && echo hi]")
		if err := p.SendUser("SLOW"); err != nil {
			t.Fatal(err)
		}
		nextOf[*SystemMessage](t, p)
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		if err := p.Interrupt(ctx); err != nil {
			t.Fatal(err)
		}
		untilResult(t, p)
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		checkInternalsEmpty(t, p)
		before.Check(t, 2*time.Second)
	})
	t.Run("cancelled_handler", func(t *testing.T) {
		before := leakcheck.Take()
		opts := fakeOptions(t)
		opts.PermissionPromptStdio = true
		started := make(chan struct{}, 1)
		opts.OnControlRequest = func(ctx context.Context, req *ControlRequest) (any, error) {
			started <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		}
		p, err := Start(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.SendUser("TOOL_BASH[x]"); err != nil {
			t.Fatal(err)
		}
		<-started
		// Close while the handler waits: the process end cancels it.
		p.Kill()
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		checkInternalsEmpty(t, p)
		before.Check(t, 2*time.Second)
	})
	t.Run("exit_without_close", func(t *testing.T) {
		before := leakcheck.Take()
		p, err := Start(context.Background(), fakeOptions(t, "FAKE_CLAUDE_EXIT_EARLY", "2:bye"))
		if err != nil {
			t.Fatal(err)
		}
		var ee *ExitError
		if err := p.Wait(); !errors.As(err, &ee) || ee.Code != 2 {
			t.Fatalf("Wait = %v", err)
		}
		before.Check(t, 2*time.Second)
	})
	t.Run("control_timeout", func(t *testing.T) {
		before := leakcheck.Take()
		opts := fakeOptions(t, "FAKE_CLAUDE_IGNORE_CONTROL", "initialize")
		opts.ControlTimeout = 100 * time.Millisecond
		p, err := Start(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Initialize(context.Background(), InitializeRequest{}); !errors.Is(err, ErrControlTimeout) {
			t.Fatalf("Initialize = %v", err)
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		checkInternalsEmpty(t, p)
		before.Check(t, 2*time.Second)
	})
}

// checkInternalsEmpty: no pending requests or handlers are left behind.
func checkInternalsEmpty(t *testing.T, p *Process) {
	t.Helper()
	var np, ni int
	if !testkit.Within(2*time.Second, func() bool { // handlers finish on their own
		p.mu.Lock()
		np, ni = len(p.pending), len(p.incoming)
		p.mu.Unlock()
		return np == 0 && ni == 0
	}) {
		t.Fatalf("%d pending control requests and %d incoming ones left", np, ni)
	}
}

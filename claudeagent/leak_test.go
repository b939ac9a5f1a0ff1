package claudeagent

import (
	"context"
	"errors"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"
)

// goroutineStacks returns the stack of every goroutine, keyed by id.
func goroutineStacks() map[string]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[string]string{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		header, _, _ := strings.Cut(g, "\n")
		f := strings.Fields(header) // "goroutine 12 [chan receive]:"
		if len(f) >= 2 && f[0] == "goroutine" {
			out[f[1]] = g
		}
	}
	return out
}

// ignoredGoroutine reports goroutines of the runtime and the test framework.
func ignoredGoroutine(stack string) bool {
	lines := strings.Split(stack, "\n")
	if len(lines) < 2 {
		return true
	}
	top := lines[1]
	for _, prefix := range []string{"testing.", "runtime.", "os/signal.", "internal/fuzz."} {
		if strings.HasPrefix(top, prefix) {
			return true
		}
	}
	return false
}

// leakedGoroutines returns the stacks of goroutines that did not exist in
// before and are still running after up to settle.
func leakedGoroutines(before map[string]string, settle time.Duration) []string {
	deadline := time.Now().Add(settle)
	for {
		var leaked []string
		for id, stack := range goroutineStacks() {
			if _, old := before[id]; !old && !ignoredGoroutine(stack) {
				leaked = append(leaked, stack)
			}
		}
		if len(leaked) == 0 || time.Now().After(deadline) {
			sort.Strings(leaked)
			return leaked
		}
		time.Sleep(20 * time.Millisecond) // polling: goroutine exits cannot be awaited
	}
}

// checkNoLeaks fails t if goroutines started since before are still
// running after a 2 s settle window.
func checkNoLeaks(t *testing.T, before map[string]string) {
	t.Helper()
	if leaked := leakedGoroutines(before, 2*time.Second); len(leaked) > 0 {
		t.Fatalf("%d goroutines leaked:\n\n%s", len(leaked), strings.Join(leaked, "\n\n"))
	}
}

// TestLeakCheckDetects makes sure the leak check can fail.
func TestLeakCheckDetects(t *testing.T) {
	before := goroutineStacks()
	stop := make(chan struct{})
	started := make(chan struct{})
	go func() {
		close(started)
		<-stop
	}()
	<-started
	leaked := leakedGoroutines(before, 100*time.Millisecond)
	close(stop)
	if len(leaked) != 1 || !strings.Contains(leaked[0], "TestLeakCheckDetects") {
		t.Fatalf("leaked = %q, want the one blocked goroutine", leaked)
	}
	checkNoLeaks(t, before)
}

func TestNoGoroutineLeaks(t *testing.T) {
	t.Run("full_cycle", func(t *testing.T) {
		before := goroutineStacks()
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
		checkNoLeaks(t, before)
	})
	t.Run("cancelled_handler", func(t *testing.T) {
		before := goroutineStacks()
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
		checkNoLeaks(t, before)
	})
	t.Run("exit_without_close", func(t *testing.T) {
		before := goroutineStacks()
		p, err := Start(context.Background(), fakeOptions(t, "FAKE_CLAUDE_EXIT_EARLY", "2:bye"))
		if err != nil {
			t.Fatal(err)
		}
		var ee *ExitError
		if err := p.Wait(); !errors.As(err, &ee) || ee.Code != 2 {
			t.Fatalf("Wait = %v", err)
		}
		checkNoLeaks(t, before)
	})
	t.Run("control_timeout", func(t *testing.T) {
		before := goroutineStacks()
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
		checkNoLeaks(t, before)
	})
}

// checkInternalsEmpty: no pending requests or handlers are left behind.
func checkInternalsEmpty(t *testing.T, p *Process) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		p.mu.Lock()
		np, ni := len(p.pending), len(p.incoming)
		p.mu.Unlock()
		if np == 0 && ni == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d pending control requests and %d incoming ones left", np, ni)
		}
		time.Sleep(20 * time.Millisecond) // handlers finish on their own
	}
}

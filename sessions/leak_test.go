package sessions

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/leakcheck"
)

// warmUp runs one session through its life so that what the runtime
// creates once (the netpoller's descriptors, its goroutines) is in the
// baseline.
func warmUp(t *testing.T) {
	t.Helper()
	m := NewManager(fakeConfig(t, Config{}))
	s := create(t, m, CreateOptions{})
	query(t, s, "hi", QueryOptions{})
	if _, err := m.Close(s.ID); err != nil {
		t.Fatal(err)
	}
	m.Shutdown()
}

// TestLeak: 200 sessions created and closed in parallel batches, some with
// a query, one in four closed mid-query; afterwards no goroutine, file
// descriptor or process is left.
func TestLeak(t *testing.T) {
	const total, batch = 200, 10
	warmUp(t)
	b := leakcheck.TakeWithFDs()
	start := time.Now()
	m := NewManager(fakeConfig(t, Config{MaxLive: batch, CloseStage: 2 * time.Second}, "FAKE_CLAUDE_SPEED", "20"))
	cwd := t.TempDir()
	var (
		queries, closedMid atomic.Int64
		pidsMu             sync.Mutex
		pids               []int
	)
	one := func(n int) error {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		s, err := m.Create(ctx, CreateOptions{Cwd: cwd})
		if err != nil {
			return fmt.Errorf("create: %w", err)
		}
		pid := s.Info().PID
		pidsMu.Lock()
		pids = append(pids, pid)
		pidsMu.Unlock()
		switch n % 4 {
		case 0:
			queries.Add(1)
			if r, err := s.Query(ctx, "hi", QueryOptions{}); err != nil || r.FinalText != hello {
				return fmt.Errorf("query: %+v, %v", r, err)
			}
		case 1:
			queries.Add(1)
			if r, err := s.Query(ctx, "TOOL_BASH[touch made_by_tool.txt && echo hi]", QueryOptions{}); err != nil || len(r.ToolInvocations) != 1 {
				return fmt.Errorf("tool query: %+v, %v", r, err)
			}
		case 2: // closed while the query runs
			queries.Add(1)
			closedMid.Add(1)
			p := startQuery(ctx, s, "SLOW", QueryOptions{})
			select {
			case <-p.started:
			case <-p.done:
				return fmt.Errorf("slow query: %+v, %v", p.r, p.err)
			}
			if _, err := m.Close(s.ID); err != nil {
				return fmt.Errorf("close: %w", err)
			}
			<-p.done
			if p.err != nil || !p.r.Interrupted {
				return fmt.Errorf("slow query closed: %+v, %v", p.r, p.err)
			}
			return nil
		}
		if _, err := m.Close(s.ID); err != nil {
			return fmt.Errorf("close: %w", err)
		}
		return nil
	}
	for first := 0; first < total; first += batch {
		errs := make(chan error, batch)
		var wg sync.WaitGroup
		for n := first; n < first+batch; n++ {
			wg.Go(func() { errs <- one(n) })
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(2 * waitLimit):
			t.Fatalf("batch at %d hung:\n%s", first, allStacks())
		}
		close(errs)
		for err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
	}
	if n := m.Count(); n != 0 {
		t.Errorf("%d sessions left open", n)
	}
	m.Shutdown()
	wall := time.Since(start)
	for _, pid := range pids {
		checkGone(t, pid)
	}
	if len(pids) != total || slices.Contains(pids, 0) {
		t.Errorf("%d sessions had a process, want %d", len(pids), total)
	}
	r := b.Check(t, 5*time.Second)
	t.Logf("%d sessions (%d queries, %d closed mid-query) in %s; goroutines %d → %d, open fds %d → %d",
		total, queries.Load(), closedMid.Load(), wall.Round(time.Millisecond), b.Goroutines, r.Goroutines, b.FDs, r.FDs)
}

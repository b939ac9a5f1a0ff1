package sessions

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// goroutineStacks returns the stack of every goroutine, keyed by id.
func goroutineStacks() map[string]string {
	out := map[string]string{}
	for _, g := range strings.Split(allStacks(), "\n\n") {
		header, _, _ := strings.Cut(g, "\n")
		if f := strings.Fields(header); len(f) >= 2 && f[0] == "goroutine" { // "goroutine 12 [chan receive]:"
			out[f[1]] = g
		}
	}
	return out
}

// baseline is what a process holds when nothing of ours runs.
type baseline struct {
	goroutines int
	stacks     map[string]string
	fds        int
	fdsOK      bool
}

func takeBaseline() baseline {
	b := baseline{goroutines: runtime.NumGoroutine(), stacks: goroutineStacks()}
	b.fds, b.fdsOK = openFDs()
	return b
}

// checkLeaks fails t unless the goroutine and file-descriptor counts come
// back to the baseline within settle. It returns the counts it ended with.
func checkLeaks(t *testing.T, b baseline, settle time.Duration) (goroutines, fds int) {
	t.Helper()
	goroutines, fds, problems := leakReport(b, settle)
	for _, p := range problems {
		t.Error(p)
	}
	return goroutines, fds
}

func leakReport(b baseline, settle time.Duration) (goroutines, fds int, problems []string) {
	// A goroutine is a leak when it did not exist at the baseline; counting
	// alone would let one that ends meanwhile hide a new one.
	newStacks := func() []string {
		var added []string
		for id, st := range goroutineStacks() {
			if _, old := b.stacks[id]; !old {
				added = append(added, st)
			}
		}
		slices.Sort(added)
		return added
	}
	deadline := time.Now().Add(settle)
	var added []string
	for {
		goroutines = runtime.NumGoroutine()
		added = newStacks()
		fds, _ = openFDs()
		if len(added) == 0 && (!b.fdsOK || fds <= b.fds) {
			return goroutines, fds, nil
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond) // polling: exits cannot be awaited
	}
	if len(added) > 0 {
		problems = append(problems, fmt.Sprintf("goroutines: %d, baseline %d; %d new ones:\n\n%s\n\nall goroutines:\n\n%s",
			goroutines, b.goroutines, len(added), strings.Join(added, "\n\n"), allStacks()))
	}
	if b.fdsOK && fds > b.fds {
		problems = append(problems, fmt.Sprintf("open file descriptors: %d, baseline %d%s", fds, b.fds, fdList()))
	}
	return goroutines, fds, problems
}

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

// TestCheckLeaksDetects makes sure the leak check can fail.
func TestCheckLeaksDetects(t *testing.T) {
	b := takeBaseline()
	stop, started := make(chan struct{}), make(chan struct{})
	go func() {
		close(started)
		<-stop
	}()
	<-started
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	_, _, problems := leakReport(b, 100*time.Millisecond)
	close(stop)
	f.Close()
	if len(problems) == 0 || !strings.Contains(problems[0], "TestCheckLeaksDetects") {
		t.Errorf("a blocked goroutine was not reported: %q", problems)
	}
	if b.fdsOK && (len(problems) != 2 || !strings.Contains(problems[1], os.DevNull)) {
		t.Errorf("an open file was not reported: %q", problems)
	}
	checkLeaks(t, b, 2*time.Second)
}

// TestLeak: 200 sessions created and closed in parallel batches, some with
// a query, one in four closed mid-query; afterwards no goroutine, file
// descriptor or process is left.
func TestLeak(t *testing.T) {
	const total, batch = 200, 10
	warmUp(t)
	b := takeBaseline()
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
	g, fds := checkLeaks(t, b, 5*time.Second)
	t.Logf("%d sessions (%d queries, %d closed mid-query) in %s; goroutines %d → %d, open fds %d → %d",
		total, queries.Load(), closedMid.Load(), wall.Round(time.Millisecond), b.goroutines, g, b.fds, fds)
}

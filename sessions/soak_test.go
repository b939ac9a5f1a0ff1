package sessions

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/leakcheck"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

// tracker knows every call in flight, to name the ones that hang.
type tracker struct {
	mu       sync.Mutex
	next     int
	inFlight map[int]trackedCall
}

type trackedCall struct {
	what  string
	start time.Time
}

func newTracker() *tracker { return &tracker{inFlight: map[int]trackedCall{}} }

func (tr *tracker) begin(what string) int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.next++
	tr.inFlight[tr.next] = trackedCall{what, time.Now()}
	return tr.next
}

func (tr *tracker) end(id int) {
	tr.mu.Lock()
	delete(tr.inFlight, id)
	tr.mu.Unlock()
}

func (tr *tracker) report() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var calls []trackedCall
	for _, c := range tr.inFlight {
		calls = append(calls, c)
	}
	sort.Slice(calls, func(i, j int) bool { return calls[i].start.Before(calls[j].start) })
	var b strings.Builder
	for _, c := range calls {
		fmt.Fprintf(&b, "\n  %s (running for %s)", c.what, time.Since(c.start).Round(time.Millisecond))
	}
	return b.String()
}

type soakStats struct {
	calls, queries, queriesRun, ok, isError, interruptedResults, timedOut, killed atomic.Int64
	interrupts, cancels, closesMid, closesIdle, recreates, modelSwitches          atomic.Int64
	busy, tooMany, closedErr, cancelledStart                                      atomic.Int64

	mu        sync.Mutex
	latencies []time.Duration
	pids      map[int]bool
}

func (st *soakStats) latency(d time.Duration) {
	st.mu.Lock()
	st.latencies = append(st.latencies, d)
	st.mu.Unlock()
}

func (st *soakStats) pid(pid int) {
	if pid == 0 { // a session made while every live process was busy starts later
		return
	}
	st.mu.Lock()
	st.pids[pid] = true
	st.mu.Unlock()
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(float64(len(sorted))*p))]
}

// logCounter counts the manager's log messages (with a "reason" when
// there is one).
type logCounter struct {
	mu     sync.Mutex
	counts map[string]int
}

func (c *logCounter) Enabled(context.Context, slog.Level) bool { return true }
func (c *logCounter) WithAttrs([]slog.Attr) slog.Handler       { return c }
func (c *logCounter) WithGroup(string) slog.Handler            { return c }
func (c *logCounter) Handle(_ context.Context, r slog.Record) error {
	key := r.Message
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "reason" {
			key += " (" + a.Value.String() + ")"
		}
		return true
	})
	c.mu.Lock()
	c.counts[key]++
	c.mu.Unlock()
	return nil
}

func (c *logCounter) get(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[key]
}

// soakPrompt is one kind of query and what its uninterrupted result is.
type soakPrompt struct {
	prompt string
	weight int
	cost   float64
	check  func(r *turn.Result, qo QueryOptions, allowed bool) string // "" when right
}

var soakPrompts = []soakPrompt{
	{"hi", 30, plainCost, func(r *turn.Result, _ QueryOptions, _ bool) string {
		if r.FinalText != hello || r.IsError || r.NumTurns != 1 {
			return "plain turn"
		}
		return ""
	}},
	{"THINK", 10, thinkCost, func(r *turn.Result, qo QueryOptions, _ bool) string {
		if r.FinalText != hello || (len(r.Thinking) == 1) != qo.IncludeThinking {
			return "thinking turn"
		}
		return ""
	}},
	{"ERR400", 8, 0, func(r *turn.Result, _ QueryOptions, _ bool) string {
		if r.FinalText != err400 || !r.IsError {
			return "API error turn"
		}
		return ""
	}},
	{"TOOL_BASH[touch made_by_tool.txt && echo hi]", 17, askCost, func(r *turn.Result, _ QueryOptions, allowed bool) string {
		if r.FinalText != toolSaid || len(r.ToolInvocations) != 1 || r.ToolInvocations[0].Name != "Bash" ||
			r.ToolInvocations[0].IsError == allowed || (allowed && r.ToolInvocations[0].Output != "hi") {
			return "tool turn"
		}
		return ""
	}},
	{"SLOW20", 25, plainCost, func(r *turn.Result, _ QueryOptions, _ bool) string {
		if r.FinalText != chunks(20) || r.IsError {
			return "slow turn"
		}
		return ""
	}},
	{"SLOW100", 10, plainCost, func(r *turn.Result, _ QueryOptions, _ bool) string {
		if r.FinalText != chunks(100) || r.IsError {
			return "slower turn"
		}
		return ""
	}},
}

// TestSoak runs 8 sessions × 50 queries in parallel with random
// interrupts, cancellations, closes (the worker then creates a new
// session), model switches, permission answers, query timeouts, idle
// dormancy and LRU eviction (MaxLive 6). Every call must return, every
// result must match its prompt (or be an interrupted/killed turn that was
// asked for), and nothing may leak.
func TestSoak(t *testing.T) {
	const (
		workers   = 8
		perWorker = 50
		maxLive   = 6
		deadline  = 150 * time.Second // for the whole run; it takes ~20 s under -race
	)
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("SESSIONS_SOAK_SEED"); v != "" { // to replay a failure
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("SESSIONS_SOAK_SEED: %v", err)
		}
		seed = n
	}
	t.Logf("seed %d (SESSIONS_SOAK_SEED replays it)", seed)
	warmUp(t)
	b := leakcheck.TakeWithFDs()

	cfg := Config{
		MaxLive:           maxLive,
		IdleTimeout:       50 * time.Millisecond,
		QueryTimeout:      400 * time.Millisecond, // SLOW100 runs 1 s
		InterruptGrace:    time.Second,
		CloseStage:        time.Second,
		PermissionTimeout: 150 * time.Millisecond,
	}
	logs := &logCounter{counts: map[string]int{}}
	cfg.Logger = slog.New(logs)
	// Speed 50: a plain turn replays in ~3 ms, SLOW20 in ~0.2 s.
	m := NewManager(fakeConfig(t, cfg, "FAKE_CLAUDE_SPEED", "50"))
	cleanupDone := make(chan struct{})
	t.Cleanup(func() {
		go func() { m.Shutdown(); close(cleanupDone) }()
		select {
		case <-cleanupDone:
		case <-time.After(waitLimit):
			t.Errorf("Shutdown hung:\n%s", allStacks())
		}
	})
	tr := newTracker()
	st := &soakStats{pids: map[int]bool{}}

	// An observer reads shared state throughout, for the race detector
	// and the live limit.
	stopObs, obsDone := make(chan struct{}), make(chan struct{})
	var maxLiveSeen atomic.Int64
	go func() {
		defer close(obsDone)
		for {
			n := m.LiveCount()
			if int64(n) > maxLiveSeen.Load() {
				maxLiveSeen.Store(int64(n))
			}
			for _, s := range m.List() {
				_ = s.Info()
			}
			select {
			case <-stopObs:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()

	start := time.Now()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			sw := &soakWorker{t: t, m: m, tr: tr, st: st, id: w, rng: rand.New(rand.NewPCG(seed, uint64(w)))}
			sw.run(perWorker)
		})
	}
	allDone := make(chan struct{})
	go func() { wg.Wait(); close(allDone) }()
	select {
	case <-allDone:
	case <-time.After(deadline):
		t.Fatalf("calls still running after %s:%s\n\ngoroutines:\n%s", deadline, tr.report(), allStacks())
	}
	wall := time.Since(start)
	close(stopObs)
	<-obsDone
	if n := maxLiveSeen.Load(); n > maxLive {
		t.Errorf("LiveCount reached %d, MaxLive is %d", n, maxLive)
	}

	shutdownStart := time.Now()
	m.Shutdown()
	shutdownTook := time.Since(shutdownStart)
	st.mu.Lock()
	for pid := range st.pids {
		checkGone(t, pid)
	}
	nPIDs := len(st.pids)
	lat := slices.Clone(st.latencies)
	st.mu.Unlock()
	lr := b.Check(t, 5*time.Second)

	slices.Sort(lat)
	t.Logf("%d workers × %d queries: %d calls in %s (shutdown %s); %d query calls, %d ran: %d ok, %d is_error, %d interrupted, %d timed out, %d ended by a kill",
		workers, perWorker, st.calls.Load(), wall.Round(time.Millisecond), shutdownTook.Round(time.Millisecond),
		st.queries.Load(), st.queriesRun.Load(), st.ok.Load(), st.isError.Load(), st.interruptedResults.Load(), st.timedOut.Load(), st.killed.Load())
	t.Logf("injected: %d interrupts, %d cancellations, %d closes mid-query, %d closes between queries, %d re-creates, %d model switches",
		st.interrupts.Load(), st.cancels.Load(), st.closesMid.Load(), st.closesIdle.Load(), st.recreates.Load(), st.modelSwitches.Load())
	t.Logf("refused (and retried): %d busy (slot held while the session went dormant), %d too many live, %d closed under the query, %d cancelled while starting",
		st.busy.Load(), st.tooMany.Load(), st.closedErr.Load(), st.cancelledStart.Load())
	t.Logf("dormancy: %d by max-live, %d by idle timeout; %d processes started, %d killed after ignoring an interrupt",
		logs.get("making session dormant (max-live reached)"), logs.get("making session dormant (idle timeout)"),
		logs.get("claude process started"), logs.get("claude did not honour the interrupt; killing it"))
	t.Logf("latency over %d returned queries: p50 %s, p99 %s, max %s; %d processes; peak live %d; goroutines %d → %d, fds %d → %d",
		len(lat), percentile(lat, 0.5).Round(time.Microsecond), percentile(lat, 0.99).Round(time.Microsecond),
		percentile(lat, 1).Round(time.Microsecond), nPIDs, maxLiveSeen.Load(), b.Goroutines, lr.Goroutines, b.FDs, lr.FDs)
}

type soakWorker struct {
	t   *testing.T
	m   *Manager
	tr  *tracker
	st  *soakStats
	id  int
	rng *rand.Rand

	s    *Session
	csid string
}

// call runs f as a tracked call.
func (w *soakWorker) call(what string, f func()) {
	w.st.calls.Add(1)
	id := w.tr.begin(fmt.Sprintf("worker %d: %s", w.id, what))
	defer w.tr.end(id)
	f()
}

// after runs f after d as a tracked call; the returned stop cancels it or
// waits for it to finish.
func (w *soakWorker) after(d time.Duration, what string, f func()) (stop func() (fired bool)) {
	done := make(chan struct{})
	tm := time.AfterFunc(d, func() {
		defer close(done)
		w.call(what, f)
	})
	return func() bool {
		if tm.Stop() {
			return false
		}
		<-done
		return true
	}
}

func (w *soakWorker) create() {
	for attempt := 0; ; attempt++ {
		var s *Session
		var err error
		w.call("create", func() {
			ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
			defer cancel()
			s, err = w.m.Create(ctx, CreateOptions{Cwd: w.t.TempDir()})
		})
		if err == nil {
			w.s, w.csid = s, s.Info().ClaudeSessionID
			w.st.pid(s.Info().PID)
			return
		}
		if !errors.Is(err, ErrTooMany) || attempt > 1000 {
			w.t.Errorf("worker %d: create: %v", w.id, err)
			return
		}
		w.st.tooMany.Add(1)
		time.Sleep(time.Duration(1+w.rng.IntN(10)) * time.Millisecond) // back off; all live sessions are busy
	}
}

func (w *soakWorker) pickPrompt() soakPrompt {
	total := 0
	for _, p := range soakPrompts {
		total += p.weight
	}
	n := w.rng.IntN(total)
	for _, p := range soakPrompts {
		if n < p.weight {
			return p
		}
		n -= p.weight
	}
	panic("unreachable")
}

// delay is when to inject a fault: within the turn's expected length.
func (w *soakWorker) delay(prompt string) time.Duration {
	limit := 10 * time.Millisecond
	if strings.HasPrefix(prompt, "SLOW") || strings.HasPrefix(prompt, "TOOL") {
		limit = 250 * time.Millisecond
	}
	return time.Duration(w.rng.Int64N(int64(limit)))
}

func (w *soakWorker) run(n int) {
	w.create()
	var refusedSince time.Time
	for q := 0; q < n && w.s != nil; {
		if !w.queryOnce(q) {
			// Refused (busy, or every live session is running a query):
			// try again shortly.
			if refusedSince.IsZero() {
				refusedSince = time.Now()
			} else if time.Since(refusedSince) > waitLimit {
				w.t.Errorf("worker %d: query %d refused for %s", w.id, q, waitLimit)
				return
			}
			time.Sleep(time.Duration(1+w.rng.IntN(5)) * time.Millisecond) // back-off, not synchronisation
			continue
		}
		refusedSince = time.Time{}
		q++
		if _, err := w.m.Get(w.s.ID); err != nil && w.s.Info().State != state.Closed {
			w.t.Errorf("worker %d: session %s is gone from the manager but %s", w.id, w.s.ID, w.s.Info().State)
		}
		if w.rng.IntN(100) < 5 {
			// Think time past the idle timeout: the session may go dormant
			// just as the next query arrives.
			time.Sleep(time.Duration(45+w.rng.IntN(20)) * time.Millisecond)
		}
		if w.s.Info().State == state.Closed {
			w.st.recreates.Add(1)
			w.create()
			continue
		}
		switch x := w.rng.IntN(100); {
		case x < 3:
			w.st.closesIdle.Add(1)
			w.call("close between queries", func() {
				if _, err := w.m.Close(w.s.ID); err != nil {
					w.t.Errorf("worker %d: close: %v", w.id, err)
				}
			})
			w.st.recreates.Add(1)
			w.create()
		case x < 8:
			w.st.modelSwitches.Add(1)
			model := []string{"sonnet", "haiku", "default"}[w.rng.IntN(3)]
			w.call("set model "+model, func() {
				ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
				defer cancel()
				if _, err := w.s.SetModel(ctx, model); err != nil && !errors.Is(err, claudeagent.ErrClosed) {
					w.t.Errorf("worker %d: SetModel(%s): %v", w.id, model, err)
				}
			})
		}
	}
	if w.s != nil {
		w.call("final close", func() { _, _ = w.m.Close(w.s.ID) })
	}
}

// queryOnce runs one query with random faults and checks its result; it
// reports false when the query was refused before it started.
func (w *soakWorker) queryOnce(q int) bool {
	s, st := w.s, w.st
	sp := w.pickPrompt()
	qo := QueryOptions{IncludeThinking: w.rng.IntN(2) == 0}
	allowed := false
	if strings.HasPrefix(sp.prompt, "TOOL_BASH") {
		switch w.rng.IntN(4) {
		case 0: // no asker: the deny policy
		case 1:
			allowed = true
			qo.AskPermission = func(context.Context, *turn.PermissionRequest) (*claudeagent.PermissionResult, error) {
				return &claudeagent.PermissionResult{Behavior: "allow"}, nil
			}
		case 2:
			qo.AskPermission = func(context.Context, *turn.PermissionRequest) (*claudeagent.PermissionResult, error) {
				return claudeagent.Deny("soak says no"), nil
			}
		case 3: // never answers: the permission timeout denies
			qo.AskPermission = func(ctx context.Context, _ *turn.PermissionRequest) (*claudeagent.PermissionResult, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			}
		}
	}
	qo.OnEvent = func(e turn.Event) {
		if e.Kind == turn.EventTurnStarted {
			st.pid(s.Info().PID)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stops []func() bool
	var closeFired bool // written before the stop that waits for it returns
	var interrupted, cancelled, closed bool
	if w.rng.IntN(100) < 15 {
		interrupted = true
		stops = append(stops, w.after(w.delay(sp.prompt), "interrupt", func() {
			ictx, icancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer icancel()
			_, _ = s.Interrupt(ictx)
		}))
	}
	if w.rng.IntN(100) < 10 {
		cancelled = true
		stops = append(stops, w.after(w.delay(sp.prompt), "cancel the query", cancel))
	}
	if w.rng.IntN(100) < 4 {
		closed = true
		stops = append(stops, w.after(w.delay(sp.prompt), "close mid-query", func() {
			closeFired = true
			_, _ = w.m.Close(s.ID)
		}))
	}

	var r *turn.Result
	var err error
	start := time.Now()
	st.queries.Add(1)
	w.call(fmt.Sprintf("query %d %q on %s", q, sp.prompt, s.ID), func() { r, err = s.Query(ctx, sp.prompt, qo) })
	took := time.Since(start)
	for _, stop := range stops {
		stop()
	}

	fail := func(format string, args ...any) {
		w.t.Errorf("worker %d query %d %q (interrupt %v, cancel %v, close %v): %s", w.id, q, sp.prompt,
			interrupted, cancelled, closed, fmt.Sprintf(format, args...))
	}
	refused := true
	switch {
	case errors.Is(err, ErrBusy):
		st.busy.Add(1)
	case errors.Is(err, ErrTooMany):
		st.tooMany.Add(1)
	default:
		refused = false
	}
	if refused {
		// A close injected with a tiny delay may have fired before the
		// refusal stopped it: the session is gone, so the worker needs a
		// new one before it tries again.
		if closeFired {
			if st := s.Info().State; st != state.Closed {
				fail("closed while refused, but the session is %s", st)
			}
			w.st.recreates.Add(1)
			w.create()
		}
		return false
	}
	// The faults count for the queries that were not refused (a refused
	// one stopped them, unless they fired at once).
	for _, c := range []struct {
		on bool
		n  *atomic.Int64
	}{{interrupted, &st.interrupts}, {cancelled, &st.cancels}, {closed, &st.closesMid}} {
		if c.on {
			c.n.Add(1)
		}
	}
	switch {
	case err == nil:
	case errors.Is(err, ErrClosed) && closed:
		st.closedErr.Add(1)
		return true
	case errors.Is(err, context.Canceled) && cancelled:
		st.cancelledStart.Add(1)
		return true
	default:
		fail("error %v; session %+v", err, s.Info())
		return true
	}
	defer st.queriesRun.Add(1)

	st.latency(took)
	if took > 10*time.Second {
		fail("took %s", took)
	}
	if r.ClaudeSessionID != w.csid {
		fail("ClaudeSessionID %q, want %q", r.ClaudeSessionID, w.csid)
	}
	if r.IsError {
		st.isError.Add(1)
	} else {
		st.ok.Add(1)
	}
	if r.Interrupted {
		st.interruptedResults.Add(1)
	}
	if r.TimedOut {
		st.timedOut.Add(1)
		if !r.Interrupted {
			fail("timed out but not interrupted: %+v", r)
		}
	}
	asked := interrupted || cancelled || closed || r.TimedOut
	if r.Interrupted && !asked {
		fail("interrupted, but nobody asked: %+v", r)
	}
	switch r.Subtype {
	case "success":
		if why := sp.check(r, qo, allowed); why != "" {
			fail("wrong %s: %+v", why, r)
		}
		if !approx(r.CostUSD, sp.cost) {
			fail("CostUSD %v, want %v", r.CostUSD, sp.cost)
		}
	case "error_during_execution": // an honoured interrupt: an error only when it was a timeout
		if !r.Interrupted || r.CostUSD != 0 || r.IsError != r.TimedOut {
			fail("interrupted turn: %+v", r)
		}
	case "error_no_result": // killed after the grace, or closed
		st.killed.Add(1)
		if !asked || !r.IsError || r.ErrorText == "" || r.CostUSD != 0 {
			fail("turn without result: %+v", r)
		}
	default:
		fail("subtype %q: %+v", r.Subtype, r)
	}
	return true
}

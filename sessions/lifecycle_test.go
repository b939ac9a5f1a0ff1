package sessions

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
)

// A CLI that dies mid-turn: the query returns at once with the exit code
// and stderr, the session goes dormant and the next query resumes the
// conversation in a new process.
func TestCrashMidTurn(t *testing.T) {
	t.Parallel()
	const dieAfter = 1500 * time.Millisecond
	m := newManager(t, Config{}, "FAKE_CLAUDE_DIE_AFTER_MS", fmt.Sprint(dieAfter.Milliseconds()))
	s := create(t, m, CreateOptions{})
	in := s.Info()
	p := startQuery(ctxFor(t), s, "SLOW", QueryOptions{})
	r := p.wait(t, waitLimit)
	if p.dur > dieAfter+2*time.Second {
		t.Errorf("the query returned %s after the crash", p.dur-dieAfter)
	}
	if !r.IsError || r.Subtype != "error_no_result" || r.Interrupted ||
		!strings.Contains(r.ErrorText, "exited with code 1") || !strings.Contains(r.ErrorText, "fatal: simulated crash") {
		t.Errorf("result = %+v", r)
	}
	if r.ClaudeSessionID != in.ClaudeSessionID {
		t.Errorf("ClaudeSessionID = %q, want %q", r.ClaudeSessionID, in.ClaudeSessionID)
	}
	checkGone(t, in.PID)
	if got := s.Info(); got.State != state.Dormant || got.PID != 0 || m.LiveCount() != 0 {
		t.Errorf("after the crash: %+v, LiveCount %d", got, m.LiveCount())
	}

	// The new process dies too, dieAfter into its first turn; this turn
	// ends long before.
	var pr probe
	r = query(t, s, "hi", QueryOptions{OnEvent: pr.onEvent(s)})
	if r.FinalText != hello || r.IsError || r.ClaudeSessionID != in.ClaudeSessionID || !approx(r.CostUSD, plainCost) {
		t.Errorf("resumed query: %+v", r)
	}
	if pr.pid == in.PID || pr.pid == 0 {
		t.Errorf("resumed query ran in pid %d (old %d)", pr.pid, in.PID)
	}
	pr.checkArg(t, "--resume="+in.ClaudeSessionID, true)
	pr.checkArg(t, "--session-id="+in.ClaudeSessionID, false)

	// An idle process that dies leaves the session dormant, not broken.
	testkit.Until(t, 10*time.Second, "the idle process to die", func() bool { return s.Info().State == state.Dormant })
	checkGone(t, pr.pid)
	var pr2 probe
	r = query(t, s, "hi", QueryOptions{OnEvent: pr2.onEvent(s)})
	if r.FinalText != hello || r.IsError || pr2.pid == pr.pid {
		t.Errorf("query after the idle crash: %+v in pid %d", r, pr2.pid)
	}
	pr2.checkArg(t, "--resume="+in.ClaudeSessionID, true)
	if got := s.Info(); got.Queries != 3 || !approx(got.CostUSD, 2*plainCost) {
		t.Errorf("Info = %+v", got)
	}
}

// A caller's expired deadline while a dormant session resumes is the
// caller's problem, not the session's: it stays resumable.
func TestResumeWithExpiredContext(t *testing.T) {
	t.Parallel()
	m := newManager(t, Config{MaxLive: 1})
	s := create(t, m, CreateOptions{})
	query(t, s, "hi", QueryOptions{})
	create(t, m, CreateOptions{}) // s goes dormant
	if st := s.Info().State; st != state.Dormant {
		t.Fatalf("state = %q, want dormant", st)
	}
	for _, c := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
	}{
		{"cancelled", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, cancel
		}},
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		}},
	} {
		ctx, cancel := c.ctx()
		_, err := s.Query(ctx, "hi", QueryOptions{})
		cancel()
		if err == nil {
			t.Errorf("%s: Query succeeded with a dead context", c.name)
		}
		if in := s.Info(); in.State == state.Failed {
			t.Errorf("%s: the session failed for good: %s", c.name, in.Failure)
		}
	}
	if r, err := s.Query(ctxFor(t), "hi", QueryOptions{}); err != nil || r.FinalText != hello {
		t.Errorf("query with a live context: %+v, %v", r, err)
	}
}

// A session closed while its process starts stays closed when the start
// then fails: it is gone from the manager, so a process it started later
// would be stopped by nobody.
func TestCloseDuringFailingStart(t *testing.T) {
	t.Parallel()
	for _, resuming := range []bool{false, true} {
		t.Run(fmt.Sprintf("resuming=%v", resuming), func(t *testing.T) {
			t.Parallel()
			cfg := fakeConfig(t, Config{MaxLive: 1, StartTimeout: time.Second})
			m := NewManager(cfg)
			t.Cleanup(func() { shutdownAndCheck(t, m) })
			a := create(t, m, CreateOptions{})
			if resuming {
				query(t, a, "hi", QueryOptions{})
			}
			create(t, m, CreateOptions{}) // a goes dormant
			// From now on processes never answer initialize (nothing is
			// starting, and nothing follows a's transcript, so nothing
			// reads the map meanwhile).
			untilNoFollower(t, a)
			cfg.Env["FAKE_CLAUDE_IGNORE_CONTROL"] = "initialize"
			p := startQuery(ctxFor(t), a, "hi", QueryOptions{})
			testkit.Until(t, 10*time.Second, "the start", func() bool { return a.Info().State == state.Starting })
			if _, err := m.Close(a.ID); err != nil {
				t.Fatal(err)
			}
			select {
			case <-p.done:
			case <-time.After(waitLimit):
				t.Fatalf("query hung:\n%s", allStacks())
			}
			if p.err == nil {
				t.Errorf("query on a session closed while starting: %+v", p.r)
			}
			if in := a.Info(); in.State != state.Closed {
				t.Errorf("after the failed start the closed session is %q (%s)", in.State, in.Failure)
			}
			if _, err := a.Query(ctxFor(t), "hi", QueryOptions{}); !errors.Is(err, ErrClosed) {
				t.Errorf("next query: %v, want ErrClosed", err)
			}
			if n := m.LiveCount(); n != 0 {
				t.Errorf("LiveCount = %d", n)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// Limits

func TestMaxSessions(t *testing.T) {
	t.Parallel()
	m := newManager(t, Config{MaxSessions: 2})
	a := create(t, m, CreateOptions{})
	create(t, m, CreateOptions{})
	_, err := m.Create(ctxFor(t), CreateOptions{Cwd: t.TempDir()})
	if !errors.Is(err, ErrTooMany) {
		t.Fatalf("third Create: %v, want ErrTooMany", err)
	}
	for _, want := range []string{"2 sessions are open", "--max-sessions is 2"} { // the MCP layer adds the tool to call (TestErrorHints)
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if n := m.Count(); n != 2 {
		t.Errorf("Count = %d", n)
	}
	if n, err := m.Close(a.ID); err != nil || n != 1 {
		t.Fatalf("Close = %d, %v", n, err)
	}
	create(t, m, CreateOptions{})
}

func TestMaxLive(t *testing.T) {
	t.Parallel()
	m := newManager(t, Config{MaxLive: 1})
	var maxSeen atomic.Int64
	stop, monDone := make(chan struct{}), make(chan struct{})
	go func() { // samples LiveCount throughout
		defer close(monDone)
		for {
			if n := int64(m.LiveCount()); n > maxSeen.Load() {
				maxSeen.Store(n)
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()

	a := create(t, m, CreateOptions{})
	query(t, a, "hi", QueryOptions{})
	aIn := a.Info()
	b := create(t, m, CreateOptions{})
	if got := a.Info(); got.State != state.Dormant || got.PID != 0 {
		t.Errorf("a after b started: state %q pid %d, want dormant", got.State, got.PID)
	}
	checkGone(t, aIn.PID)
	bPID := b.Info().PID
	checkAlive(t, bPID)
	query(t, b, "hi", QueryOptions{})

	var pr probe
	r := query(t, a, "hi", QueryOptions{OnEvent: pr.onEvent(a)})
	if r.FinalText != hello || r.ClaudeSessionID != aIn.ClaudeSessionID {
		t.Errorf("a resumed: %+v", r)
	}
	pr.checkArg(t, "--resume="+aIn.ClaudeSessionID, true)
	if got := b.Info(); got.State != state.Dormant {
		t.Errorf("b after a resumed: state %q, want dormant", got.State)
	}
	checkGone(t, bPID)
	if got := a.Info(); got.State != state.Idle || got.Queries != 2 {
		t.Errorf("a = %+v", got)
	}
	close(stop)
	<-monDone
	if n := maxSeen.Load(); n != 1 {
		t.Errorf("LiveCount peaked at %d, want 1", n)
	}
}

func TestIdleTimeout(t *testing.T) {
	t.Parallel()
	m := newManager(t, Config{IdleTimeout: 300 * time.Millisecond})
	s := create(t, m, CreateOptions{})
	// A query longer than the idle timeout is not cut short.
	var pr0 probe
	r := query(t, s, "SLOW3", QueryOptions{OnEvent: pr0.onEvent(s)}) // 1 s
	if r.FinalText != chunks(3) || r.IsError || r.Interrupted {
		t.Fatalf("slow query: %+v", r)
	}
	in := s.Info()
	testkit.Until(t, 10*time.Second, "the session to go dormant", func() bool { return s.Info().State == state.Dormant })
	checkGone(t, pr0.pid)
	if n := m.LiveCount(); n != 0 {
		t.Errorf("LiveCount = %d", n)
	}
	var pr probe
	r = query(t, s, "hi", QueryOptions{OnEvent: pr.onEvent(s)})
	if r.FinalText != hello || r.ClaudeSessionID != in.ClaudeSessionID {
		t.Errorf("resumed: %+v", r)
	}
	pr.checkArg(t, "--resume="+in.ClaudeSessionID, true)
}

// ---------------------------------------------------------------------------
// Close and shutdown

func TestCloseWhileQuery(t *testing.T) {
	t.Parallel()
	m := newManager(t, Config{CloseStage: time.Second})
	s := create(t, m, CreateOptions{})
	other := create(t, m, CreateOptions{})
	pid := s.Info().PID
	p := startQuery(ctxFor(t), s, "SLOW", QueryOptions{})
	p.waitStarted(t)
	closed := make(chan struct{})
	var remaining int
	var cerr error
	go func() { remaining, cerr = m.Close(s.ID); close(closed) }()
	r := p.wait(t, 10*time.Second)
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatalf("Close hung:\n%s", allStacks())
	}
	if cerr != nil || remaining != 1 {
		t.Errorf("Close = %d, %v", remaining, cerr)
	}
	if !r.Interrupted {
		t.Errorf("result = %+v", r)
	}
	checkGone(t, pid)
	if _, err := m.Get(s.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get after Close: %v", err)
	}
	if st := s.Info().State; st != state.Closed {
		t.Errorf("state = %q", st)
	}
	if _, err := s.Query(ctxFor(t), "hi", QueryOptions{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Query after Close: %v", err)
	}
	if _, err := m.Close(s.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("second Close: %v", err)
	}
	var ids []string
	for _, x := range m.List() {
		ids = append(ids, x.ID)
	}
	if !slices.Equal(ids, []string{other.ID}) {
		t.Errorf("List = %v, want [%s]", ids, other.ID)
	}
	if r := query(t, other, "hi", QueryOptions{}); r.FinalText != hello {
		t.Errorf("the other session: %+v", r)
	}
}

func TestShutdown(t *testing.T) {
	t.Parallel()
	m := NewManager(fakeConfig(t, Config{CloseStage: 500 * time.Millisecond}))
	t.Cleanup(m.Shutdown)
	idle := create(t, m, CreateOptions{})
	busy := create(t, m, CreateOptions{})
	// A CLI that ignores stdin EOF and SIGTERM needs the SIGKILL stage.
	stubborn := create(t, m, CreateOptions{Env: map[string]string{"FAKE_CLAUDE_HANG_ON_EOF": "1", "FAKE_CLAUDE_IGNORE_SIGTERM": "1"}})
	query(t, stubborn, "hi", QueryOptions{})
	var pids []int
	for _, s := range []*Session{idle, busy, stubborn} {
		pids = append(pids, s.Info().PID)
	}
	p := startQuery(ctxFor(t), busy, "SLOW", QueryOptions{})
	p.waitStarted(t)

	start := time.Now()
	done := make(chan struct{})
	go func() { m.Shutdown(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("Shutdown took over 10 s:\n%s", allStacks())
	}
	t.Logf("Shutdown took %s", time.Since(start))
	for _, pid := range pids {
		checkGone(t, pid)
	}
	if r := p.wait(t, 5*time.Second); !r.Interrupted {
		t.Errorf("running query: %+v", r)
	}
	if n := m.LiveCount(); n != 0 {
		t.Errorf("LiveCount = %d", n)
	}
	if _, err := m.Create(ctxFor(t), CreateOptions{Cwd: t.TempDir()}); !errors.Is(err, ErrShuttingDown) {
		t.Errorf("Create after Shutdown: %v", err)
	}
	if _, err := idle.Query(ctxFor(t), "hi", QueryOptions{}); !errors.Is(err, ErrShuttingDown) {
		t.Errorf("Query after Shutdown: %v", err)
	}
	if n := m.Count(); n != 3 {
		t.Errorf("Count after Shutdown = %d; sessions stay (dormant) for the store", n)
	}
}

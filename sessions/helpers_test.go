package sessions

import (
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakecli"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/leakcheck"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

// What the captures in testdata/streams produce.
const (
	hello        = "Hello from fake API (n_messages=1)" // plain and THINK
	toolSaid     = "Tool said: hi"                      // TOOL_BASH
	err400       = "API Error: 400 fake 400 error"
	defaultModel = "claude-opus-4-8[1m]" // "default" in the initialize models
	plainCost    = 0.000275
	thinkCost    = 0.000425
	bypassCost   = 0.000675 // tool_use capture (bypassPermissions)
	askCost      = 0.0009   // can_use_tool capture
	toolInput    = `{"command":"touch made_by_tool.txt && echo hi","description":"Run a command"}`

	waitLimit = 30 * time.Second
)

// fakeConfig points cfg at the fake CLI; env adds variables (pairs) for
// every process.
func fakeConfig(tb testing.TB, cfg Config, env ...string) Config {
	tb.Helper()
	path, fenv := fakecli.Command(tb)
	e := maps.Clone(fenv)
	maps.Copy(e, cfg.Env)
	for i := 0; i+1 < len(env); i += 2 {
		e[env[i]] = env[i+1]
	}
	cfg.CLIPath, cfg.Env = path, e
	if cfg.CloseStage == 0 {
		cfg.CloseStage = 2 * time.Second
	}
	return cfg
}

// newManager returns a manager running the fake CLI; at cleanup it shuts
// down and checks that every process it had is gone.
func newManager(tb testing.TB, cfg Config, env ...string) *Manager {
	tb.Helper()
	m := NewManager(fakeConfig(tb, cfg, env...))
	tb.Cleanup(func() { shutdownAndCheck(tb, m) })
	return m
}

func shutdownAndCheck(tb testing.TB, m *Manager) {
	tb.Helper()
	var pids []int
	for _, s := range m.List() {
		if pid := s.Info().PID; pid > 0 {
			pids = append(pids, pid)
		}
	}
	done := make(chan struct{})
	go func() { m.Shutdown(); close(done) }()
	select {
	case <-done:
	case <-time.After(waitLimit):
		tb.Fatalf("Shutdown hung:\n%s", allStacks())
	}
	for _, pid := range pids {
		checkGone(tb, pid)
	}
	if n := m.LiveCount(); n != 0 {
		tb.Errorf("after Shutdown LiveCount = %d", n)
	}
}

func ctxFor(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	tb.Cleanup(cancel)
	return ctx
}

func create(tb testing.TB, m *Manager, opts CreateOptions) *Session {
	tb.Helper()
	if opts.Cwd == "" {
		opts.Cwd = tb.TempDir()
	}
	s, err := m.Create(ctxFor(tb), opts)
	if err != nil {
		tb.Fatalf("Create: %v", err)
	}
	return s
}

func query(tb testing.TB, s *Session, prompt string, qo QueryOptions) *turn.Result {
	tb.Helper()
	r, err := s.Query(ctxFor(tb), prompt, qo)
	if err != nil {
		tb.Fatalf("Query(%q): %v", prompt, err)
	}
	return r
}

// stateOf is the session's state as it is, interrupting included (Info
// reports it as running).
func stateOf(s *Session) state.State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.State()
}

func approx(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

// allStacks is every goroutine's stack, for the report of a hang.
func allStacks() string { return leakcheck.Stacks() }

func checkGone(tb testing.TB, pid int) {
	tb.Helper()
	leakcheck.CheckGone(tb, pid)
}

func checkAlive(tb testing.TB, pid int) {
	tb.Helper()
	if pid <= 0 {
		tb.Errorf("pid = %d, want a running process", pid)
		return
	}
	if exists, known := leakcheck.ProcessExists(pid); known && !exists {
		tb.Errorf("process %d does not exist", pid)
	}
}

// procFile reads /proc/<pid>/<name> with NULs as spaces; ok is false
// where /proc is not available.
func procFile(pid int, name string) (string, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, name))
	if err != nil {
		return "", false
	}
	return strings.ReplaceAll(string(b), "\x00", " "), true
}

// probe records, at the start of a turn, the process serving it.
type probe struct {
	pid     int
	cmdline string
	environ string
	ok      bool
}

func (pr *probe) onEvent(s *Session) func(turn.Event) {
	return func(e turn.Event) {
		if e.Kind == turn.EventTurnStarted {
			pr.pid = s.Info().PID
			pr.cmdline, pr.ok = procFile(pr.pid, "cmdline")
			pr.environ, _ = procFile(pr.pid, "environ")
		}
	}
}

// checkArg checks that the probed process got arg (where /proc is there).
func (pr *probe) checkArg(tb testing.TB, arg string, present bool) {
	tb.Helper()
	if !pr.ok {
		tb.Logf("no /proc: not checking the command line for %q", arg)
		return
	}
	if strings.Contains(pr.cmdline+" ", arg+" ") != present {
		tb.Errorf("command line of pid %d: contains %q = %v, want %v:\n%s", pr.pid, arg, !present, present, pr.cmdline)
	}
}

// recorder keeps a query's events and notes any that arrive after Query
// returned.
type recorder struct {
	mu       sync.Mutex
	events   []turn.Event
	returned bool
	late     []turn.Event
}

func (r *recorder) on(e turn.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.returned {
		r.late = append(r.late, e)
		return
	}
	r.events = append(r.events, e)
}

func (r *recorder) markReturned() {
	r.mu.Lock()
	r.returned = true
	r.mu.Unlock()
}

func (r *recorder) kinds() []turn.EventKind {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []turn.EventKind
	for _, e := range r.events {
		out = append(out, e.Kind)
	}
	return out
}

func (r *recorder) snapshot() []turn.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

func (r *recorder) checkNoLate(tb testing.TB) {
	tb.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.late {
		tb.Errorf("event %s (%q) arrived after Query returned", e.Kind, e.Text)
	}
}

// pending is a query running in its own goroutine.
type pending struct {
	started chan struct{} // closed at the turn_started event
	done    chan struct{}
	rec     *recorder
	r       *turn.Result
	err     error
	dur     time.Duration
}

func startQuery(ctx context.Context, s *Session, prompt string, qo QueryOptions) *pending {
	p := &pending{started: make(chan struct{}), done: make(chan struct{}), rec: &recorder{}}
	var once sync.Once
	user := qo.OnEvent
	qo.OnEvent = func(e turn.Event) {
		p.rec.on(e)
		if user != nil {
			user(e)
		}
		if e.Kind == turn.EventTurnStarted {
			once.Do(func() { close(p.started) })
		}
	}
	go func() {
		defer close(p.done)
		start := time.Now()
		p.r, p.err = s.Query(ctx, prompt, qo)
		p.dur = time.Since(start)
		p.rec.markReturned()
	}()
	return p
}

func (p *pending) waitStarted(tb testing.TB) {
	tb.Helper()
	select {
	case <-p.started:
	case <-p.done:
		tb.Fatalf("query returned before its turn started: %+v, %v", p.r, p.err)
	case <-time.After(waitLimit):
		tb.Fatalf("query did not start:\n%s", allStacks())
	}
}

// wait waits for the query to return and fails on an error.
func (p *pending) wait(tb testing.TB, limit time.Duration) *turn.Result {
	tb.Helper()
	select {
	case <-p.done:
	case <-time.After(limit):
		tb.Fatalf("query did not return within %s:\n%s", limit, allStacks())
	}
	if p.err != nil {
		tb.Fatalf("query: %v", p.err)
	}
	return p.r
}

// interruptUntilDone interrupts p until it returns. More than one attempt
// is needed when the interrupt reaches the fake before it has picked up
// the turn (it then answers the interrupt as a no-op, as an idle CLI does).
func interruptUntilDone(tb testing.TB, s *Session, p *pending) (attempts int) {
	tb.Helper()
	done := testkit.Within(waitLimit, func() bool {
		attempts++
		ictx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		running, forced := s.Interrupt(ictx)
		cancel()
		if forced {
			tb.Errorf("Interrupt had to stop the process")
		}
		if !running && attempts == 1 {
			tb.Errorf("Interrupt reported no running query")
		}
		select {
		case <-p.done:
			return true
		case <-time.After(250 * time.Millisecond): // retry window, see above
			return false
		}
	})
	if !done {
		tb.Fatalf("query not interrupted after %d attempts:\n%s", attempts, allStacks())
	}
	return attempts
}

func chunks(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "chunk%d ", i)
	}
	return b.String()
}

// testClock is a clock the test moves forward: time.Now plus an offset
// (the monotonic reading moves too).
type testClock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	c.off += d
	c.mu.Unlock()
}

// untilNoFollower waits until nothing follows s's transcript in the
// background (followTranscript), which reads the manager's configuration:
// a test that changes cfg.Env afterwards does not race with it.
func untilNoFollower(tb testing.TB, s *Session) {
	tb.Helper()
	testkit.Until(tb, waitLimit, "the transcript's follower to end", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return !s.following
	})
}

package sessions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/fakecli"
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

func query(tb testing.TB, s *Session, prompt string, qo QueryOptions) *TurnResult {
	tb.Helper()
	r, err := s.Query(ctxFor(tb), prompt, qo)
	if err != nil {
		tb.Fatalf("Query(%q): %v", prompt, err)
	}
	return r
}

func approx(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

func allStacks() string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return string(buf[:n])
		}
		buf = make([]byte, 2*len(buf))
	}
}

// waitUntil polls cond: for state another goroutine (a timer, the pump)
// changes with nothing to wait on. With quiet, running out of time is not
// a failure.
func waitUntil(tb testing.TB, d time.Duration, what string, cond func() bool, quiet ...bool) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			if len(quiet) > 0 && quiet[0] {
				return
			}
			tb.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond) // polling, not synchronisation
	}
}

func checkGone(tb testing.TB, pid int) {
	tb.Helper()
	if exists, known := processExists(pid); known && exists {
		stat, _ := procFile(pid, "stat")
		cmd, _ := procFile(pid, "cmdline")
		tb.Errorf("process %d still exists: %s\n%.300s", pid, stat, cmd)
	}
}

func checkAlive(tb testing.TB, pid int) {
	tb.Helper()
	if pid <= 0 {
		tb.Errorf("pid = %d, want a running process", pid)
		return
	}
	if exists, known := processExists(pid); known && !exists {
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

func (pr *probe) onEvent(s *Session) func(Event) {
	return func(e Event) {
		if e.Kind == EventTurnStarted {
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
	events   []Event
	returned bool
	late     []Event
}

func (r *recorder) on(e Event) {
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

func (r *recorder) kinds() []EventKind {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []EventKind
	for _, e := range r.events {
		out = append(out, e.Kind)
	}
	return out
}

func (r *recorder) snapshot() []Event {
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
	r       *TurnResult
	err     error
	dur     time.Duration
}

func startQuery(ctx context.Context, s *Session, prompt string, qo QueryOptions) *pending {
	p := &pending{started: make(chan struct{}), done: make(chan struct{}), rec: &recorder{}}
	var once sync.Once
	user := qo.OnEvent
	qo.OnEvent = func(e Event) {
		p.rec.on(e)
		if user != nil {
			user(e)
		}
		if e.Kind == EventTurnStarted {
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
func (p *pending) wait(tb testing.TB, limit time.Duration) *TurnResult {
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
	deadline := time.Now().Add(waitLimit)
	for {
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
			return attempts
		case <-time.After(250 * time.Millisecond): // retry window, see above
		}
		if time.Now().After(deadline) {
			tb.Fatalf("query not interrupted after %d attempts:\n%s", attempts, allStacks())
		}
	}
}

func chunks(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "chunk%d ", i)
	}
	return b.String()
}

// ---------------------------------------------------------------------------
// Create, Info, Query

func TestCreateInfoQuery(t *testing.T) {
	t.Parallel()
	m := newManager(t, Config{})
	cwd := t.TempDir()
	s := create(t, m, CreateOptions{Cwd: cwd})
	in := s.Info()
	if in.State != StateIdle {
		t.Errorf("State = %q, want idle", in.State)
	}
	checkAlive(t, in.PID)
	if in.Model != defaultModel {
		t.Errorf("Model = %q, want %q (the initialize models' default)", in.Model, defaultModel)
	}
	if in.Cwd != cwd || in.PermissionMode != "default" || in.Queries != 0 || in.SessionID != s.ID {
		t.Errorf("Info = %+v", in)
	}
	if uuid.Validate(in.ClaudeSessionID) != nil || uuid.Validate(s.ID) != nil || in.ClaudeSessionID == s.ID {
		t.Errorf("ids: session %q, claude session %q", s.ID, in.ClaudeSessionID)
	}
	if got, err := m.Get(s.ID); err != nil || got != s {
		t.Errorf("Get = %p, %v", got, err)
	}

	var pr probe
	r := query(t, s, "hi", QueryOptions{OnEvent: pr.onEvent(s)})
	pr.checkArg(t, "--session-id="+in.ClaudeSessionID, true)
	if pr.pid != in.PID {
		t.Errorf("the query ran in pid %d, want %d", pr.pid, in.PID)
	}
	if r.FinalText != hello {
		t.Errorf("FinalText = %q, want %q (once)", r.FinalText, hello)
	}
	if r.ClaudeSessionID != in.ClaudeSessionID {
		t.Errorf("ClaudeSessionID = %q, want %q", r.ClaudeSessionID, in.ClaudeSessionID)
	}
	if want := (Usage{InputTokens: 10, OutputTokens: 9}); r.Usage != want {
		t.Errorf("Usage = %+v, want %+v", r.Usage, want)
	}
	if r.NumTurns != 1 || !approx(r.CostUSD, plainCost) || r.IsError || r.Subtype != "success" ||
		r.StopReason != "end_turn" || r.Model != defaultModel || r.DurationMs != 136 || r.DurationAPIMs != 84 ||
		r.Interrupted || r.TimedOut || r.ErrorText != "" || len(r.ToolInvocations) != 0 {
		t.Errorf("result = %+v", r)
	}
	in2 := s.Info()
	if in2.State != StateIdle || in2.PID != in.PID || in2.Queries != 1 || in2.Usage != r.Usage ||
		!approx(in2.CostUSD, plainCost) || !in2.LastUsed.After(in.LastUsed) {
		t.Errorf("Info after the query = %+v", in2)
	}
	if _, err := s.Query(ctxFor(t), "", QueryOptions{}); !errors.Is(err, ErrEmptyPrompt) {
		t.Errorf("empty prompt: %v", err)
	}
}

func TestCreateModels(t *testing.T) {
	t.Parallel()
	m := newManager(t, Config{})
	for _, tc := range []struct{ model, want string }{
		{"sonnet", "claude-sonnet-5"},
		{"haiku", "claude-haiku-4-5-20251001"},
		{"claude-made-up-1", "claude-made-up-1"}, // unknown ids stay as given
	} {
		s := create(t, m, CreateOptions{SessionOptions: claudeagent.SessionOptions{Model: tc.model}})
		if got := s.Info().Model; got != tc.want {
			t.Errorf("model %q: Info().Model = %q, want %q", tc.model, got, tc.want)
		}
		r := query(t, s, "hi", QueryOptions{})
		if r.Model != tc.want {
			t.Errorf("model %q: result Model = %q, want %q", tc.model, r.Model, tc.want)
		}
		// Switching resolves through the same list.
		got, err := s.SetModel(ctxFor(t), "haiku")
		if err != nil || got != "claude-haiku-4-5-20251001" {
			t.Errorf("SetModel(haiku) = %q, %v", got, err)
		}
		if _, err := s.SetModel(ctxFor(t), "no spaces"); err == nil {
			t.Errorf("SetModel accepted an invalid model")
		}
		if _, err := m.Close(s.ID); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.Create(ctxFor(t), CreateOptions{SessionOptions: claudeagent.SessionOptions{Model: "bad model"}, Cwd: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "invalid model") {
		t.Errorf("Create with a bad model: %v", err)
	}
}

// The CLI reports a running total per process; each result carries its
// own turn's cost and Info the sum, also across a process restart.
func TestPerTurnCost(t *testing.T) {
	t.Parallel()
	m := newManager(t, Config{MaxLive: 1})
	s := create(t, m, CreateOptions{})
	var sum float64
	for i, tc := range []struct {
		prompt string
		want   float64
	}{{"hi", plainCost}, {"THINK", thinkCost}, {"hi", plainCost}, {"ERR400", 0}, {"THINK", thinkCost}} {
		if i == 3 {
			// A new process starts its total from zero.
			pid := s.Info().PID
			create(t, m, CreateOptions{}) // MaxLive 1: s goes dormant
			if st := s.Info().State; st != StateDormant {
				t.Fatalf("state = %q, want dormant", st)
			}
			checkGone(t, pid)
		}
		r := query(t, s, tc.prompt, QueryOptions{})
		if !approx(r.CostUSD, tc.want) {
			t.Errorf("turn %d (%s): CostUSD = %v, want %v", i, tc.prompt, r.CostUSD, tc.want)
		}
		sum += tc.want
		if got := s.Info().CostUSD; !approx(got, sum) {
			t.Errorf("after turn %d: Info().CostUSD = %v, want %v", i, got, sum)
		}
	}
}

// ---------------------------------------------------------------------------
// Tools, thinking, events

func TestToolTurn(t *testing.T) {
	t.Parallel()
	t.Run("allowed", func(t *testing.T) {
		t.Parallel()
		// bypassPermissions runs the tool without a can_use_tool question.
		m := newManager(t, Config{}, "IS_SANDBOX", "1")
		s := create(t, m, CreateOptions{SessionOptions: claudeagent.SessionOptions{PermissionMode: "bypassPermissions"}})
		p := startQuery(ctxFor(t), s, "TOOL_BASH[echo hi]", QueryOptions{})
		r := p.wait(t, waitLimit)
		want := []ToolInvocation{{ID: "toolu_fake_1", Name: "Bash", Input: json.RawMessage(`{"command":"echo hi","description":"Run a command"}`), Output: "hi", Done: true}}
		if !reflect.DeepEqual(r.ToolInvocations, want) {
			t.Errorf("ToolInvocations = %+v\nwant %+v", r.ToolInvocations, want)
		}
		if r.FinalText != toolSaid || r.IsError || r.NumTurns != 2 || !approx(r.CostUSD, bypassCost) || len(r.PermissionDenials) != 0 {
			t.Errorf("result = %+v", r)
		}
		wantKinds := []EventKind{EventTurnStarted, EventText, EventToolStarted, EventToolFinished, EventText, EventDone}
		if got := p.rec.kinds(); !slices.Equal(got, wantKinds) {
			t.Errorf("events = %v\nwant %v", got, wantKinds)
		}
		ev := p.rec.snapshot()
		if len(ev) != len(wantKinds) {
			t.FailNow()
		}
		if ev[2].Tool != "Bash" || ev[2].ToolID != "toolu_fake_1" || ev[2].Text != "$ echo hi" ||
			ev[3].Tool != "Bash" || ev[3].ToolID != "toolu_fake_1" || ev[3].IsError || ev[3].Text != "hi" || ev[3].ToolsUsed != 1 ||
			ev[1].Text != "Running a command." || ev[4].Text != toolSaid || ev[5].IsError {
			t.Errorf("events = %+v", ev)
		}
		if _, err := m.Close(s.ID); err != nil {
			t.Fatal(err)
		}
		p.rec.checkNoLate(t)
	})
	t.Run("denied", func(t *testing.T) {
		t.Parallel()
		m := newManager(t, Config{})
		s := create(t, m, CreateOptions{})
		p := startQuery(ctxFor(t), s, "TOOL_BASH[touch made_by_tool.txt && echo hi]", QueryOptions{})
		r := p.wait(t, waitLimit)
		if len(r.ToolInvocations) != 1 {
			t.Fatalf("ToolInvocations = %+v", r.ToolInvocations)
		}
		inv := r.ToolInvocations[0]
		if inv.ID != "toolu_fake_1" || inv.Name != "Bash" || !inv.IsError || inv.Error != inv.Output ||
			!strings.Contains(inv.Output, "Permission to use Bash was denied") {
			t.Errorf("invocation = %+v", inv)
		}
		var in map[string]any
		if err := json.Unmarshal(inv.Input, &in); err != nil || in["command"] != "touch made_by_tool.txt && echo hi" {
			t.Errorf("input = %s", inv.Input)
		}
		if len(r.PermissionDenials) != 1 || r.PermissionDenials[0].ToolName != "Bash" || r.PermissionDenials[0].ToolUseID != "toolu_fake_1" {
			t.Errorf("PermissionDenials = %+v", r.PermissionDenials)
		}
		wantKinds := []EventKind{EventTurnStarted, EventText, EventToolStarted, EventPermission, EventToolFinished, EventText, EventDone}
		if got := p.rec.kinds(); !slices.Equal(got, wantKinds) {
			t.Errorf("events = %v\nwant %v", got, wantKinds)
		}
		ev := p.rec.snapshot()
		if len(ev) != len(wantKinds) {
			t.FailNow()
		}
		if e := ev[3]; !e.IsError || e.Tool != "Bash" || !strings.HasPrefix(e.Text, "denied Bash ($ touch made_by_tool.txt && echo hi)") {
			t.Errorf("permission event = %+v", e)
		}
		if e := ev[4]; !e.IsError {
			t.Errorf("tool_finished event = %+v", e)
		}
		if _, err := m.Close(s.ID); err != nil {
			t.Fatal(err)
		}
		p.rec.checkNoLate(t)
	})
}

func TestThinking(t *testing.T) {
	t.Parallel()
	m := newManager(t, Config{})
	s := create(t, m, CreateOptions{})
	for _, include := range []bool{false, true} {
		p := startQuery(ctxFor(t), s, "THINK", QueryOptions{IncludeThinking: include})
		r := p.wait(t, waitLimit)
		if r.FinalText != hello {
			t.Errorf("FinalText = %q", r.FinalText)
		}
		if include && !slices.Equal(r.Thinking, []string{"Let me think about this."}) {
			t.Errorf("IncludeThinking: Thinking = %q", r.Thinking)
		}
		if !include && len(r.Thinking) != 0 {
			t.Errorf("without IncludeThinking: Thinking = %q", r.Thinking)
		}
		want := []EventKind{EventTurnStarted, EventThinking, EventText, EventDone}
		if got := p.rec.kinds(); !slices.Equal(got, want) {
			t.Errorf("events = %v, want %v", got, want)
		}
	}
}

// ---------------------------------------------------------------------------
// Busy, interrupt, cancellation, timeouts

func TestBusy(t *testing.T) {
	t.Parallel()
	m := newManager(t, Config{})
	s := create(t, m, CreateOptions{})
	first := startQuery(ctxFor(t), s, "SLOW2", QueryOptions{})
	first.waitStarted(t)

	// SLOW6 takes 2.5 s: had it been written to the CLI, the fake would
	// still be replaying it when the next query's prompt arrives.
	_, err := s.Query(ctxFor(t), "SLOW6 (must not reach the CLI)", QueryOptions{
		OnEvent: func(e Event) { t.Errorf("the refused query emitted %s", e.Kind) },
	})
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), s.ID) {
		t.Fatalf("second query: %v, want ErrBusy naming the session", err)
	}
	select {
	case <-first.done:
		t.Fatalf("the first query had ended before the busy check; the test proves nothing")
	default:
	}
	r := first.wait(t, waitLimit)
	if r.FinalText != chunks(2) || r.IsError || r.Interrupted || r.Subtype != "success" || !approx(r.CostUSD, plainCost) {
		t.Errorf("the running query's result changed: %+v", r)
	}
	r = query(t, s, "hi", QueryOptions{})
	if r.FinalText != hello || r.IsError {
		t.Errorf("next query got %q (is_error %v); the refused prompt reached the CLI?", r.FinalText, r.IsError)
	}
	if q := s.Info().Queries; q != 2 {
		t.Errorf("Queries = %d, want 2", q)
	}
}

func TestInterrupt(t *testing.T) {
	t.Parallel()
	m := newManager(t, Config{InterruptGrace: 20 * time.Second})
	s := create(t, m, CreateOptions{})
	if running, forced := s.Interrupt(ctxFor(t)); running || forced {
		t.Errorf("idle Interrupt = %v, %v", running, forced)
	}
	pid := s.Info().PID
	p := startQuery(ctxFor(t), s, "SLOW", QueryOptions{}) // 20 chunks, 10 s
	p.waitStarted(t)
	attempts := interruptUntilDone(t, s, p)
	r := p.wait(t, waitLimit)
	t.Logf("interrupted after %s, %d attempt(s)", p.dur, attempts)
	// An interrupt the caller asked for is an outcome, not an error.
	if !r.Interrupted || r.Subtype != "error_during_execution" || r.IsError || r.ErrorText != "" || r.TimedOut || r.CostUSD != 0 {
		t.Errorf("result = %+v", r)
	}
	if !strings.HasPrefix(r.FinalText, "chunk0 ") || r.FinalText == chunks(20) {
		t.Errorf("FinalText = %q, want the partial text", r.FinalText)
	}
	if p.dur > 5*time.Second {
		t.Errorf("the interrupted query took %s (the slow turn runs 10 s)", p.dur)
	}
	if in := s.Info(); in.State != StateIdle || in.PID != pid {
		t.Errorf("after the interrupt: %+v (want idle, pid %d)", in, pid)
	}
	r = query(t, s, "hi", QueryOptions{})
	if r.FinalText != hello || r.Interrupted || r.IsError {
		t.Errorf("next query: %+v", r)
	}
}

// blockingAsker is an AskPermission that reports the question on asked
// and blocks until its context ends; it then waits for release (so that
// an event its answer causes would come late) and closes finished.
type blockingAsker struct {
	asked    chan *PermissionRequest
	release  chan struct{}
	finished chan struct{}
}

func newBlockingAsker() *blockingAsker {
	return &blockingAsker{asked: make(chan *PermissionRequest, 1), release: make(chan struct{}), finished: make(chan struct{})}
}

func (a *blockingAsker) ask(ctx context.Context, req *PermissionRequest) (*claudeagent.PermissionResult, error) {
	defer close(a.finished)
	a.asked <- req
	<-ctx.Done()
	select {
	case <-a.release:
	case <-time.After(2 * time.Second): // in case Query waits for us
	}
	return nil, ctx.Err()
}

// Interrupting while a permission question is pending: the CLI cancels
// the question, the turn ends with aborted_tools, and nothing reaches
// OnEvent after Query returned.
func TestInterruptDuringPermission(t *testing.T) {
	t.Parallel()
	m := newManager(t, Config{})
	s := create(t, m, CreateOptions{})
	a := newBlockingAsker()
	p := startQuery(ctxFor(t), s, "TOOL_BASH[touch made_by_tool.txt && echo hi]", QueryOptions{AskPermission: a.ask})
	req := <-a.asked
	if req.SessionID != s.ID || req.ToolName != "Bash" || req.ToolUseID != "toolu_fake_1" || req.Cwd != s.Info().Cwd {
		t.Errorf("permission request = %+v", req)
	}
	if running, forced := s.Interrupt(ctxFor(t)); !running || forced {
		t.Fatalf("Interrupt = %v, %v", running, forced)
	}
	r := p.wait(t, waitLimit)
	close(a.release)
	if !r.Interrupted || r.Subtype != "error_during_execution" || r.TerminalReason != "aborted_tools" {
		t.Errorf("result = %+v", r)
	}
	<-a.finished
	// What the handler does after the asker returned (the policy, an
	// event) cannot be awaited; give it a moment.
	waitUntil(t, 500*time.Millisecond, "", func() bool {
		p.rec.mu.Lock()
		defer p.rec.mu.Unlock()
		return len(p.rec.late) > 0
	}, true)
	p.rec.checkNoLate(t)
}

func TestCancelQuery(t *testing.T) {
	t.Parallel()
	t.Run("permission_wait", func(t *testing.T) {
		t.Parallel()
		m := newManager(t, Config{})
		s := create(t, m, CreateOptions{})
		pid := s.Info().PID
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		a := newBlockingAsker()
		defer close(a.release)
		p := startQuery(ctx, s, "TOOL_BASH[touch made_by_tool.txt && echo hi]", QueryOptions{AskPermission: a.ask})
		<-a.asked
		cancel()
		r := p.wait(t, waitLimit)
		if !r.Interrupted || r.TerminalReason != "aborted_tools" {
			t.Errorf("result = %+v", r)
		}
		if in := s.Info(); in.State != StateIdle || in.PID != pid {
			t.Errorf("after cancelling: %+v (want idle, pid %d)", in, pid)
		}
		if r := query(t, s, "hi", QueryOptions{}); r.FinalText != hello {
			t.Errorf("next query: %+v", r)
		}
	})
	t.Run("streaming", func(t *testing.T) {
		t.Parallel()
		m := newManager(t, Config{InterruptGrace: 3 * time.Second})
		s := create(t, m, CreateOptions{})
		pid := s.Info().PID
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		p := startQuery(ctx, s, "SLOW", QueryOptions{})
		p.waitStarted(t)
		cancel()
		r := p.wait(t, waitLimit)
		if !r.Interrupted || p.dur > 8*time.Second {
			t.Errorf("result after %s = %+v", p.dur, r)
		}
		if in := s.Info(); in.PID != pid {
			// The fake drops an interrupt that overtakes the prompt; the
			// grace then ends the process. Either way the session lives.
			t.Logf("the interrupt was not honoured in time; process replaced (%+v)", in)
		}
		if r := query(t, s, "hi", QueryOptions{}); r.FinalText != hello {
			t.Errorf("next query: %+v", r)
		}
	})
}

func TestQueryTimeout(t *testing.T) {
	t.Parallel()
	t.Run("honoured", func(t *testing.T) {
		t.Parallel()
		m := newManager(t, Config{QueryTimeout: 500 * time.Millisecond, InterruptGrace: 5 * time.Second})
		s := create(t, m, CreateOptions{})
		pid := s.Info().PID
		p := startQuery(ctxFor(t), s, "SLOW", QueryOptions{})
		r := p.wait(t, waitLimit)
		if !r.TimedOut || !r.Interrupted || r.Subtype != "error_during_execution" || !r.IsError || !strings.Contains(r.ErrorText, "timed out") {
			t.Errorf("result = %+v", r)
		}
		if p.dur < 500*time.Millisecond || p.dur > 5*time.Second {
			t.Errorf("the query took %s", p.dur)
		}
		if in := s.Info(); in.State != StateIdle || in.PID != pid {
			t.Errorf("after the timeout: %+v (want idle, pid %d)", in, pid)
		}
		if r := query(t, s, "hi", QueryOptions{}); r.FinalText != hello || r.TimedOut {
			t.Errorf("next query: %+v", r)
		}
	})
	t.Run("interrupt_ignored", func(t *testing.T) {
		t.Parallel()
		m := newManager(t, Config{QueryTimeout: 300 * time.Millisecond, InterruptGrace: 300 * time.Millisecond},
			"FAKE_CLAUDE_IGNORE_CONTROL", "interrupt")
		s := create(t, m, CreateOptions{})
		in := s.Info()
		p := startQuery(ctxFor(t), s, "SLOW", QueryOptions{})
		r := p.wait(t, waitLimit)
		if !r.TimedOut || !r.Interrupted || !r.IsError || r.Subtype != "error_no_result" ||
			!strings.Contains(r.ErrorText, "the query timed out, and claude did not acknowledge the interrupt within 2s") {
			t.Errorf("result = %+v", r)
		}
		// The timeout, the 2 s the interrupt may take to be acknowledged,
		// and at most a second more to stop the process.
		if limit := 300*time.Millisecond + 2*time.Second + time.Second; p.dur > limit {
			t.Errorf("the query took %s to return, want at most %s", p.dur, limit)
		}
		checkGone(t, in.PID)
		if got := s.Info(); got.State != StateDormant || got.PID != 0 {
			t.Errorf("after the kill: state %q pid %d, want dormant", got.State, got.PID)
		}
		var pr probe
		r = query(t, s, "hi", QueryOptions{OnEvent: pr.onEvent(s)})
		if r.FinalText != hello || r.ClaudeSessionID != in.ClaudeSessionID {
			t.Errorf("next query: %+v", r)
		}
		if pr.pid == in.PID || pr.pid == 0 {
			t.Errorf("next query ran in pid %d (old %d)", pr.pid, in.PID)
		}
		pr.checkArg(t, "--resume="+in.ClaudeSessionID, true)
	})
}

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
	if got := s.Info(); got.State != StateDormant || got.PID != 0 || m.LiveCount() != 0 {
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
	waitUntil(t, 10*time.Second, "the idle process to die", func() bool { return s.Info().State == StateDormant })
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
	if st := s.Info().State; st != StateDormant {
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
		if in := s.Info(); in.State == StateFailed {
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
			// starting, so nothing reads the map meanwhile).
			cfg.Env["FAKE_CLAUDE_IGNORE_CONTROL"] = "initialize"
			p := startQuery(ctxFor(t), a, "hi", QueryOptions{})
			waitUntil(t, 10*time.Second, "the start", func() bool { return a.Info().State == StateStarting })
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
			if in := a.Info(); in.State != StateClosed {
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
	for _, want := range []string{"2 sessions are open", "--max-sessions is 2", "close one"} {
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
	if got := a.Info(); got.State != StateDormant || got.PID != 0 {
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
	if got := b.Info(); got.State != StateDormant {
		t.Errorf("b after a resumed: state %q, want dormant", got.State)
	}
	checkGone(t, bPID)
	if got := a.Info(); got.State != StateIdle || got.Queries != 2 {
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
	waitUntil(t, 10*time.Second, "the session to go dormant", func() bool { return s.Info().State == StateDormant })
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
	if st := s.Info().State; st != StateClosed {
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
		t.Errorf("Count after Shutdown = %d; sessions stay (dormant) for the registry", n)
	}
}

// ---------------------------------------------------------------------------
// Validation

func TestValidateModel(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"", "opus", "sonnet", "haiku", "claude-sonnet-4-5", "claude-opus-4-8[1m]", "claude-3.5_x", strings.Repeat("a", 100)} {
		if err := ValidateModel(ok); err != nil {
			t.Errorf("ValidateModel(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"has space", "semi;colon", "quote\"", "new\nline", "slash/x", strings.Repeat("a", 101), "émoji"} {
		err := ValidateModel(bad)
		if err == nil || !strings.Contains(err.Error(), "invalid model") || !strings.Contains(err.Error(), "opus, sonnet, haiku") {
			t.Errorf("ValidateModel(%q) = %v", bad, err)
		}
	}
}

func TestValidatePermissionMode(t *testing.T) {
	t.Parallel()
	for _, ok := range append([]string{""}, PermissionModes...) {
		if err := ValidatePermissionMode(ok); err != nil {
			t.Errorf("ValidatePermissionMode(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"Default", "bypass", "yolo", " plan", "acceptedits"} {
		err := ValidatePermissionMode(bad)
		if err == nil || !strings.Contains(err.Error(), strings.Join(PermissionModes, ", ")) {
			t.Errorf("ValidatePermissionMode(%q) = %v", bad, err)
		}
	}
}

func TestValidateDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		in, want, errPart string
	}{
		{dir, dir, ""},
		{dir + "/./sub/..", dir, ""},
		{dir + "/", dir, ""},
		{"relative/dir", "", "not an absolute path"},
		{"", "", "not an absolute path"},
		{filepath.Join(dir, "missing"), "", "does not exist"},
		{file, "", "not a directory"},
	} {
		got, err := ValidateDir("cwd", tc.in)
		switch {
		case tc.errPart == "" && (err != nil || got != tc.want):
			t.Errorf("ValidateDir(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		case tc.errPart != "" && (err == nil || !strings.Contains(err.Error(), tc.errPart) || !strings.HasPrefix(err.Error(), "cwd ")):
			t.Errorf("ValidateDir(%q) = %q, %v; want an error about %q", tc.in, got, err, tc.errPart)
		}
	}
}

func TestValidateToolRules(t *testing.T) {
	t.Parallel()
	if err := ValidateToolRules("allowedTools", []string{"Bash", "Bash(git:*)", "Edit", "mcp__srv__tool", "Read(./src/**)", "WebFetch(domain:example.com)", "*"}); err != nil {
		t.Errorf("valid rules: %v", err)
	}
	if err := ValidateToolRules("allowedTools", nil); err != nil {
		t.Errorf("no rules: %v", err)
	}
	for _, bad := range []string{"", "Bash git", "Bash(x)y", "Bash(\n)", "Ba,sh", "(x)", "Bash;rm"} {
		err := ValidateToolRules("disallowedTools", []string{"Edit", bad})
		if err == nil || !strings.Contains(err.Error(), "invalid disallowedTools entry") {
			t.Errorf("ValidateToolRules(%q) = %v", bad, err)
		}
	}
}

func TestValidateMCPServers(t *testing.T) {
	t.Parallel()
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	for _, tc := range []struct {
		name    string
		servers map[string]json.RawMessage
		errPart string
	}{
		{"none", nil, ""},
		{"stdio", map[string]json.RawMessage{"fs": raw(`{"command":"npx","args":["-y","srv"],"env":{"A":"b"}}`)}, ""},
		{"stdio_typed", map[string]json.RawMessage{"fs": raw(`{"type":"stdio","command":"srv"}`)}, ""},
		{"http", map[string]json.RawMessage{"web": raw(`{"type":"http","url":"https://example.com/mcp"}`)}, ""},
		{"sse", map[string]json.RawMessage{"web": raw(`{"type":"sse","url":"http://localhost:1/sse"}`)}, ""},
		{"no_command", map[string]json.RawMessage{"fs": raw(`{"args":["x"]}`)}, `a stdio server needs "command"`},
		{"http_no_url", map[string]json.RawMessage{"web": raw(`{"type":"http"}`)}, `needs an http(s) "url"`},
		{"http_bad_url", map[string]json.RawMessage{"web": raw(`{"type":"http","url":"ftp://x"}`)}, `needs an http(s) "url"`},
		{"bad_type", map[string]json.RawMessage{"x": raw(`{"type":"websocket","url":"https://x"}`)}, "not one of stdio, http, sse"},
		{"not_object", map[string]json.RawMessage{"x": raw(`"npx srv"`)}, `invalid mcpServers["x"]`},
		{"bad_args", map[string]json.RawMessage{"x": raw(`{"command":"a","args":"b"}`)}, `invalid mcpServers["x"]`},
		{"empty_name", map[string]json.RawMessage{"": raw(`{"command":"a"}`)}, "empty name"},
	} {
		err := ValidateMCPServers(tc.servers)
		doc := mcpConfig(tc.servers, false)
		if tc.errPart != "" {
			if err == nil || !strings.Contains(err.Error(), tc.errPart) {
				t.Errorf("%s: err = %v, want %q", tc.name, err, tc.errPart)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if len(tc.servers) == 0 {
			if doc != "" {
				t.Errorf("%s: doc = %q", tc.name, doc)
			}
			continue
		}
		var parsed struct {
			MCPServers map[string]json.RawMessage `json:"mcpServers"`
		}
		if err := json.Unmarshal([]byte(doc), &parsed); err != nil || len(parsed.MCPServers) != len(tc.servers) {
			t.Errorf("%s: doc = %s (%v)", tc.name, doc, err)
		}
		for k, v := range tc.servers {
			var a, b any
			_ = json.Unmarshal(v, &a)
			_ = json.Unmarshal(parsed.MCPServers[k], &b)
			if !reflect.DeepEqual(a, b) {
				t.Errorf("%s: server %q = %s, want %s", tc.name, k, parsed.MCPServers[k], v)
			}
		}
	}
}

func TestValidateCreateOptions(t *testing.T) {
	t.Parallel()
	m := NewManager(Config{})
	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		opts    CreateOptions
		errPart string
	}{
		{"ok", CreateOptions{SessionOptions: claudeagent.SessionOptions{Model: "sonnet", PermissionMode: "plan", AllowedTools: []string{"Bash(git:*)"}}, Cwd: dir}, ""},
		{"bad_mode", CreateOptions{SessionOptions: claudeagent.SessionOptions{PermissionMode: "yolo"}, Cwd: dir}, "invalid permissionMode"},
		{"bad_allowed", CreateOptions{SessionOptions: claudeagent.SessionOptions{AllowedTools: []string{"a b"}}, Cwd: dir}, "invalid allowedTools entry"},
		{"bad_disallowed", CreateOptions{SessionOptions: claudeagent.SessionOptions{DisallowedTools: []string{"a b"}}, Cwd: dir}, "invalid disallowedTools entry"},
		{"neg_turns", CreateOptions{SessionOptions: claudeagent.SessionOptions{MaxTurns: -1}, Cwd: dir}, "invalid maxTurns"},
		{"fork_alone", CreateOptions{Cwd: dir, ForkSession: true}, "forkSession needs resumeSessionId"},
		{"bad_resume", CreateOptions{Cwd: dir, ResumeSessionID: "--help"}, "invalid resumeSessionId"},
		{"relative_cwd", CreateOptions{Cwd: "x"}, "cwd \"x\" is not an absolute path"},
		{"bad_add_dir", CreateOptions{SessionOptions: claudeagent.SessionOptions{AddDirs: []string{"/does/not/exist"}}, Cwd: dir}, "addDirs entry"},
	} {
		opts := tc.opts
		err := m.Validate(&opts)
		if (err == nil) != (tc.errPart == "") || (err != nil && !strings.Contains(err.Error(), tc.errPart)) {
			t.Errorf("%s: Validate = %v, want %q", tc.name, err, tc.errPart)
		}
	}
	opts := CreateOptions{}
	if err := m.Validate(&opts); err != nil || opts.Cwd == "" {
		t.Errorf("empty cwd: %v, cwd %q (want the server's)", err, opts.Cwd)
	}
}

func TestAllowedRoots(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	inside := filepath.Join(root, "project")
	outside := t.TempDir()
	sibling := root + "-evil" // shares root's prefix
	for _, d := range []string{inside, sibling, filepath.Join(outside, "sub")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { os.RemoveAll(sibling) })
	escape := filepath.Join(root, "escape")
	if err := os.Symlink(outside, escape); err != nil {
		t.Skipf("symlinks: %v", err)
	}
	m := newManager(t, Config{AllowedRoots: []string{root}})
	for _, dir := range []string{root, inside} {
		opts := CreateOptions{Cwd: dir}
		if err := m.Validate(&opts); err != nil {
			t.Errorf("cwd %s: %v", dir, err)
		}
	}
	for _, dir := range []string{outside, escape, sibling, filepath.Join(escape, "sub")} {
		opts := CreateOptions{Cwd: dir}
		err := m.Validate(&opts)
		if err == nil || !strings.Contains(err.Error(), "outside the directories this server allows") || !strings.Contains(err.Error(), root) {
			t.Errorf("cwd %s: %v, want a refusal naming the root", dir, err)
		}
	}
	opts := CreateOptions{SessionOptions: claudeagent.SessionOptions{AddDirs: []string{inside, escape}}, Cwd: inside}
	if err := m.Validate(&opts); err == nil || !strings.Contains(err.Error(), "addDirs entry") {
		t.Errorf("addDirs escaping: %v", err)
	}
	if _, err := m.Create(ctxFor(t), CreateOptions{Cwd: escape}); err == nil {
		t.Errorf("Create accepted a cwd outside the roots")
	}
	if n := m.Count(); n != 0 {
		t.Errorf("Count = %d after refusals", n)
	}
	s := create(t, m, CreateOptions{Cwd: inside})
	if got := s.Info().Cwd; got != inside {
		t.Errorf("Cwd = %q", got)
	}
}

func TestMaxDepth(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		depth, max int
		refused    bool
	}{{0, 0, false}, {5, 0, false}, {1, 2, false}, {2, 2, true}, {3, 2, true}} {
		m := newManager(t, Config{Depth: tc.depth, MaxDepth: tc.max})
		s, err := m.Create(ctxFor(t), CreateOptions{Cwd: t.TempDir()})
		if tc.refused {
			if !errors.Is(err, ErrDepthExceeded) || !strings.Contains(err.Error(), fmt.Sprintf("--max-depth is %d", tc.max)) {
				t.Errorf("depth %d max %d: %v, want ErrDepthExceeded", tc.depth, tc.max, err)
			}
			if m.Count() != 0 || m.LiveCount() != 0 {
				t.Errorf("depth %d max %d: a refused create left a session", tc.depth, tc.max)
			}
			continue
		}
		if err != nil || s == nil {
			t.Errorf("depth %d max %d: %v", tc.depth, tc.max, err)
		}
	}
}

func TestAllowedModes(t *testing.T) {
	t.Parallel()
	m := newManager(t, Config{AllowedModes: []string{"default", "plan"}})
	_, err := m.Create(ctxFor(t), CreateOptions{SessionOptions: claudeagent.SessionOptions{PermissionMode: "acceptEdits"}, Cwd: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), `permissionMode "acceptEdits" is not allowed by this server (allowed: default, plan; --allowed-permission-modes)`) {
		t.Errorf("Create(acceptEdits): %v", err)
	}
	if m.BypassAvailable() {
		t.Errorf("BypassAvailable with bypassPermissions not allowed")
	}
	s := create(t, m, CreateOptions{SessionOptions: claudeagent.SessionOptions{PermissionMode: "plan"}})
	if got := s.Info().PermissionMode; got != "plan" {
		t.Errorf("PermissionMode = %q", got)
	}
	if err := s.SetPermissionMode(ctxFor(t), "acceptEdits"); err == nil || !strings.Contains(err.Error(), "not allowed") {
		t.Errorf("SetPermissionMode(acceptEdits): %v", err)
	}
	if err := s.SetPermissionMode(ctxFor(t), "default"); err != nil {
		t.Errorf("SetPermissionMode(default): %v", err)
	}
	if got := s.Info().PermissionMode; got != "default" {
		t.Errorf("PermissionMode = %q after switching", got)
	}
}

// Not parallel: it changes the process environment.
func TestBypassAvailability(t *testing.T) {
	t.Setenv("IS_SANDBOX", "")
	plain := NewManager(Config{})
	sandboxed := NewManager(Config{Env: map[string]string{"IS_SANDBOX": "1"}})
	if !sandboxed.BypassAvailable() {
		t.Errorf("with IS_SANDBOX=1 in the CLI env, bypassPermissions is unavailable")
	}
	opts := CreateOptions{SessionOptions: claudeagent.SessionOptions{PermissionMode: "bypassPermissions"}, Cwd: t.TempDir()}
	err := plain.Validate(&opts)
	if os.Geteuid() != 0 {
		if !plain.BypassAvailable() || err != nil {
			t.Errorf("not root: BypassAvailable %v, Validate %v", plain.BypassAvailable(), err)
		}
		return
	}
	if plain.BypassAvailable() {
		t.Errorf("as root without IS_SANDBOX, BypassAvailable = true")
	}
	if err == nil || !strings.Contains(err.Error(), "IS_SANDBOX=1") || !strings.Contains(err.Error(), "root") {
		t.Errorf("Validate(bypassPermissions) as root = %v", err)
	}
	t.Setenv("IS_SANDBOX", "1")
	if !plain.BypassAvailable() {
		t.Errorf("with IS_SANDBOX=1 in the server env, bypassPermissions is unavailable")
	}
}

// ---------------------------------------------------------------------------
// Registry

func TestRegistryRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "state", "sessions.json")
	r := NewRegistry(path, nil)
	if got := r.Load(); len(got) != 0 {
		t.Fatalf("Load of a missing file = %+v", got)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	entries := []RegistryEntry{
		{SessionID: "s1", ClaudeSessionID: "c1", Resumable: true, Model: "claude-sonnet-5", Created: at, LastUsed: at.Add(time.Hour),
			Queries: 3, CostUSD: 0.125, Usage: Usage{1, 2, 3, 4},
			Options: CreateOptions{SessionOptions: claudeagent.SessionOptions{Model: "sonnet", PermissionMode: "plan", AllowedTools: []string{"Bash(git:*)"}, MaxTurns: 4, AddDirs: []string{"/y"}}, Cwd: "/x", MCPServers: map[string]json.RawMessage{"fs": json.RawMessage(`{"command":"srv"}`)}, StrictMCPConfig: true, Profile: "work"}},
		{SessionID: "s2", ClaudeSessionID: "c2", Created: at, LastUsed: at},
	}
	if err := r.Save(entries, 0.5, map[string]float64{"alice": 0.5}); err != nil {
		t.Fatal(err)
	}
	if err := r.Save(entries, 0.5, map[string]float64{"alice": 0.5}); err != nil { // unchanged: no rewrite
		t.Fatal(err)
	}
	got := NewRegistry(path, nil).Load()
	for _, e := range got { // the file is indented, and so are its raw values
		for k, v := range e.Options.MCPServers {
			var b bytes.Buffer
			_ = json.Compact(&b, v)
			e.Options.MCPServers[k] = b.Bytes()
		}
	}
	if !reflect.DeepEqual(got, entries) {
		t.Errorf("Load = %+v\nwant %+v", got, entries)
	}
	files, _ := os.ReadDir(filepath.Dir(path))
	if len(files) != 1 {
		t.Errorf("state dir holds %d files (temp files left?)", len(files))
	}
	if st, err := os.Stat(filepath.Dir(path)); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("state dir: %v %v", st.Mode(), err)
	}
}

// TestRegistryVersion1 reads a file written before the options had JSON
// names: Go field names, and the MCP servers as an --mcp-config document.
func TestRegistryVersion1(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sessions.json")
	v1 := `{"version":1,"sessions":[{"sessionId":"s1","claudeSessionId":"c1","resumable":true,"options":{"Cwd":"/x","Model":"sonnet","PermissionMode":"plan","AllowedTools":["Bash"],"MaxTurns":2,"AddDirs":["/y"],"MCPConfig":"{\"mcpServers\":{\"fs\":{\"command\":\"srv\"}}}","StrictMCPConfig":true,"ResumeSessionID":"r","ForkSession":true,"Env":null,"Profile":"work","Temporary":false}}]}`
	if err := os.WriteFile(path, []byte(v1), 0o600); err != nil {
		t.Fatal(err)
	}
	got := NewRegistry(path, nil).Load()
	want := CreateOptions{SessionOptions: claudeagent.SessionOptions{Model: "sonnet", PermissionMode: "plan", AllowedTools: []string{"Bash"}, MaxTurns: 2, AddDirs: []string{"/y"}},
		Cwd: "/x", MCPServers: map[string]json.RawMessage{"fs": json.RawMessage(`{"command":"srv"}`)}, StrictMCPConfig: true, ResumeSessionID: "r", ForkSession: true, Profile: "work"}
	if len(got) != 1 || !reflect.DeepEqual(got[0].Options, want) {
		t.Errorf("Load = %+v\nwant options %+v", got, want)
	}
}

func TestRegistryCorrupt(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sessions.json")
	if err := os.WriteFile(path, []byte(`{"version":1,"sessions":[{"sessionId":`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := NewRegistry(path, nil)
	if got := r.Load(); len(got) != 0 {
		t.Errorf("Load of a corrupt file = %+v", got)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the corrupt file is still in place: %v", err)
	}
	aside, _ := filepath.Glob(path + ".corrupt-*")
	if len(aside) != 1 {
		t.Fatalf("moved-aside files: %v", aside)
	}
	if b, _ := os.ReadFile(aside[0]); !strings.HasPrefix(string(b), `{"version":1`) {
		t.Errorf("moved-aside content = %q", b)
	}
	// A manager over it starts empty and writes a good file.
	m := newManager(t, Config{Registry: r})
	if n := m.Count(); n != 0 {
		t.Errorf("Count = %d", n)
	}
	create(t, m, CreateOptions{})
	if got := NewRegistry(path, nil).Load(); len(got) != 1 {
		t.Errorf("after a create the registry holds %+v", got)
	}
}

func TestRegistryRestore(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sessions.json")
	m1 := newManager(t, Config{Registry: NewRegistry(path, nil), ProfileEnv: func(name string) (map[string]string, error) {
		return map[string]string{"PROFILE_MARKER": "secret-first"}, nil
	}})
	s := create(t, m1, CreateOptions{Profile: "work"})
	broken := create(t, m1, CreateOptions{Profile: "gone"})
	create(t, m1, CreateOptions{Temporary: true})
	r := query(t, s, "hi", QueryOptions{})
	before := s.Info()
	m1.Shutdown()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "secret-first") {
		t.Errorf("the registry holds a profile's environment:\n%s", data)
	}

	m2 := newManager(t, Config{Registry: NewRegistry(path, nil), ProfileEnv: func(name string) (map[string]string, error) {
		if name == "work" {
			return map[string]string{"PROFILE_MARKER": "restored"}, nil
		}
		return nil, fmt.Errorf("no profile %q", name)
	}})
	if n := m2.Count(); n != 2 {
		t.Fatalf("restored %d sessions, want 2 (the temporary one is not kept)", n)
	}
	rs, err := m2.Get(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	in := rs.Info()
	if in.State != StateDormant || in.PID != 0 || in.ClaudeSessionID != before.ClaudeSessionID || in.Queries != 1 ||
		!approx(in.CostUSD, plainCost) || in.Model != defaultModel || in.Profile != "work" || in.Cwd != before.Cwd || in.Usage != r.Usage {
		t.Errorf("restored = %+v\nbefore   = %+v", in, before)
	}
	if m2.LiveCount() != 0 {
		t.Errorf("restoring started processes")
	}
	var pr probe
	r2 := query(t, rs, "hi", QueryOptions{OnEvent: pr.onEvent(rs)})
	if r2.FinalText != hello || r2.ClaudeSessionID != before.ClaudeSessionID {
		t.Errorf("restored query: %+v", r2)
	}
	pr.checkArg(t, "--resume="+before.ClaudeSessionID, true)
	if pr.ok && !strings.Contains(pr.environ, "PROFILE_MARKER=restored") {
		t.Errorf("the resumed CLI lacks the profile's environment")
	}
	if got := rs.Info(); got.Queries != 2 || got.State != StateIdle {
		t.Errorf("after the query: %+v", got)
	}

	b, err := m2.Get(broken.ID)
	if err != nil {
		t.Fatal(err)
	}
	if in := b.Info(); in.State != StateRefused || !strings.Contains(in.Failure, `no profile "gone"`) {
		t.Errorf("session with a missing profile: %+v", in)
	}
	if _, err := b.Query(ctxFor(t), "hi", QueryOptions{}); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), `no profile "gone"`) {
		t.Errorf("query on a refused session: %v", err)
	}
	if m2.LiveCount() != 1 {
		t.Errorf("a refused session started a process")
	}
	if _, err := m2.Close(broken.ID); err != nil {
		t.Errorf("closing a refused session: %v", err)
	}
	if got := NewRegistry(path, nil).Load(); len(got) != 1 || got[0].SessionID != s.ID || got[0].Queries != 2 {
		t.Errorf("registry after close = %+v", got)
	}
}

// ---------------------------------------------------------------------------
// Permission policy

func TestPermissionPolicy(t *testing.T) {
	t.Parallel()
	const prompt = "TOOL_BASH[touch made_by_tool.txt && echo hi]"
	toolOf := func(t *testing.T, r *TurnResult) ToolInvocation {
		t.Helper()
		if len(r.ToolInvocations) != 1 {
			t.Fatalf("ToolInvocations = %+v", r.ToolInvocations)
		}
		return r.ToolInvocations[0]
	}
	t.Run("deny_without_asker", func(t *testing.T) {
		t.Parallel()
		m := newManager(t, Config{})
		s := create(t, m, CreateOptions{})
		inv := toolOf(t, query(t, s, prompt, QueryOptions{}))
		for _, want := range []string{"Permission to use Bash was denied", "cannot be asked", "policy is to deny", "claude_chat_mode", `allowedTools including "Bash"`} {
			if !strings.Contains(inv.Output, want) {
				t.Errorf("deny message lacks %q: %q", want, inv.Output)
			}
		}
		if !inv.IsError {
			t.Errorf("invocation = %+v", inv)
		}
	})
	t.Run("policy_allow", func(t *testing.T) {
		t.Parallel()
		m := newManager(t, Config{PermissionPolicy: "allow"})
		s := create(t, m, CreateOptions{})
		r := query(t, s, prompt, QueryOptions{})
		if inv := toolOf(t, r); inv.IsError || inv.Output != "hi" || len(r.PermissionDenials) != 0 {
			t.Errorf("result = %+v", r)
		}
	})
	t.Run("asker_times_out", func(t *testing.T) {
		t.Parallel()
		m := newManager(t, Config{PermissionTimeout: 200 * time.Millisecond})
		s := create(t, m, CreateOptions{})
		var hadDeadline atomic.Bool
		r := query(t, s, prompt, QueryOptions{AskPermission: func(ctx context.Context, req *PermissionRequest) (*claudeagent.PermissionResult, error) {
			_, ok := ctx.Deadline()
			hadDeadline.Store(ok)
			<-ctx.Done()
			return nil, ctx.Err()
		}})
		inv := toolOf(t, r)
		if !inv.IsError || !strings.Contains(inv.Output, "did not answer within 200ms") || !strings.Contains(inv.Output, "Permission to use Bash was denied") {
			t.Errorf("invocation = %+v", inv)
		}
		if !hadDeadline.Load() {
			t.Errorf("the asker's context had no deadline")
		}
		if len(r.PermissionDenials) != 1 {
			t.Errorf("PermissionDenials = %+v", r.PermissionDenials)
		}
	})
	t.Run("asker_fails", func(t *testing.T) {
		t.Parallel()
		m := newManager(t, Config{})
		s := create(t, m, CreateOptions{})
		inv := toolOf(t, query(t, s, prompt, QueryOptions{AskPermission: func(context.Context, *PermissionRequest) (*claudeagent.PermissionResult, error) {
			return nil, errors.New("boom")
		}}))
		if !inv.IsError || !strings.Contains(inv.Output, "asking the caller failed (boom)") {
			t.Errorf("invocation = %+v", inv)
		}
	})
	t.Run("allow_without_input", func(t *testing.T) {
		t.Parallel()
		m := newManager(t, Config{})
		s := create(t, m, CreateOptions{})
		var got json.RawMessage
		r := query(t, s, prompt, QueryOptions{AskPermission: func(_ context.Context, req *PermissionRequest) (*claudeagent.PermissionResult, error) {
			got = req.Input
			return &claudeagent.PermissionResult{Behavior: "allow"}, nil
		}})
		var in, want any
		_ = json.Unmarshal(got, &in)
		_ = json.Unmarshal([]byte(toolInput), &want)
		if !reflect.DeepEqual(in, want) {
			t.Errorf("asked with input %s", got)
		}
		// The fake answers an allow without an object updatedInput with a
		// ZodError tool_result, and a changed one with "fake claude ran".
		if inv := toolOf(t, r); inv.IsError || inv.Output != "hi" || r.FinalText != toolSaid || !approx(r.CostUSD, askCost) {
			t.Errorf("result = %+v", r)
		}
	})
	t.Run("allow_with_changed_input", func(t *testing.T) {
		t.Parallel()
		m := newManager(t, Config{})
		s := create(t, m, CreateOptions{})
		r := query(t, s, prompt, QueryOptions{AskPermission: func(context.Context, *PermissionRequest) (*claudeagent.PermissionResult, error) {
			return claudeagent.Allow(json.RawMessage(`{"command":"echo safer"}`)), nil
		}})
		if inv := toolOf(t, r); inv.Output != `fake claude ran updatedInput: {"command":"echo safer"}` {
			t.Errorf("invocation = %+v", inv)
		}
	})
	t.Run("deny_by_asker", func(t *testing.T) {
		t.Parallel()
		m := newManager(t, Config{PermissionPolicy: "allow"})
		s := create(t, m, CreateOptions{})
		p := startQuery(ctxFor(t), s, prompt, QueryOptions{AskPermission: func(context.Context, *PermissionRequest) (*claudeagent.PermissionResult, error) {
			return claudeagent.Deny("Host says no"), nil
		}})
		r := p.wait(t, waitLimit)
		if inv := toolOf(t, r); !inv.IsError || inv.Output != "Host says no" || len(r.PermissionDenials) != 1 {
			t.Errorf("result = %+v", r)
		}
		if ev := p.rec.snapshot(); len(ev) < 4 {
			t.Errorf("events = %+v", ev)
		} else if e := ev[3]; e.Kind != EventPermission || !e.IsError || !strings.Contains(e.Text, "Host says no") {
			t.Errorf("permission event = %+v", e)
		}
	})
}

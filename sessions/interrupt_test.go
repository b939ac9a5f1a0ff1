package sessions

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

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
		OnEvent: func(e turn.Event) { t.Errorf("the refused query emitted %s", e.Kind) },
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
	if in := s.Info(); in.State != state.Idle || in.PID != pid {
		t.Errorf("after the interrupt: %+v (want idle, pid %d)", in, pid)
	}
	r = query(t, s, "hi", QueryOptions{})
	if r.FinalText != hello || r.Interrupted || r.IsError {
		t.Errorf("next query: %+v", r)
	}
}

// blockingAsker is an AskPermission that reports the question on asked
// and blocks until its context ends; it then waits for release (so that
// an event its answer causes comes as late as the test decides) and closes
// finished. The test's cleanup releases it, should the test fail first.
type blockingAsker struct {
	asked    chan *turn.PermissionRequest
	release  chan struct{}
	once     sync.Once
	finished chan struct{}
}

func newBlockingAsker(tb testing.TB) *blockingAsker {
	a := &blockingAsker{asked: make(chan *turn.PermissionRequest, 1), release: make(chan struct{}), finished: make(chan struct{})}
	tb.Cleanup(a.free)
	return a
}

// free lets the asker return.
func (a *blockingAsker) free() { a.once.Do(func() { close(a.release) }) }

func (a *blockingAsker) ask(ctx context.Context, req *turn.PermissionRequest) (*claudeagent.PermissionResult, error) {
	defer close(a.finished)
	a.asked <- req
	<-ctx.Done()
	<-a.release
	return nil, ctx.Err()
}

// droppedAnswers is a log handler that closes done when claudeagent logs
// that it does not answer a control request the CLI cancelled: it logs
// that after the session's handler for the request returned, so the
// handler's event, if any, has been emitted.
type droppedAnswers struct {
	once sync.Once
	done chan struct{}
}

func (h *droppedAnswers) Enabled(context.Context, slog.Level) bool { return true }
func (h *droppedAnswers) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *droppedAnswers) WithGroup(string) slog.Handler            { return h }
func (h *droppedAnswers) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "control request cancelled by claude; not answering" {
		h.once.Do(func() { close(h.done) })
	}
	return nil
}

// Interrupting while a permission question is pending: the CLI cancels
// the question, the turn ends with aborted_tools, and nothing reaches
// OnEvent after Query returned. The asker returns only after Query did, so
// the permission event its handler emits is certainly late; the test reads
// the late events once the handler has returned (droppedAnswers).
func TestInterruptDuringPermission(t *testing.T) {
	t.Parallel()
	dropped := &droppedAnswers{done: make(chan struct{})}
	m := newManager(t, Config{Logger: slog.New(dropped)})
	s := create(t, m, CreateOptions{})
	a := newBlockingAsker(t)
	p := startQuery(ctxFor(t), s, "TOOL_BASH[touch made_by_tool.txt && echo hi]", QueryOptions{AskPermission: a.ask})
	req := <-a.asked
	if req.SessionID != s.ID || req.ToolName != "Bash" || req.ToolUseID != "toolu_fake_1" || req.Cwd != s.Info().Cwd {
		t.Errorf("permission request = %+v", req)
	}
	if running, forced := s.Interrupt(ctxFor(t)); !running || forced {
		t.Fatalf("Interrupt = %v, %v", running, forced)
	}
	r := p.wait(t, waitLimit)
	a.free()
	if !r.Interrupted || r.Subtype != "error_during_execution" || r.TerminalReason != "aborted_tools" {
		t.Errorf("result = %+v", r)
	}
	select {
	case <-dropped.done:
	case <-time.After(waitLimit):
		t.Fatalf("claudeagent did not log that it dropped the cancelled question's answer (has its message changed?):\n%s", allStacks())
	}
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
		a := newBlockingAsker(t)
		p := startQuery(ctx, s, "TOOL_BASH[touch made_by_tool.txt && echo hi]", QueryOptions{AskPermission: a.ask})
		<-a.asked
		cancel()
		r := p.wait(t, waitLimit)
		if !r.Interrupted || r.TerminalReason != "aborted_tools" {
			t.Errorf("result = %+v", r)
		}
		if in := s.Info(); in.State != state.Idle || in.PID != pid {
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
		if in := s.Info(); in.State != state.Idle || in.PID != pid {
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
		if got := s.Info(); got.State != state.Dormant || got.PID != 0 {
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

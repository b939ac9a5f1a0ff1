package sessions

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

// eventLog is a Listener that keeps the kinds of the events it got.
type eventLog struct {
	mu    sync.Mutex
	kinds []turn.EventKind
}

func (l *eventLog) OnEvent(e turn.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.kinds = append(l.kinds, e.Kind)
}

func (l *eventLog) has(k turn.EventKind) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, have := range l.kinds {
		if have == k {
			return true
		}
	}
	return false
}

func startRun(t *testing.T, s *Session, prompt string, o QueryOptions) *Run {
	t.Helper()
	r, err := s.StartRun(ctxFor(t), prompt, o)
	if err != nil {
		t.Fatalf("Start(%q): %v", prompt, err)
	}
	return r
}

func waitDone(t *testing.T, r *Run) {
	t.Helper()
	select {
	case <-r.Done():
	case <-time.After(waitLimit):
		t.Fatal("the run did not end")
	}
}

// TestRunCollectOnce: the listener given at start sees the turn from its
// first event, the result is collected exactly once, and the session is
// idle and takes the next run.
func TestRunCollectOnce(t *testing.T) {
	t.Parallel()
	m := newManager(t, Config{})
	s := create(t, m, CreateOptions{})
	var l eventLog
	r := startRun(t, s, "hi", QueryOptions{Listener: &l})
	if got := s.CurrentRun(); got != r {
		t.Errorf("CurrentRun = %v, want the run", got)
	}
	waitDone(t, r)
	if !l.has(turn.EventTurnStarted) || !l.has(turn.EventDone) {
		t.Errorf("the start listener got %v", l.kinds)
	}
	res, err, ok := r.Collect()
	if !ok || err != nil || res.FinalText != hello {
		t.Fatalf("Collect = %+v, %v, %v", res, err, ok)
	}
	if _, _, ok := r.Collect(); ok {
		t.Errorf("a second Collect got the result too")
	}
	if s.CurrentRun() != nil {
		t.Errorf("CurrentRun after the collect is not nil")
	}
	if _, err := m.Get(s.ID); err != nil {
		t.Errorf("a collected run closed its session: %v", err)
	}
	r2 := startRun(t, s, "hi", QueryOptions{})
	waitDone(t, r2)
	if res, _, ok := r2.Collect(); !ok || res.IsError {
		t.Errorf("the next run: %+v", res)
	}
}

// TestRunBusyAndCancel: a second run on a busy session is refused; Cancel
// interrupts the turn, and the run ends with what it produced.
func TestRunBusyAndCancel(t *testing.T) {
	t.Parallel()
	m := newManager(t, Config{})
	s := create(t, m, CreateOptions{})
	var l eventLog
	r := startRun(t, s, "SLOW", QueryOptions{Listener: &l})
	if _, err := s.StartRun(ctxFor(t), "hi", QueryOptions{}); !errors.Is(err, ErrBusy) {
		t.Errorf("a second run on a busy session: %v", err)
	}
	if p := r.Progress(); p.Elapsed <= 0 || p.LastStep != "turn started" || p.Text != "" {
		t.Errorf("Progress = %+v", p)
	}
	r.Cancel()
	waitDone(t, r)
	res, err, ok := r.Collect()
	if !ok || err != nil || !res.Interrupted || res.IsError {
		t.Fatalf("cancelled run: %+v, %v", res, err)
	}
	if got := s.Info().State; got != state.Idle {
		t.Errorf("session state after the cancel = %s", got)
	}
}

// TestRunAttachLate: a listener attached later gets the events from then
// on and the progress so far; TakeActivity reports only what is new.
func TestRunAttachLate(t *testing.T) {
	t.Parallel()
	m := newManager(t, Config{})
	s := create(t, m, CreateOptions{SessionOptions: claudeagent.SessionOptions{PermissionMode: "bypassPermissions"}})
	r := startRun(t, s, "TOOL_BASH[echo hi]", QueryOptions{})
	waitDone(t, r)
	var l eventLog
	p := r.Attach(&l)
	if p.ToolsUsed != 1 || p.Turns < 2 {
		t.Errorf("progress at attach = %+v, want 1 tool call over ≥2 API turns", p)
	}
	act := r.TakeActivity()
	if len(act) == 0 || !strings.Contains(strings.Join(act, "\n"), "tool Bash") {
		t.Errorf("activity = %q", act)
	}
	if again := r.TakeActivity(); len(again) != 0 {
		t.Errorf("activity taken twice: %q", again)
	}
	r.Detach(&l)
}

// TestRunQuestions: with QueueQuestions a permission question waits in the
// run until a view answers it; unknown and repeated answers are ignored.
func TestRunQuestions(t *testing.T) {
	t.Parallel()
	m := newManager(t, Config{})
	s := create(t, m, CreateOptions{})
	r := startRun(t, s, "TOOL_BASH[touch made_by_tool.txt && echo hi]", QueryOptions{QueueQuestions: true})
	select {
	case <-r.Asked():
	case <-time.After(waitLimit):
		t.Fatal("no question was asked")
	}
	qs := r.Questions()
	if len(qs) != 1 || qs[0].ToolName != "Bash" || qs[0].ID == "" {
		t.Fatalf("Questions = %+v", qs)
	}
	if r.Answer("permission-unknown", claudeagent.Allow(nil)) {
		t.Errorf("an unknown question was answered")
	}
	if !r.Answer(qs[0].ID, claudeagent.Allow(qs[0].Input)) {
		t.Fatal("the question could not be answered")
	}
	if r.Answer(qs[0].ID, claudeagent.Deny("late")) {
		t.Errorf("a question was answered twice")
	}
	waitDone(t, r)
	res, _, _ := r.Collect()
	if len(res.ToolInvocations) != 1 || res.ToolInvocations[0].IsError || res.ToolInvocations[0].Output != "hi" {
		t.Errorf("after allowing: %+v", res.ToolInvocations)
	}
	if len(r.Questions()) != 0 {
		t.Errorf("questions left after the turn: %+v", r.Questions())
	}
}

// TestRunQuestionTimeout: a queued question nobody answers gets the policy
// after the permission timeout.
func TestRunQuestionTimeout(t *testing.T) {
	t.Parallel()
	m := newManager(t, Config{PermissionTimeout: 200 * time.Millisecond})
	s := create(t, m, CreateOptions{})
	r := startRun(t, s, "TOOL_BASH[touch made_by_tool.txt && echo hi]", QueryOptions{QueueQuestions: true})
	waitDone(t, r)
	res, _, _ := r.Collect()
	if len(res.PermissionDenials) != 1 || !strings.Contains(res.ToolInvocations[0].Output, "did not answer within 200ms") {
		t.Errorf("unanswered question: %+v", res)
	}
}

// TestRunCloseAfter: a closeAfter run closes its session when its result is
// collected, or dropped uncollected — but not once a newer query has used
// the session (the bug: the drop timer of an old run closed a session that
// had served newer queries since).
func TestRunCloseAfter(t *testing.T) {
	t.Parallel()
	m := newManager(t, Config{})
	t.Run("collected", func(t *testing.T) {
		s := create(t, m, CreateOptions{})
		r := startRun(t, s, "hi", QueryOptions{CloseAfter: true})
		waitDone(t, r)
		r.Collect()
		if _, err := m.Get(s.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("closeAfter: the session is still open after the collect")
		}
	})
	t.Run("dropped", func(t *testing.T) {
		s := create(t, m, CreateOptions{})
		r := startRun(t, s, "hi", QueryOptions{CloseAfter: true})
		waitDone(t, r)
		r.Drop() // what the drop timer does
		if _, err := m.Get(s.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("closeAfter: the session is still open after the drop")
		}
	})
	t.Run("superseded", func(t *testing.T) {
		s := create(t, m, CreateOptions{})
		old := startRun(t, s, "hi", QueryOptions{CloseAfter: true})
		waitDone(t, old) // never collected
		next := startRun(t, s, "hi", QueryOptions{})
		if s.CurrentRun() != next {
			t.Errorf("CurrentRun is not the newer run")
		}
		waitDone(t, next)
		if _, _, ok := next.Collect(); !ok {
			t.Fatal("the newer run's result was not collected")
		}
		old.Drop() // the old run's timer fires
		if _, err := m.Get(s.ID); err != nil {
			t.Errorf("the drop of a superseded closeAfter run closed the session: %v", err)
		}
		if _, _, ok := old.Collect(); ok {
			t.Errorf("a superseded result was still collectable")
		}
	})
	t.Run("temporary_start_fails", func(t *testing.T) {
		s := create(t, m, CreateOptions{Temporary: true})
		r := startRun(t, s, "SLOW", QueryOptions{})
		if _, err := s.StartRun(ctxFor(t), "hi", QueryOptions{}); !errors.Is(err, ErrBusy) {
			t.Errorf("second start: %v", err)
		}
		if _, err := m.Get(s.ID); err != nil {
			t.Errorf("a refused second query discarded the temporary session of a running one: %v", err)
		}
		r.Cancel()
		waitDone(t, r)
		r.Collect()
		if _, err := m.Get(s.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("a temporary session survived its collected run")
		}
	})
}

// TestRunTemporaryClosesAfterAnswer: collecting a one-shot run's result
// forgets its session at once and stops its process in the background; a
// Shutdown right after waits for that stop, so nothing is left running.
func TestRunTemporaryClosesAfterAnswer(t *testing.T) {
	t.Parallel()
	m := newManager(t, Config{})
	s := create(t, m, CreateOptions{Temporary: true})
	pid := s.Info().PID
	r := startRun(t, s, "hi", QueryOptions{})
	waitDone(t, r)
	if res, err, ok := r.Collect(); !ok || err != nil || res.FinalText != hello {
		t.Fatalf("collect: %+v, %v, %v", res, err, ok)
	}
	if _, err := m.Get(s.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("the temporary session is still listed after its collect")
	}
	m.Shutdown()
	checkGone(t, pid)
}

// TestRunFollowers: a run's views and watchers all receive its events, a
// view attached late too; a result that only a watcher follows at the
// end is dropped after DropAfter, one a view follows is kept for it.
func TestRunFollowers(t *testing.T) {
	t.Parallel()
	m := newManager(t, Config{DropAfter: 200 * time.Millisecond})
	for _, viewAtEnd := range []bool{false, true} {
		s := create(t, m, CreateOptions{})
		first, watcher, late := make(eventsTo, 1024), make(eventsTo, 1024), make(eventsTo, 1024)
		r := startRun(t, s, "SLOW2", QueryOptions{Listener: first, Watchers: []Listener{watcher}})
		untilEvent(t, first, r, turn.EventTurnStarted)
		r.Attach(late)
		r.Detach(first)
		if !viewAtEnd {
			r.Detach(late)
		}
		waitDone(t, r) // every event was handed out before the query returned
		w, l, f := hasEvent(watcher, turn.EventDone), hasEvent(late, turn.EventDone), hasEvent(first, turn.EventDone)
		if !w || l != viewAtEnd || f {
			t.Errorf("the turn's end reached the watcher %v, the late view %v (attached %v), the first view %v (detached)", w, l, viewAtEnd, f)
		}
		time.Sleep(400 * time.Millisecond) // twice DropAfter
		if got := r.Collected(); got == viewAtEnd {
			t.Errorf("a view attached at the end %v: dropped %v", viewAtEnd, got)
		}
		if viewAtEnd {
			collect(t, r)
		}
	}
}

// hasEvent drains c and reports whether it held an event of kind k.
func hasEvent(c eventsTo, k turn.EventKind) bool {
	found := false
	for {
		select {
		case e := <-c:
			found = found || e.Kind == k
		default:
			return found
		}
	}
}

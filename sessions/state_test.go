package sessions

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakecli"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
)

// edge is a move the transition table allows (see state.State).
type edge struct{ from, to state.State }

func (e edge) move() state.Move { return state.Move{From: e.from, To: e.to} }

// stateScenarios drive a session (or a few) through moves of the table;
// each names the moves it must make.
var stateScenarios = []struct {
	name  string
	edges []edge
	run   func(t *testing.T) []*Session
}{
	{"life", []edge{{state.Starting, state.Idle}, {state.Idle, state.Running}, {state.Running, state.Idle},
		{state.Idle, state.Dormant}, {state.Dormant, state.Starting}, {state.Dormant, state.Closed}}, scenarioLife},
	{"queued", []edge{{state.Starting, state.Dormant}, {state.Starting, state.Queued}, {state.Queued, state.Starting},
		{state.Queued, state.Closed}}, scenarioQueued},
	{"interrupt", []edge{{state.Running, state.Interrupting}, {state.Interrupting, state.Idle}, {state.Idle, state.Closed}}, scenarioInterrupt},
	{"interrupt_unacknowledged", []edge{{state.Running, state.Interrupting}, {state.Interrupting, state.Dormant}}, scenarioInterruptStop},
	{"crash", []edge{{state.Running, state.Dormant}}, scenarioCrash},
	{"close_running", []edge{{state.Running, state.Closed}}, scenarioCloseRunning},
	{"close_interrupting", []edge{{state.Interrupting, state.Closed}}, scenarioCloseInterrupting},
	{"close_starting", []edge{{state.Starting, state.Closed}}, scenarioCloseStarting},
	{"refused", []edge{{state.Dormant, state.Refused}, {state.Refused, state.Starting}, {state.Refused, state.Closed}}, scenarioRefused},
	{"restored_refused", []edge{{state.Starting, state.Refused}}, scenarioRestoredRefused},
	{"failed", []edge{{state.Starting, state.Failed}, {state.Failed, state.Closed}}, scenarioFailed},
}

// TestStateTransitions drives every move of the transition table on
// sessions of the fake CLI and checks that each scenario made the moves it
// names. (TestMain fails the run on any move the table does not allow.)
func TestStateTransitions(t *testing.T) {
	t.Parallel()
	covered := map[state.Move]bool{}
	for _, sc := range stateScenarios {
		for _, e := range sc.edges {
			if !state.Allowed(e.from, e.to) {
				t.Errorf("scenario %s names %s, which the table does not allow", sc.name, e.move())
			}
			covered[e.move()] = true
		}
	}
	for _, e := range state.Moves() {
		if !covered[e] {
			t.Errorf("no scenario drives %s", e)
		}
	}
	for _, sc := range stateScenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			var made []state.Move
			for _, s := range sc.run(t) {
				made = append(made, moves.of(s)...)
			}
			for _, e := range sc.edges {
				if !slices.Contains(made, e.move()) {
					t.Errorf("%s not made; the moves: %v", e.move(), made)
				}
			}
		})
	}
}

func scenarioLife(t *testing.T) []*Session {
	m := newManager(t, Config{})
	s := create(t, m, CreateOptions{})
	query(t, s, "hi", QueryOptions{})
	if !s.makeDormant("test") {
		t.Fatal("could not make the session dormant")
	}
	if r := query(t, s, "hi", QueryOptions{}); r.FinalText != hello { // it resumes
		t.Errorf("the resumed query: %+v", r)
	}
	if !s.makeDormant("test") {
		t.Fatal("could not make the session dormant again")
	}
	if _, err := m.Close(s.ID); err != nil {
		t.Fatal(err)
	}
	return []*Session{s}
}

func scenarioQueued(t *testing.T) []*Session {
	m := newManager(t, Config{MaxLive: 1})
	a := create(t, m, CreateOptions{})
	running := startQuery(ctxFor(t), a, "SLOW4", QueryOptions{})
	running.waitStarted(t)
	b := create(t, m, CreateOptions{}) // every live place busy: dormant
	c := create(t, m, CreateOptions{})
	pb := startQuery(ctxFor(t), b, "hi", QueryOptions{})
	testkit.Until(t, waitLimit, "b queued", func() bool { return stateOf(b) == state.Queued })
	cctx, cancel := context.WithCancel(ctxFor(t))
	defer cancel()
	pc := startQuery(cctx, c, "hi", QueryOptions{})
	testkit.Until(t, waitLimit, "c queued", func() bool { return stateOf(c) == state.Queued })
	if _, err := m.Close(c.ID); err != nil {
		t.Fatal(err)
	}
	cancel() // it leaves the queue
	<-pc.done
	if st := stateOf(c); st != state.Closed || pc.err == nil {
		t.Errorf("a session closed while queued: %s, its query %v", st, pc.err)
	}
	running.wait(t, waitLimit)
	if r := pb.wait(t, waitLimit); r.FinalText != hello {
		t.Errorf("the queued query: %+v", r)
	}
	return []*Session{b, c}
}

func scenarioInterrupt(t *testing.T) []*Session {
	m := newManager(t, Config{})
	s := create(t, m, CreateOptions{})
	p := startQuery(ctxFor(t), s, "SLOW", QueryOptions{})
	p.waitStarted(t)
	interruptUntilDone(t, s, p)
	if r := p.wait(t, waitLimit); !r.Interrupted || stateOf(s) != state.Idle {
		t.Errorf("after the interrupt: %s, %+v", stateOf(s), r)
	}
	if _, err := m.Close(s.ID); err != nil {
		t.Fatal(err)
	}
	return []*Session{s}
}

func scenarioInterruptStop(t *testing.T) []*Session {
	m := newManager(t, Config{InterruptAck: 300 * time.Millisecond}, "FAKE_CLAUDE_IGNORE_CONTROL", "interrupt")
	s := create(t, m, CreateOptions{})
	p := startQuery(ctxFor(t), s, "SLOW", QueryOptions{})
	p.waitStarted(t)
	if running, forced := s.Interrupt(ctxFor(t)); !running || !forced {
		t.Errorf("Interrupt = running %v, forced %v; want both", running, forced)
	}
	if r := p.wait(t, waitLimit); !r.Interrupted || stateOf(s) != state.Dormant {
		t.Errorf("after the unacknowledged interrupt: %s, %+v", stateOf(s), r)
	}
	return []*Session{s}
}

func scenarioCrash(t *testing.T) []*Session {
	m := newManager(t, Config{}, "FAKE_CLAUDE_DIE_AFTER_MS", "300")
	s := create(t, m, CreateOptions{})
	if r := query(t, s, "SLOW", QueryOptions{}); !r.IsError || stateOf(s) != state.Dormant {
		t.Errorf("after the crash: %s, %+v", stateOf(s), r)
	}
	return []*Session{s}
}

func scenarioCloseRunning(t *testing.T) []*Session {
	m := newManager(t, Config{})
	s := create(t, m, CreateOptions{})
	p := startQuery(ctxFor(t), s, "SLOW", QueryOptions{})
	p.waitStarted(t)
	if _, err := m.Close(s.ID); err != nil {
		t.Fatal(err)
	}
	<-p.done
	return []*Session{s}
}

func scenarioCloseInterrupting(t *testing.T) []*Session {
	m, s, p, interrupted := interrupting(t, 5*time.Second)
	if _, err := m.Close(s.ID); err != nil {
		t.Fatal(err)
	}
	<-p.done
	<-interrupted
	return []*Session{s}
}

// scenarioCloseStarting: a session closed while its process starts stays
// closed, and its query fails (see also TestCloseDuringFailingStart).
func scenarioCloseStarting(t *testing.T) []*Session {
	cfg := fakeConfig(t, Config{MaxLive: 1, StartTimeout: time.Second})
	m := NewManager(cfg)
	t.Cleanup(func() { shutdownAndCheck(t, m) })
	a := create(t, m, CreateOptions{})
	create(t, m, CreateOptions{})                        // a goes dormant
	cfg.Env["FAKE_CLAUDE_IGNORE_CONTROL"] = "initialize" // nothing is starting now
	p := startQuery(ctxFor(t), a, "hi", QueryOptions{})
	testkit.Until(t, waitLimit, "the start", func() bool { return stateOf(a) == state.Starting })
	if _, err := m.Close(a.ID); err != nil {
		t.Fatal(err)
	}
	<-p.done
	if p.err == nil || stateOf(a) != state.Closed || m.LiveCount() != 0 {
		t.Errorf("closed during its start: query %v, state %s, %d live", p.err, stateOf(a), m.LiveCount())
	}
	return []*Session{a}
}

func scenarioRefused(t *testing.T) []*Session {
	var withdrawn atomic.Bool
	m := newManager(t, Config{ProfileEnv: func(name string) (map[string]string, error) {
		if withdrawn.Load() {
			return nil, fmt.Errorf("profile %s withdrawn", name)
		}
		return nil, nil
	}})
	s := create(t, m, CreateOptions{Profile: "work"})
	refuse := func() {
		t.Helper()
		if !s.makeDormant("test") {
			t.Fatal("could not make the session dormant")
		}
		withdrawn.Store(true)
		if _, err := s.Query(ctxFor(t), "hi", QueryOptions{}); !errors.Is(err, ErrRefused) || stateOf(s) != state.Refused {
			t.Errorf("a query under a stricter policy: %v, state %s", err, stateOf(s))
		}
		withdrawn.Store(false)
	}
	refuse()
	query(t, s, "hi", QueryOptions{}) // allowed again: it starts
	refuse()
	if _, err := m.Close(s.ID); err != nil {
		t.Fatal(err)
	}
	return []*Session{s}
}

func scenarioRestoredRefused(t *testing.T) []*Session {
	path := filepath.Join(t.TempDir(), "sessions.db")
	m1 := newManager(t, Config{Store: storeAt(t, path), ProfileEnv: func(string) (map[string]string, error) { return nil, nil }})
	s := create(t, m1, CreateOptions{Profile: "gone"})
	m1.Shutdown()
	m2 := newManager(t, Config{Store: storeAt(t, path), ProfileEnv: func(name string) (map[string]string, error) {
		return nil, fmt.Errorf("no profile %q", name)
	}})
	rs, err := m2.Get(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	return []*Session{rs}
}

func scenarioFailed(t *testing.T) []*Session {
	m := newManager(t, Config{}, fakecli.EnvExitEarly, "1:no such conversation")
	s, err := m.Open(ctxFor(t), CreateOptions{Cwd: t.TempDir(), ResumeSessionID: uuid.NewString()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Query(ctxFor(t), "hi", QueryOptions{}); !errors.Is(err, ErrFailed) {
		t.Errorf("a query whose resume fails: %v, want ErrFailed", err)
	}
	if _, err := m.Close(s.ID); err != nil {
		t.Fatal(err)
	}
	return []*Session{s}
}

// waitingOf reports whether a query waits for a create or dormancy to end.
func waitingOf(s *Session) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.Waiting()
}

// TestStateAdmission: who may drive a session's process (see State). A
// second query is refused at once; one that arrives while the running
// turn is interrupting waits for that query's end, then runs; the first
// query that arrives while a create starts the process, or dormancy stops
// it, waits for them (a second is refused meanwhile); dormancy takes only a
// session nobody owns.
func TestStateAdmission(t *testing.T) {
	t.Parallel()
	t.Run("second_refused", func(t *testing.T) {
		t.Parallel()
		m := newManager(t, Config{})
		s := create(t, m, CreateOptions{})
		p := startQuery(ctxFor(t), s, "SLOW", QueryOptions{})
		p.waitStarted(t)
		if _, err := s.Query(ctxFor(t), "hi", QueryOptions{}); !errors.Is(err, ErrBusy) {
			t.Errorf("a second query: %v, want ErrBusy", err)
		}
		if s.makeDormant("test") {
			t.Errorf("dormancy took a session a query owns")
		}
		interruptUntilDone(t, s, p)
	})
	t.Run("waits_for_interrupt", func(t *testing.T) {
		t.Parallel()
		_, s, p, interrupted := interrupting(t, 500*time.Millisecond)
		r, err := s.Query(ctxFor(t), "hi", QueryOptions{})
		if err != nil || r.FinalText != hello {
			t.Errorf("a query during the interrupt: %+v, %v; want it to wait, then run", r, err)
		}
		if r := p.wait(t, waitLimit); !r.Interrupted {
			t.Errorf("the first query was not interrupted: %+v", r)
		}
		<-interrupted
	})
	for _, who := range []state.Owner{state.Create, state.Dormancy} {
		t.Run(fmt.Sprintf("waits_for_owner_%d", who), func(t *testing.T) {
			t.Parallel()
			m := newManager(t, Config{})
			s := create(t, m, CreateOptions{})
			s.mu.Lock()
			s.st.SetOwnerLocked(who)
			s.mu.Unlock()
			if s.makeDormant("test") {
				t.Errorf("dormancy took a session somebody owns")
			}
			p := startQuery(ctxFor(t), s, "hi", QueryOptions{})
			testkit.Until(t, waitLimit, "the query waiting", func() bool { return waitingOf(s) })
			if _, err := s.Query(ctxFor(t), "hi", QueryOptions{}); !errors.Is(err, ErrBusy) {
				t.Errorf("a second query while the first waits: %v, want ErrBusy", err)
			}
			s.st.Release()
			if r := p.wait(t, waitLimit); r.FinalText != hello {
				t.Errorf("the waiting query: %+v", r)
			}
			if s.makeDormant("test") != true {
				t.Errorf("dormancy did not take the idle session nobody owns")
			}
		})
	}
}

// interrupting starts a SLOW query on a CLI that ignores interrupts and
// interrupts it, returning once the session is interrupting; interrupted
// is closed when Interrupt returns (after ack, at the latest).
func interrupting(t *testing.T, ack time.Duration) (m *Manager, s *Session, p *pending, interrupted chan struct{}) {
	t.Helper()
	m = newManager(t, Config{InterruptAck: ack}, "FAKE_CLAUDE_IGNORE_CONTROL", "interrupt")
	s = create(t, m, CreateOptions{})
	p = startQuery(ctxFor(t), s, "SLOW", QueryOptions{})
	p.waitStarted(t)
	interrupted = make(chan struct{})
	go func() {
		defer close(interrupted)
		s.Interrupt(ctxFor(t))
	}()
	testkit.Until(t, waitLimit, "the interrupt under way", func() bool { return stateOf(s) == state.Interrupting })
	return m, s, p, interrupted
}

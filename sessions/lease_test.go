package sessions

import (
	"errors"
	"strings"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakecli"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/recstore"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

// TestFailedCreateLeavesNothing: a create whose CLI cannot start (or whose
// resume the CLI does not find) returns an error and no session, and
// leaves none in the store either: not listed, not counted against
// --max-sessions or the user's quota, not back after a restart (defect 14
// of issue 43: four abandoned creates filled --max-sessions 3).
func TestFailedCreateLeavesNothing(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, open backend) {
		cfg := Config{MaxSessions: 3, UserMaxSessions: 3, WarmSpares: 0}
		cfg.Store = open(t)
		broken := newManager(t, cfg, fakecli.EnvExitEarly, "1:No conversation found with session ID: x")
		for i := range 4 {
			if _, err := broken.Create(ctxFor(t), CreateOptions{Owner: "alice"}); err == nil {
				t.Fatalf("create %d with a CLI that exits at once succeeded", i)
			}
		}
		if _, err := broken.Create(ctxFor(t), CreateOptions{Owner: "alice", ResumeSessionID: "6f1c2a51-1d7e-4d2b-9a43-0a8f5a2f7e11"}); err == nil {
			t.Fatal("a resume of a conversation nobody has succeeded")
		}
		if n := broken.Count(); n != 0 {
			t.Errorf("after failed creates the store counts %d sessions", n)
		}
		page, err := cfg.Store.List(ctxFor(t), recstore.Query{Limit: recstore.MaxLimit})
		if err != nil || len(page.Records) != 0 {
			t.Errorf("the store lists %d sessions (%v) after failed creates", len(page.Records), err)
		}
		cfg.Store = open(t)
		good := newManager(t, cfg)
		for i := range 3 {
			if _, err := good.Create(ctxFor(t), CreateOptions{Owner: "alice"}); err != nil {
				t.Fatalf("create %d after the failed ones: %v", i, err)
			}
		}
	})
}

// TestLeaseOnlyWithProcess: a session's lease is held only while a
// process runs it or starts: a session created without a process (every
// live process busy), one whose start failed and one the policy refuses
// give it back, so another instance sharing the store may run them at
// once (issue 44: 55 to 61 of 100 sessions were held by no process).
func TestLeaseOnlyWithProcess(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, open backend) {
		a, b := sharedPair(t, open, Config{MaxLive: 1, WarmSpares: 0}, fakecli.EnvSpeed, "1")
		busy := create(t, a, CreateOptions{})
		events := make(eventsTo, 1024)
		r := startRun(t, busy, "TOOL_BASH[sleep 2; echo slept]", RunOptions{Listener: events})
		untilEvent(t, events, r, turn.EventToolStarted)
		waiting := create(t, a, CreateOptions{}) // every live process is busy
		if st := stateOf(waiting); st != state.Dormant {
			t.Fatalf("the second session is %s, want dormant", st)
		}
		defer collect(t, r)
		// The other instance runs the waiting session at once.
		bs, err := b.Get(waiting.ID)
		if err != nil {
			t.Fatal(err)
		}
		if r := query(t, bs, "hi", QueryOptions{}); r.IsError {
			t.Errorf("B's query of the session A made without a process: %s", r.ErrorText)
		}
	})
}

// TestLeaseGivenBackOnFailedStart: a query whose CLI fails to start leaves
// the session dormant with its lease given back; a refused start too.
func TestLeaseGivenBackOnFailedStart(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, open backend) {
		cfgA := Config{WarmSpares: 0, Store: open(t)}
		a := newManager(t, cfgA)
		s := create(t, a, CreateOptions{})
		if !s.makeDormant("test") {
			t.Fatal("could not make the session dormant")
		}
		broken := newManager(t, Config{WarmSpares: 0, Store: open(t)}, fakecli.EnvExitEarly, "1:boom")
		bs, err := broken.Get(s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := bs.Query(ctxFor(t), "hi", QueryOptions{}); err == nil {
			t.Fatal("a query through a CLI that exits at once succeeded")
		}
		// Instance C runs it at once: no lease held by the failed start.
		c := newManager(t, Config{WarmSpares: 0, Store: open(t)})
		cs, err := c.Get(s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cs.Query(ctxFor(t), "hi", QueryOptions{}); err != nil {
			if errors.Is(err, ErrElsewhere) || strings.Contains(err.Error(), "another claude-agent-mcp instance") {
				t.Fatalf("the failed start kept the lease: %v", err)
			}
			t.Fatal(err)
		}
	})
}

// TestUserMaxLiveRace: a user's queries started together on sessions
// without a process get one live process (--user-max-live 1), not one
// each: the cap is counted when a live place is given (defect 16 of issue
// 43: two of alice's parked queries held both of --max-live 2, and bob's
// query waited 40 s for her usage limit's reset); the others are refused
// saying so, and another user's query runs at once.
func TestUserMaxLiveRace(t *testing.T) {
	t.Parallel()
	m := newManager(t, Config{MaxLive: 2, UserMaxLive: 1, WarmSpares: 0}, fakecli.EnvSpeed, "1")
	var alice []*Session
	for range 4 {
		s, err := m.Open(ctxFor(t), CreateOptions{Owner: "alice"}) // no process yet
		if err != nil {
			t.Fatal(err)
		}
		alice = append(alice, s)
	}
	type outcome struct {
		r   *Run
		err error
	}
	out := make(chan outcome, len(alice))
	for _, s := range alice {
		go func() {
			r, err := s.StartRun(ctxFor(t), "TOOL_BASH[sleep 2; echo slept]", RunOptions{})
			if err == nil {
				waitDone(t, r)
				_, err, _ = r.Collect()
			}
			out <- outcome{r, err}
		}()
	}
	bob := create(t, m, CreateOptions{Owner: "bob"})
	if res := query(t, bob, "hi", QueryOptions{}); res.IsError {
		t.Errorf("bob's query: %s", res.ErrorText)
	}
	ran, refused := 0, 0
	for range alice {
		o := <-out
		switch {
		case o.err == nil:
			ran++
		case errors.Is(o.err, ErrTooMany) && strings.Contains(o.err.Error(), "--user-max-live"):
			refused++
		default:
			t.Errorf("one of alice's queries: %v", o.err)
		}
	}
	if ran != 1 || refused != 3 {
		t.Errorf("alice's concurrent queries: %d ran, %d refused; want 1 and 3", ran, refused)
	}
}

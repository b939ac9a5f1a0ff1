package sessions

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

// queueLog records the order in which queries got their turn and their
// queued events.
type queueLog struct {
	mu     sync.Mutex
	order  []string
	queued map[string][]string
}

func (q *queueLog) on(name string) func(turn.Event) {
	return func(e turn.Event) {
		q.mu.Lock()
		defer q.mu.Unlock()
		switch e.Kind {
		case turn.EventQueued:
			q.queued[name] = append(q.queued[name], e.Text)
		case turn.EventTurnStarted:
			q.order = append(q.order, name)
		}
	}
}

// TestQueueBeyondMaxLive: queries beyond --max-live wait in a FIFO queue
// (reported as queued, with the position, in events and in Info) instead of
// being refused; a full queue refuses with the true reason; a cancelled
// query leaves the queue.
func TestQueueBeyondMaxLive(t *testing.T) {
	t.Parallel()
	m := newManager(t, Config{MaxLive: 1, MaxQueue: 2})
	a := create(t, m, CreateOptions{})
	running := startQuery(ctxFor(t), a, "SLOW4", QueryOptions{}) // ~1.5 s
	running.waitStarted(t)

	// Made while the one live process is busy: no process yet.
	b := create(t, m, CreateOptions{})
	c := create(t, m, CreateOptions{})
	d := create(t, m, CreateOptions{})
	if in := b.Info(); in.PID != 0 || in.State != state.Starting && in.State != state.Dormant {
		t.Errorf("a session made while every process is busy: %+v", in)
	}
	ql := &queueLog{queued: map[string][]string{}}
	pb := startQuery(ctxFor(t), b, "hi", QueryOptions{OnEvent: ql.on("b")})
	testkit.Until(t, waitLimit, "b queued", func() bool { return b.Info().State == state.Queued })
	pc := startQuery(ctxFor(t), c, "hi", QueryOptions{OnEvent: ql.on("c")})
	testkit.Until(t, waitLimit, "c queued", func() bool { return c.Info().QueuePosition == 2 })
	if in := b.Info(); in.State != state.Queued || in.QueuePosition != 1 {
		t.Errorf("b while queued: %+v", in)
	}
	if n := m.Queued(); n != 2 {
		t.Errorf("Queued = %d, want 2", n)
	}

	// The queue is full: the next query is refused, saying why.
	_, err := d.Query(ctxFor(t), "hi", QueryOptions{})
	if !errors.Is(err, ErrTooMany) || !strings.Contains(err.Error(), "--max-queue") || !strings.Contains(err.Error(), "--max-live") {
		t.Errorf("query beyond a full queue: %v", err)
	}

	if r := running.wait(t, waitLimit); r.IsError {
		t.Fatalf("the running query: %+v", r)
	}
	for _, p := range []*pending{pb, pc} {
		if r := p.wait(t, waitLimit); r.FinalText != hello {
			t.Errorf("queued query: %+v %v", r, p.err)
		}
	}
	ql.mu.Lock()
	defer ql.mu.Unlock()
	if strings.Join(ql.order, ",") != "b,c" {
		t.Errorf("queued queries ran in the order %v, want b,c", ql.order)
	}
	if qb := ql.queued["b"]; len(qb) == 0 || !strings.Contains(qb[0], "position 1") || !strings.Contains(qb[0], "--max-live 1") {
		t.Errorf("b's queued events: %q", qb)
	}
	if qc := ql.queued["c"]; len(qc) < 2 || !strings.Contains(qc[0], "position 2") || !strings.Contains(qc[len(qc)-1], "position 1") {
		t.Errorf("c's queued events: %q (want position 2, then 1)", qc)
	}
	if n := m.LiveCount(); n != 1 {
		t.Errorf("LiveCount = %d with --max-live 1", n)
	}
}

// TestQueueCancel: a query cancelled while it waits leaves the queue, and
// the one behind it moves up.
func TestQueueCancel(t *testing.T) {
	t.Parallel()
	m := newManager(t, Config{MaxLive: 1})
	a := create(t, m, CreateOptions{})
	running := startQuery(ctxFor(t), a, "SLOW4", QueryOptions{})
	running.waitStarted(t)
	b := create(t, m, CreateOptions{})
	c := create(t, m, CreateOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	pb := startQuery(ctx, b, "hi", QueryOptions{})
	testkit.Until(t, waitLimit, "b queued", func() bool { return b.Info().State == state.Queued })
	pc := startQuery(ctxFor(t), c, "hi", QueryOptions{})
	testkit.Until(t, waitLimit, "c queued", func() bool { return c.Info().QueuePosition == 2 })
	cancel()
	select {
	case <-pb.done:
	case <-time.After(waitLimit):
		t.Fatal("the cancelled queued query did not return")
	}
	if !errors.Is(pb.err, context.Canceled) {
		t.Errorf("the cancelled queued query: %v", pb.err)
	}
	testkit.Until(t, waitLimit, "c moves up", func() bool { return c.Info().QueuePosition == 1 })
	if got := b.Info().State; got == state.Queued {
		t.Errorf("b is still queued after its cancel")
	}
	running.wait(t, waitLimit)
	if r := pc.wait(t, waitLimit); r.FinalText != hello {
		t.Errorf("c: %+v", r)
	}
}

// TestPoolEvictsLRU: an idle session gives its process up for a query, the
// least recently used first.
func TestPoolEvictsLRU(t *testing.T) {
	t.Parallel()
	m := newManager(t, Config{MaxLive: 2})
	old := create(t, m, CreateOptions{})
	recent := create(t, m, CreateOptions{})
	query(t, old, "hi", QueryOptions{})
	query(t, recent, "hi", QueryOptions{})
	third := create(t, m, CreateOptions{})
	if third.Info().PID == 0 {
		t.Fatal("the third session got no process although two were idle")
	}
	if old.Info().State != state.Dormant || recent.Info().State != state.Idle {
		t.Errorf("after a third create: old %s, recent %s; want old dormant", old.Info().State, recent.Info().State)
	}
}

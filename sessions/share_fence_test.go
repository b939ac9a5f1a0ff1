package sessions

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakecli"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/sharing"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
)

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

// fencing is two managers sharing a registry and a clock: A, whose fake
// CLIs log their input, has run session s, and B has taken it up.
type fencing struct {
	path   string
	clk    *testClock
	a, b   *Manager
	s, bs  *Session // A's and B's copy
	pidA   int      // A's process for s
	inputA string   // what A's CLIs read

	tookA, tookB atomic.Int32 // what A's and B's Config.OnTakeover were told
}

func newFencing(t *testing.T) *fencing {
	t.Helper()
	dir := t.TempDir()
	fx := &fencing{path: filepath.Join(dir, "sessions.json"), clk: &testClock{}, inputA: filepath.Join(dir, "input-a.jsonl")}
	fx.a = newManager(t, Config{Registry: store.NewFile(fx.path, nil), now: fx.clk.now, OnTakeover: func() { fx.tookA.Add(1) }},
		fakecli.EnvInputLog, fx.inputA)
	fx.b = newManager(t, Config{Registry: store.NewFile(fx.path, nil), now: fx.clk.now, OnTakeover: func() { fx.tookB.Add(1) }})
	fx.s = create(t, fx.a, CreateOptions{})
	query(t, fx.s, "hi", QueryOptions{})
	fx.pidA = fx.s.Info().PID
	if c := readRegistry(t, fx.path).Live[fx.s.ID]; c.Instance != fx.a.share.Me().Instance || c.Gen != 1 {
		t.Fatalf("the claim after A's query = %+v, want A's, generation 1", c)
	}
	var err error
	if fx.bs, err = fx.b.Get(fx.s.ID); err != nil {
		t.Fatal(err)
	}
	return fx
}

// takeOver: A stalls past its lease (its renewal does not run: the clock
// jumps), and B runs the session.
func (fx *fencing) takeOver(t *testing.T) {
	t.Helper()
	fx.clk.advance(2 * sharing.DefaultLease)
	query(t, fx.bs, "hi", QueryOptions{})
	if c := readRegistry(t, fx.path).Live[fx.s.ID]; c.Instance != fx.b.share.Me().Instance || c.Gen != 2 {
		t.Fatalf("the claim after B took the session over = %+v, want B's, generation 2", c)
	}
	if fx.s.Info().PID != fx.pidA {
		t.Fatalf("A's process changed before A did anything")
	}
}

// checkFenced checks that A's process for the session is gone, that it
// never read marker, and that the session is dormant on A.
func (fx *fencing) checkFenced(t *testing.T, marker string) {
	t.Helper()
	checkGone(t, fx.pidA)
	if in := fx.s.Info(); in.State != state.Dormant || in.PID != 0 {
		t.Errorf("A's copy of the session: state %s, pid %d; want dormant without a process", in.State, in.PID)
	}
	if n := fx.a.LiveCount(); n != 0 {
		t.Errorf("A has %d live processes, want none", n)
	}
	data, err := os.ReadFile(fx.inputA)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), marker) {
		t.Errorf("A's process read %q after the claim had passed to B:\n%s", marker, data)
	}
}

// TestShareFencing: an instance whose claim lapsed while it was stalled,
// and passed to another instance, stops its process before sending it
// anything more, and never renews over the other's claim.
func TestShareFencing(t *testing.T) {
	t.Parallel()
	t.Run("query", func(t *testing.T) {
		t.Parallel()
		fx := newFencing(t)
		fx.takeOver(t)
		_, err := fx.s.Query(ctxFor(t), "FENCED-PROMPT", QueryOptions{})
		if !errors.Is(err, ErrElsewhere) || !strings.Contains(err.Error(), "claim on the session lapsed") || !strings.Contains(err.Error(), "runs on another claude-agent-mcp instance") {
			t.Errorf("A's query after B took the session over: %v", err)
		}
		fx.checkFenced(t, "FENCED-PROMPT")
		if c := readRegistry(t, fx.path).Live[fx.s.ID]; c.Instance != fx.b.share.Me().Instance || c.Gen != 2 {
			t.Errorf("the claim after A's refused query = %+v, want B's, generation 2", c)
		}

		// Once B has let the session go, A resumes it, B's turn included.
		if !fx.bs.makeDormant("test") {
			t.Fatal("could not make the session dormant on B")
		}
		var pr probe
		query(t, fx.s, "hi", QueryOptions{OnEvent: pr.onEvent(fx.s)})
		pr.checkArg(t, "--resume="+fx.s.Info().ClaudeSessionID, true)
		if n := fx.s.Info().Queries; n != 3 {
			t.Errorf("A's session says %d queries, want 3 (A's, B's and this one)", n)
		}
		if c := readRegistry(t, fx.path).Live[fx.s.ID]; c.Instance != fx.a.share.Me().Instance || c.Gen != 3 {
			t.Errorf("the claim after A resumed the session = %+v, want A's, generation 3", c)
		}
	})
	t.Run("control", func(t *testing.T) {
		t.Parallel()
		fx := newFencing(t)
		fx.takeOver(t)
		if _, err := fx.s.SetModel(ctxFor(t), "claude-haiku-4-5"); !errors.Is(err, ErrElsewhere) {
			t.Errorf("A's model switch after B took the session over: %v", err)
		}
		fx.checkFenced(t, "set_model")
		if err := fx.s.SetPermissionMode(ctxFor(t), "plan"); err != nil {
			t.Errorf("a mode switch of the dormant session: %v", err) // nothing reaches a process
		}
		fx.checkFenced(t, "set_permission_mode")
	})
	t.Run("renewal", func(t *testing.T) {
		t.Parallel()
		fx := newFencing(t)
		fx.takeOver(t)
		if !fx.bs.makeDormant("test") {
			t.Fatal("could not make the session dormant on B")
		}
		// A's renewal runs after B released the session: it must not
		// claim the session again for the process that lost it.
		fx.a.persist()
		fx.checkFenced(t, "never sent")
		f := readRegistry(t, fx.path)
		if c, ok := f.Live[fx.s.ID]; ok {
			t.Errorf("A's renewal claimed the session again: %+v", c)
		}
		if g := f.ClaimGen[fx.s.ID]; g != 2 {
			t.Errorf("claim generation %d, want 2", g)
		}
		if n := fx.s.Info().Queries; n != 2 {
			t.Errorf("A's copy says %d queries, want B's record (2)", n)
		}
	})
	t.Run("confirmed", func(t *testing.T) {
		t.Parallel()
		// Stalled past the lease, but nobody took the session: A confirms
		// its claim and goes on with the same process.
		fx := newFencing(t)
		before := readRegistry(t, fx.path).Live[fx.s.ID]
		fx.clk.advance(2 * sharing.DefaultLease)
		query(t, fx.s, "STILL-MINE", QueryOptions{})
		if pid := fx.s.Info().PID; pid != fx.pidA {
			t.Errorf("A's process changed (%d, was %d)", pid, fx.pidA)
		}
		after := readRegistry(t, fx.path).Live[fx.s.ID]
		if after.Instance != fx.a.share.Me().Instance || after.Gen != 1 || !after.Until.After(before.Until.Add(sharing.DefaultLease)) {
			t.Errorf("the claim after A's query: %+v, before %+v; want A's, generation 1, renewed", after, before)
		}
		if a, b := fx.tookA.Load(), fx.tookB.Load(); a != 0 || b != 0 {
			t.Errorf("takeovers told: A %d, B %d; want none (A's lapsed claim was its own)", a, b)
		}
	})
}

// TestShareTakeoverCounted: Config.OnTakeover is told once when a write of
// an instance breaks another instance's lapsed claim, and never for a
// claim of its own or one that holds.
func TestShareTakeoverCounted(t *testing.T) {
	t.Parallel()
	fx := newFencing(t)
	query(t, fx.s, "hi", QueryOptions{}) // A renews its claim
	if _, err := fx.bs.Query(ctxFor(t), "hi", QueryOptions{}); !errors.Is(err, ErrElsewhere) {
		t.Fatalf("B's query while A's claim holds: %v, want ErrElsewhere", err)
	}
	if a, b := fx.tookA.Load(), fx.tookB.Load(); a != 0 || b != 0 {
		t.Fatalf("takeovers told before any claim lapsed: A %d, B %d", a, b)
	}
	fx.takeOver(t)
	query(t, fx.bs, "hi", QueryOptions{}) // B's own claim now
	if _, err := fx.s.Query(ctxFor(t), "hi", QueryOptions{}); !errors.Is(err, ErrElsewhere) {
		t.Errorf("A's query after B took the session over: %v, want ErrElsewhere", err)
	}
	if a, b := fx.tookA.Load(), fx.tookB.Load(); a != 0 || b != 1 {
		t.Errorf("takeovers told: A %d, B %d; want A 0, B 1", a, b)
	}
}

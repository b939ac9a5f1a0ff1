package sessions

import (
	"encoding/json"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store/registryfile"
)

// The sweep of the one-shot queries' sessions that a dead instance left
// in the store (sessions/fleet/orphans.go).

// sweep runs m's sweep of orphans now.
func sweep(t *testing.T, m *Manager) int {
	t.Helper()
	n, err := m.share.SweepOrphans(ctxFor(t), storeHost{m})
	if err != nil {
		t.Fatalf("the sweep: %v", err)
	}
	return n
}

// age makes the stored record of session id last used at used, as if
// it had been written then.
func age(t *testing.T, st store.Store, id string, used time.Time) {
	t.Helper()
	rec, err := st.Get(ctxFor(t), id)
	if err != nil {
		t.Fatal(err)
	}
	rec.LastUsed = used
	body, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	execSQL(t, st, `UPDATE records SET body = ?, last_used = ? WHERE id = ?`, string(body), used.UnixNano(), id)
}

// storedIDs is the ids of every open session st lists.
func storedIDs(t *testing.T, st store.Store) []string {
	t.Helper()
	page, err := st.List(ctxFor(t), store.Query{Limit: store.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range page.Records {
		ids = append(ids, r.SessionID)
	}
	return ids
}

// TestStoreOrphanSwept: a one-shot's session that a dead instance left in
// the store (its lease lapsed, last used long ago) is closed by the sweep
// of a live instance: it leaves the user's count (a user at
// --user-max-sessions can open again), the list and Get. A dormant kept
// session as old is left alone, and so is a temporary session held here.
func TestStoreOrphanSwept(t *testing.T) {
	t.Parallel()
	backends(t, testStoreOrphanSwept)
}

func testStoreOrphanSwept(t *testing.T, open backend) {
	st, ctx := open(t), ctxFor(t)
	now := time.Now()
	orphan := store.Record{
		Entry: registryfile.Entry{SessionID: "orphan-1", ClaudeSessionID: "c-orphan-1", Owner: "alice", Created: now, LastUsed: now,
			Options: CreateOptions{Cwd: t.TempDir(), Owner: "alice", Temporary: true}},
		State: state.Idle, Temporary: true,
	}
	if err := st.Create(ctx, orphan, store.Quota{}); err != nil {
		t.Fatal(err)
	}
	// The dead instance's lease, lapsed (a nanosecond long).
	if _, _, err := st.Acquire(ctx, orphan.SessionID, "dead-host/1", time.Nanosecond); err != nil {
		t.Fatal(err)
	}
	var takeovers atomic.Int32
	a := newManager(t, Config{Store: open(t), UserMaxSessions: 1, OnTakeover: func() { takeovers.Add(1) }})
	// A one-shot of A's own whose lease A let lapse (its Release failed):
	// swept as well, but no takeover.
	own := orphan
	own.SessionID, own.ClaudeSessionID, own.Owner, own.Options.Owner = "orphan-own", "c-orphan-own", "dave", "dave"
	if err := st.Create(ctx, own, store.Quota{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Acquire(ctx, own.SessionID, a.share.Holder(), time.Nanosecond); err != nil {
		t.Fatal(err)
	}
	kept := create(t, a, CreateOptions{Owner: "bob"})
	query(t, kept, "hi", QueryOptions{})
	if !kept.makeDormant("test") {
		t.Fatal("could not make the kept session dormant")
	}
	mine, _, err := a.OneShot(ctx, CreateOptions{Owner: "carol", Cwd: t.TempDir(), Temporary: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Open(ctx, CreateOptions{Owner: "alice", Cwd: t.TempDir()}); !errors.Is(err, ErrTooMany) {
		t.Fatalf("alice's open with the orphan counted, at --user-max-sessions 1: %v, want ErrTooMany", err)
	}
	// All three last used an hour ago; the orphan was too recent for the
	// sweep at A's start.
	for _, id := range []string{orphan.SessionID, own.SessionID, kept.ID, mine.ID} {
		age(t, st, id, now.Add(-time.Hour))
	}

	before := takeovers.Load() // none: the orphan was too recent at A's start
	if n := sweep(t, a); n != 2 {
		t.Errorf("A's sweep closed %d sessions, want 2 (the dead instance's orphan and A's own)", n)
	}
	if n := takeovers.Load() - before; n != 1 {
		t.Errorf("A's sweep counted %d lease takeovers, want 1 (the dead instance's lapsed lease on the orphan, not A's own)", n)
	}
	if _, err := st.Get(ctx, own.SessionID); !errors.Is(err, store.ErrClosed) {
		t.Errorf("A's own orphan after the sweep: %v, want ErrClosed", err)
	}
	if _, err := st.Get(ctx, orphan.SessionID); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("the orphan after the sweep: %v, want ErrClosed", err)
	}
	if _, err := a.Get(orphan.SessionID); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get of the orphan: %v, want ErrNotFound", err)
	}
	infos, _, err := a.ListPage(ctx, store.Query{})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range infos {
		if in.SessionID == orphan.SessionID {
			t.Errorf("the swept orphan is listed")
		}
	}
	if n, err := st.Count(ctx, "alice"); err != nil || n != 0 {
		t.Errorf("alice's count after the sweep: %d, %v; want 0", n, err)
	}
	if _, err := a.Open(ctx, CreateOptions{Owner: "alice", Cwd: t.TempDir()}); err != nil {
		t.Errorf("alice at --user-max-sessions 1 could not open a session after the sweep: %v", err)
	}
	if ids := storedIDs(t, st); !slices.Contains(ids, kept.ID) || !slices.Contains(ids, mine.ID) {
		t.Errorf("the stored sessions after the sweep: %v; want the kept %s and the temporary %s held here among them", ids, kept.ID, mine.ID)
	}
	if _, err := a.Get(kept.ID); err != nil {
		t.Errorf("the kept dormant session: %v", err)
	}
}

// TestStoreOrphanRunningElsewhere: a one-shot query running on A (its
// lease held, however old its record) is not closed by B's sweep, and its
// answer comes.
func TestStoreOrphanRunningElsewhere(t *testing.T) {
	t.Parallel()
	backends(t, testStoreOrphanRunningElsewhere)
}

func testStoreOrphanRunningElsewhere(t *testing.T, open backend) {
	st, ctx := open(t), ctxFor(t)
	a := newManager(t, Config{Store: open(t)})
	s, _, err := a.OneShot(ctx, CreateOptions{Owner: "alice", Cwd: t.TempDir(), Temporary: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := startRun(t, s, "SLOW", QueryOptions{}) // 10 s, interrupted below
	testkit.Until(t, waitLimit, "A's one-shot running", func() bool { return stateOf(s) == state.Running && s.Info().PID > 0 })
	age(t, st, s.ID, time.Now().Add(-time.Hour))

	b := newManager(t, Config{Store: open(t)})
	if n := sweep(t, b); n != 0 {
		t.Errorf("B's sweep closed %d sessions, want none", n)
	}
	if _, err := st.Get(ctx, s.ID); err != nil {
		t.Fatalf("A's running one-shot after B's sweep: %v", err)
	}
	if h, _ := leaseOf(t, st, s.ID); h != a.share.Holder() {
		t.Errorf("the lease of A's one-shot after B's sweep is %q, want A's", h)
	}
	select {
	case <-r.Done():
		t.Fatal("A's turn ended before it was interrupted")
	default:
	}
	if running, _ := s.Interrupt(ctx); !running {
		t.Fatal("A's turn was not running when interrupted")
	}
	waitDone(t, r)
	if _, err, ok := r.Collect(); !ok || err != nil {
		t.Fatalf("A's one-shot result: %v (collected %v)", err, ok)
	}
	testkit.Until(t, waitLimit, "A's one-shot closed by A once collected", func() bool {
		_, err := st.Get(ctx, s.ID)
		return errors.Is(err, store.ErrClosed)
	})
}

// TestStoreOrphanSweptAtStart: the sweep runs by itself when a manager
// starts: an orphan already old is closed without anyone asking.
func TestStoreOrphanSweptAtStart(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, open backend) {
		st, ctx := open(t), ctxFor(t)
		old := time.Now().Add(-time.Hour)
		orphan := store.Record{
			Entry: registryfile.Entry{SessionID: "orphan-2", Owner: "alice", Created: old, LastUsed: old,
				Options: CreateOptions{Cwd: t.TempDir(), Owner: "alice", Temporary: true}},
			State: state.Idle, Temporary: true,
		}
		if err := st.Create(ctx, orphan, store.Quota{}); err != nil {
			t.Fatal(err)
		}
		newManager(t, Config{Store: open(t)})
		testkit.Until(t, waitLimit, "the orphan closed by the sweep at start", func() bool {
			_, err := st.Get(ctx, orphan.SessionID)
			return errors.Is(err, store.ErrClosed)
		})
	})
}

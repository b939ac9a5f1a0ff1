package sessions

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakecli"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/pgtest"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store/postgres"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store/sqlite"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

// Several managers (server instances) sharing one session store: a
// SQLite file, as several instances on one host share it.

// storeAt opens the SQLite store at path: a handle of its own, as each
// instance has.
func storeAt(tb testing.TB, path string) *sqlite.Store {
	tb.Helper()
	st, err := sqlite.Open(context.Background(), path, sqlite.Options{WatchEvery: 10 * time.Millisecond})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	return st
}

// storedRecords is every open session the store at path holds.
func storedRecords(tb testing.TB, path string) []store.Record {
	tb.Helper()
	page, err := storeAt(tb, path).List(context.Background(), store.Query{Limit: store.MaxLimit})
	if err != nil {
		tb.Fatal(err)
	}
	return page.Records
}

// backend opens handles on one store: each call a handle of its own, as
// each instance has.
type backend func(t *testing.T) store.Store

// backends runs f against a fresh SQLite file and a fresh PostgreSQL
// database (skipped without PostgreSQL, except under CI=true).
func backends(t *testing.T, f func(t *testing.T, open backend)) {
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "sessions.db")
		f(t, func(t *testing.T) store.Store { return storeAt(t, path) })
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		url := pgtest.New(t)
		f(t, func(t *testing.T) store.Store {
			st, err := postgres.Open(context.Background(), url, postgres.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		})
	})
}

// sharedPair is two managers, as two instances, sharing the store open
// opens.
func sharedPair(t *testing.T, open backend, cfg Config, env ...string) (a, b *Manager) {
	t.Helper()
	ca, cb := cfg, cfg
	ca.Store, cb.Store = open(t), open(t)
	return newManager(t, ca, env...), newManager(t, cb)
}

// wantElsewhere checks that a query on s, held by m (instance here), is
// refused while instance there runs the session, and that m started no
// process for it.
func wantElsewhere(t *testing.T, m *Manager, s *Session, here, there string) {
	t.Helper()
	if _, err := s.Query(ctxFor(t), "hi", QueryOptions{}); !errors.Is(err, ErrElsewhere) {
		t.Errorf("query on %s while %s runs the session: %v", here, there, err)
	}
	if n := m.LiveCount(); n != 0 {
		t.Errorf("%s started %d process(es) for a session %s runs", here, n, there)
	}
}

// execSQL runs a statement written with ? placeholders on st.
func execSQL(t *testing.T, st store.Store, q string, args ...any) {
	t.Helper()
	var err error
	switch s := st.(type) {
	case *sqlite.Store:
		_, err = s.SQL.Exec(s.Q(q), args...)
	case *postgres.Store:
		_, err = s.SQL.Exec(s.Q(q), args...)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// leaseOf is the lease on session id as st has it.
func leaseOf(t *testing.T, st store.Store, id string) (holder string, epoch int64) {
	t.Helper()
	var err error
	const q = `SELECT holder, epoch FROM leases WHERE id = ?`
	switch s := st.(type) {
	case *sqlite.Store:
		err = s.SQL.QueryRow(s.Q(q), id).Scan(&holder, &epoch)
	case *postgres.Store:
		err = s.SQL.QueryRow(s.Q(q), id).Scan(&holder, &epoch)
	}
	if err != nil {
		t.Fatal(err)
	}
	return holder, epoch
}

// TestStoreSharedRun: a session made on A is got on B; its process runs
// on one instance at a time (ErrElsewhere on the other, which starts
// nothing), and once A let it go, B resumes it with A's turns, and A
// takes B's over in turn.
func TestStoreSharedRun(t *testing.T) {
	t.Parallel()
	backends(t, testStoreSharedRun)
}

func testStoreSharedRun(t *testing.T, open backend) {
	a, b := sharedPair(t, open, Config{})
	s := create(t, a, CreateOptions{})
	query(t, s, "hi", QueryOptions{})
	s.saves.Wait() // the turn's write follows its answer: B sees the turn once it has landed
	csid := s.Info().ClaudeSessionID
	if h, _ := leaseOf(t, open(t), s.ID); !strings.HasPrefix(h, mustHost(t)) {
		t.Errorf("the lease while A runs the session is %q's", h)
	}

	bs, err := b.Get(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if in := bs.Info(); in.State != state.Dormant || in.Queries != 1 || in.ClaudeSessionID != csid {
		t.Errorf("B's copy: %+v", in)
	}
	wantElsewhere(t, b, bs, "B", "A")

	if !s.makeDormant("test") {
		t.Fatal("could not make the session dormant on A")
	}
	var pr probe
	r := query(t, bs, "hi", QueryOptions{OnEvent: pr.onEvent(bs)})
	if r.IsError || r.ClaudeSessionID != csid {
		t.Errorf("query on B: %+v", r)
	}
	pr.checkArg(t, "--resume="+csid, true)
	wantElsewhere(t, a, s, "A", "B")
	if !bs.makeDormant("test") {
		t.Fatal("could not make the session dormant on B")
	}
	as, err := a.Get(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	var pr2 probe
	query(t, as, "hi", QueryOptions{OnEvent: pr2.onEvent(as)})
	pr2.checkArg(t, "--resume="+csid, true)
	if n := as.Info().Queries; n != 3 {
		t.Errorf("A's session says %d queries, want 3 (B's turn taken over)", n)
	}
}

func mustHost(t *testing.T) string {
	h, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	return h + "/"
}

// TestStoreDormantLeavesMemory: a session made dormant is dropped from
// memory once its record is written, and Get loads it again as it was;
// nothing is loaded at the start.
func TestStoreDormantLeavesMemory(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sessions.db")
	m := newManager(t, Config{Store: storeAt(t, path)})
	s := create(t, m, CreateOptions{SessionOptions: claudeagent.SessionOptions{Name: "kept"}})
	query(t, s, "hi", QueryOptions{})
	if !s.makeDormant("test") {
		t.Fatal("could not make the session dormant")
	}
	if got := len(m.List()); got != 0 {
		t.Errorf("%d sessions held in memory after the only one went dormant", got)
	}
	if n := m.Count(); n != 1 {
		t.Errorf("Count = %d, want 1 (the store's)", n)
	}
	g, err := m.Get(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if in := g.Info(); in.Name != "kept" || in.Queries != 1 || in.State != state.Dormant {
		t.Errorf("loaded again: %+v", in)
	}
	m2 := newManager(t, Config{Store: storeAt(t, path)})
	if got := len(m2.List()); got != 0 {
		t.Errorf("a new manager holds %d sessions at its start, want none", got)
	}
}

// TestStoreListPage: the list pages through the store with a cursor,
// most recently used first, filtered by state and name; the sessions held
// here show their live state.
func TestStoreListPage(t *testing.T) {
	t.Parallel()
	for _, stored := range []bool{true, false} {
		cfg := Config{MaxLive: 8}
		if stored {
			cfg.Store = storeAt(t, filepath.Join(t.TempDir(), "sessions.db"))
		}
		m := newManager(t, cfg)
		var ids []string
		for i := range 5 {
			s := create(t, m, CreateOptions{SessionOptions: claudeagent.SessionOptions{Name: map[bool]string{true: "alpha", false: "beta"}[i%2 == 0]}})
			query(t, s, "hi", QueryOptions{}) // distinct lastUsed, in order
			ids = append(ids, s.ID)
		}
		slices.Reverse(ids)
		var got []string
		cursor := ""
		for range 10 {
			infos, next, err := m.ListPage(ctxFor(t), store.Query{Limit: 2, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			for _, in := range infos {
				got = append(got, in.SessionID)
				if in.State != state.Idle {
					t.Errorf("stored %v: a live session listed %s", stored, in.State)
				}
			}
			if cursor = next; cursor == "" {
				break
			}
		}
		if !slices.Equal(got, ids) {
			t.Errorf("stored %v: pages %v, want %v", stored, got, ids)
		}
		infos, _, err := m.ListPage(ctxFor(t), store.Query{Name: "alph", State: []state.State{state.Idle}})
		if err != nil || len(infos) != 3 {
			t.Errorf("stored %v: name and state filter: %d rows, %v", stored, len(infos), err)
		}
		infos, _, _ = m.ListPage(ctxFor(t), store.Query{State: []state.State{state.Dormant}})
		if len(infos) != 0 {
			t.Errorf("stored %v: dormant filter: %d rows, want 0", stored, len(infos))
		}
	}
}

// TestStoreCloseSeen: a session closed on A is gone on B, through the
// store's Watch, and closed there too.
func TestStoreCloseSeen(t *testing.T) {
	t.Parallel()
	backends(t, testStoreCloseSeen)
}

func testStoreCloseSeen(t *testing.T, open backend) {
	a, b := sharedPair(t, open, Config{})
	s := create(t, a, CreateOptions{Owner: "alice"})
	bs, err := b.Get(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	kept := create(t, b, CreateOptions{})
	if _, err := a.Close(s.ID); err != nil {
		t.Fatal(err)
	}
	testkit.Until(t, 10*time.Second, "B's copy closed", func() bool { return bs.Info().State == state.Closed })
	if got := b.List(); len(got) != 1 || got[0] != kept {
		t.Errorf("B holds %d sessions after A closed %s, want only its own", len(got), s.ID)
	}
	if _, err := b.Get(s.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("B still finds the closed session: %v", err)
	}
	if owner, known := b.ConversationOwner(s.Info().ClaudeSessionID); !known || owner != "alice" {
		t.Errorf("the closed session's conversation: owner %q, known %v", owner, known)
	}
}

// TestStoreCostsShared: the costs of both instances add up in the store,
// for the total and per user, closed sessions and restarts included.
func TestStoreCostsShared(t *testing.T) {
	t.Parallel()
	backends(t, testStoreCostsShared)
}

func testStoreCostsShared(t *testing.T, open backend) {
	a, b := sharedPair(t, open, Config{})
	x := create(t, a, CreateOptions{Owner: "alice"})
	y := create(t, b, CreateOptions{Owner: "alice"})
	query(t, x, "hi", QueryOptions{})
	query(t, y, "hi", QueryOptions{})
	want := x.Info().CostUSD + y.Info().CostUSD
	if want <= 0 {
		t.Fatal("the fake turns cost nothing")
	}
	// An instance counts its own turn's cost at once (owed until its write
	// lands, which follows the answer); the other's once that write lands.
	for name, own := range map[*Manager]float64{a: x.Info().CostUSD, b: y.Info().CostUSD} {
		if got := name.Spent(); got < own-1e-9 {
			t.Errorf("right after its turn an instance counts %v spent, less than its own turn's %v", got, own)
		}
	}
	for name, m := range map[string]*Manager{"A": a, "B": b} {
		testkit.Until(t, 10*time.Second, name+" counts both turns", func() bool {
			got := m.Spent()
			return got > want-1e-9 && got < want+1e-9
		})
		if got := m.share.UserSpent("alice"); got < want-1e-9 || got > want+1e-9 {
			t.Errorf("%s: alice spent %v, want %v", name, got, want)
		}
	}
	if _, err := a.Close(x.ID); err != nil {
		t.Fatal(err)
	}
	c := newManager(t, Config{Store: open(t)})
	if got := c.Spent(); got < want-1e-9 {
		t.Errorf("a third instance: spent %v, want %v", got, want)
	}
}

// TestStoreUserQuota: --user-max-sessions and --max-sessions count the
// open sessions of every instance sharing the store, temporary ones
// included, in the create's transaction; a close frees the place at once.
func TestStoreUserQuota(t *testing.T) {
	t.Parallel()
	backends(t, testStoreUserQuota)
}

func testStoreUserQuota(t *testing.T, open backend) {
	a, b := sharedPair(t, open, Config{UserMaxSessions: 2, MaxSessions: 4})
	x := create(t, a, CreateOptions{Owner: "alice"})
	create(t, b, CreateOptions{Owner: "alice"})
	refused := func(m *Manager, name string, opts CreateOptions, msg string) {
		t.Helper()
		opts.Cwd = t.TempDir()
		if opts.Owner == "" {
			opts.Owner = "alice"
		}
		_, err := m.Open(ctxFor(t), opts)
		if !errors.Is(err, ErrTooMany) || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v, want ErrTooMany saying %q", name, err, msg)
		}
	}
	refused(b, "B", CreateOptions{}, "user alice has 2 open sessions")
	refused(a, "A, temporary", CreateOptions{Temporary: true}, "user alice has 2 open sessions")
	create(t, b, CreateOptions{Owner: "bob"})
	if _, err := a.Close(x.ID); err != nil {
		t.Fatal(err)
	}
	z := create(t, b, CreateOptions{Owner: "alice"}) // x's place
	refused(a, "A, after B took x's place", CreateOptions{}, "user alice has 2 open sessions")
	if _, err := b.Close(z.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Open(ctxFor(t), CreateOptions{Owner: "alice", Cwd: t.TempDir(), Temporary: true}); err != nil {
		t.Fatal(err)
	}
	refused(a, "A, with B's temporary session", CreateOptions{}, "user alice has 2 open sessions")
	create(t, a, CreateOptions{Owner: "carol"})
	refused(a, "A, all places", CreateOptions{Owner: "dave"}, "4 sessions are open and --max-sessions is 4")
}

// TestStoreFencing: when A's lease passes to another instance while A's
// process runs (A was paused past it), A's renewal finds it and kills the
// process, which reads nothing more; A's next query says why.
func TestStoreFencing(t *testing.T) {
	t.Parallel()
	backends(t, testStoreFencing)
}

func testStoreFencing(t *testing.T, open backend) {
	input := filepath.Join(t.TempDir(), "input.jsonl")
	var took atomic.Int32
	a := newManager(t, Config{Store: open(t), Lease: 300 * time.Millisecond, OnTakeover: func() { took.Add(1) }}, fakecli.EnvInputLog, input)
	s := create(t, a, CreateOptions{})
	query(t, s, "hi", QueryOptions{})
	pid := s.Info().PID
	other := open(t)
	_, epoch := leaseOf(t, other, s.ID)
	// Another instance takes the lease over, as after A's lapsed.
	execSQL(t, other, `UPDATE leases SET holder = 'other', epoch = ?, expires = ? WHERE id = ?`, epoch+1, time.Now().Add(time.Hour).UnixNano(), s.ID)
	// A's renewal (every 100 ms) finds it passed on and kills the process.
	testkit.Until(t, 10*time.Second, "A's process fenced off", func() bool { return s.Info().PID == 0 })
	checkGone(t, pid)
	_, err := s.Query(ctxFor(t), "FENCED-PROMPT", QueryOptions{})
	if !errors.Is(err, ErrElsewhere) {
		t.Errorf("A's query after the takeover: %v, want ErrElsewhere", err)
	}
	if n := a.LiveCount(); n != 0 {
		t.Errorf("A has %d live processes, want none", n)
	}
	if data, err := os.ReadFile(input); err != nil || strings.Contains(string(data), "FENCED-PROMPT") {
		t.Errorf("A's process read the prompt after the lease passed on (%v):\n%s", err, data)
	}
	if h, e := leaseOf(t, other, s.ID); h != "other" || e != epoch+1 {
		t.Errorf("the lease after A's refused query: %s epoch %d; want other's, %d", h, e, epoch+1)
	}
	if n := took.Load(); n != 0 {
		t.Errorf("takeovers told: %d, want none (A took nothing over)", n)
	}
}

// TestStoreTakeoverCounted: Config.OnTakeover is told when an instance
// takes over a lease another let lapse, never for one released.
func TestStoreTakeoverCounted(t *testing.T) {
	t.Parallel()
	backends(t, testStoreTakeoverCounted)
}

func testStoreTakeoverCounted(t *testing.T, open backend) {
	var took atomic.Int32
	a, b := sharedPair(t, open, Config{OnTakeover: func() { took.Add(1) }})
	s := create(t, a, CreateOptions{})
	if !s.makeDormant("test") {
		t.Fatal("could not make the session dormant")
	}
	bs, err := b.Get(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	query(t, bs, "hi", QueryOptions{}) // a released lease: no takeover
	if n := took.Load(); n != 0 {
		t.Fatalf("takeovers told after a released lease: %d", n)
	}
	if !bs.makeDormant("test") {
		t.Fatal("could not make the session dormant on B")
	}
	// A lapsed lease of another instance's.
	execSQL(t, open(t), `UPDATE leases SET holder = 'gone', expires = ? WHERE id = ?`, time.Now().Add(-time.Second).UnixNano(), s.ID)
	as, err := a.Get(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	query(t, as, "hi", QueryOptions{})
	if n := took.Load(); n != 1 {
		t.Errorf("takeovers told: %d, want 1", n)
	}
}

// TestStoreTranscriptMoves: an instance with a CLI config directory of its
// own resumes a session another ran: the transcript stored after the
// other's turns (which holds their last message) is written where its CLI
// reads it when its process starts, and the CLI resumes it.
func TestStoreTranscriptMoves(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sessions.db")
	cfgA, cfgB := t.TempDir(), t.TempDir()
	a := newManager(t, Config{Store: storeAt(t, path), Env: map[string]string{"CLAUDE_CONFIG_DIR": cfgA}})
	s := create(t, a, CreateOptions{})
	query(t, s, "remember this", QueryOptions{})
	if !s.makeDormant("test") { // the process's end stores the transcript
		t.Fatal("could not make the session dormant")
	}
	src := s.TranscriptPath().String()
	data, err := os.ReadFile(src)
	if err != nil || !strings.Contains(string(data), "remember this") {
		t.Fatalf("A's transcript: %q, %v", data, err)
	}
	b := newManager(t, Config{Store: storeAt(t, path), Env: map[string]string{"CLAUDE_CONFIG_DIR": cfgB}})
	bs, err := b.Get(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	dst := bs.TranscriptPath().String()
	if dst == src {
		t.Fatalf("both instances read the transcript at %s", dst)
	}
	var pr probe
	query(t, bs, "hi", QueryOptions{OnEvent: pr.onEvent(bs)})
	pr.checkArg(t, "--resume="+s.Info().ClaudeSessionID, true)
	got, err := os.ReadFile(dst)
	if err != nil || !strings.HasPrefix(string(got), string(data)) {
		t.Fatalf("B's transcript (%v): %d bytes, want A's %d first", err, len(got), len(data))
	}
}

// TestStoreCwdElsewhere: a stored session whose cwd does not exist on
// this machine is refused here, naming the directory.
func TestStoreCwdElsewhere(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sessions.db")
	cwd := t.TempDir()
	a := newManager(t, Config{Store: storeAt(t, path)})
	s := create(t, a, CreateOptions{Cwd: cwd})
	a.Shutdown()
	if err := os.Remove(cwd); err != nil {
		t.Fatal(err)
	}
	b := newManager(t, Config{Store: storeAt(t, path)})
	bs, err := b.Get(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	_, err = bs.Query(ctxFor(t), "hi", QueryOptions{})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), cwd) || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("a query of a session whose cwd is gone: %v", err)
	}
}

// heldPuts is a store whose writes of a turn's cost (Put with spent > 0)
// wait for release, once entered says so.
type heldPuts struct {
	store.Store
	entered, release chan struct{}
}

func (h *heldPuts) Put(ctx context.Context, rec store.Record, l store.Lease, spent float64) error {
	if spent > 0 {
		h.entered <- struct{}{}
		<-h.release
	}
	return h.Store.Put(ctx, rec, l, spent)
}

// TestStoreWriteBeforeAnswer: a turn's answer waits for the store's write
// of its record (and, before it, its history): an answer its caller has
// seen is never missing from the store, whichever instance takes the
// session up after a crash (issue 44); meanwhile the turn's cost counts as
// owed.
func TestStoreWriteBeforeAnswer(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sessions.db")
	h := &heldPuts{Store: storeAt(t, path), entered: make(chan struct{}, 1), release: make(chan struct{})}
	m := newManager(t, Config{Store: h})
	s := create(t, m, CreateOptions{Owner: "alice"})
	answered := make(chan *turn.Result, 1)
	go func() { answered <- query(t, s, "hi", QueryOptions{}) }()
	<-h.entered // the turn's write has begun, and is held
	if hist, err := h.ReadHistory(ctxFor(t), s.ID); err != nil || len(hist) == 0 || hist[0].Text != "hi" {
		t.Errorf("the history stored before the record: %v, %v", hist, err)
	}
	select {
	case <-answered:
		t.Fatal("the answer came while its turn's write was held")
	case <-time.After(300 * time.Millisecond):
	}
	if got := m.Spent(); got <= 0 {
		t.Errorf("spent %v while the write is held, want the turn's cost (owed)", got)
	}
	close(h.release)
	r := <-answered
	if got := m.Spent(); got < r.CostUSD-1e-9 || got > r.CostUSD+1e-9 {
		t.Errorf("spent %v after the answer, want the turn's %v once", got, r.CostUSD)
	}
	if _, err := m.Close(s.ID); err != nil {
		t.Fatal(err)
	}
}

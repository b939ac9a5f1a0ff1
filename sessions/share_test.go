package sessions

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakecli"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
)

// Several managers (server instances) sharing one registry file.

// readRegistry reads the registry file as it is, tombstones and claims
// included.
func readRegistry(t testing.TB, path string) store.State {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f store.State
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("the registry does not parse: %v\n%s", err, data)
	}
	return f
}

func registryIDs(path string) []string {
	var ids []string
	for _, e := range store.NewFile(path, nil).Load() {
		ids = append(ids, e.SessionID)
	}
	slices.Sort(ids)
	return ids
}

func sortedIDs(ss ...*Session) []string {
	var ids []string
	for _, s := range ss {
		ids = append(ids, s.ID)
	}
	slices.Sort(ids)
	return ids
}

// TestShareSavesMerge: two managers over one registry keep each other's
// sessions, and a record another instance changed is taken over, not
// overwritten with a stale copy.
func TestShareSavesMerge(t *testing.T) {
	t.Parallel()
	path, a, b := sharedPair(t)
	s1 := create(t, a, CreateOptions{})
	s2 := create(t, b, CreateOptions{})
	query(t, s1, "hi", QueryOptions{})
	s3 := create(t, b, CreateOptions{})
	if got, want := registryIDs(path), sortedIDs(s1, s2, s3); !slices.Equal(got, want) {
		t.Fatalf("the registry holds %v, want %v (both instances' sessions)", got, want)
	}

	// B takes s1 up as dormant; A goes on using it. B's next write keeps
	// A's newer record, and B's copy follows it.
	bs1, err := b.Get(s1.ID)
	if err != nil {
		t.Fatalf("B looking up A's session: %v", err)
	}
	if in := bs1.Info(); in.State != state.Dormant || in.Queries != 1 || in.ClaudeSessionID != s1.Info().ClaudeSessionID {
		t.Errorf("B's copy of s1 = %+v", in)
	}
	// The first time A's process still runs (A claims the session), the
	// second time it is dormant.
	for want := 2; want <= 3; want++ {
		query(t, s1, "hi", QueryOptions{})
		if want == 3 && !s1.makeDormant("test") {
			t.Fatal("could not make s1 dormant")
		}
		create(t, b, CreateOptions{}) // B writes the registry
		for _, e := range store.NewFile(path, nil).Load() {
			if e.SessionID == s1.ID && e.Queries != want {
				t.Errorf("after B's write the registry says s1 ran %d queries, want A's %d", e.Queries, want)
			}
		}
		if n := bs1.Info().Queries; n != want {
			t.Errorf("B's copy of s1 says %d queries, want %d (taken over from the registry)", n, want)
		}
	}
}

// TestShareClosedStaysClosed: a session closed on one instance is closed on
// the other at its next look at the registry, and no instance brings it
// back.
func TestShareClosedStaysClosed(t *testing.T) {
	t.Parallel()
	path, a, b := sharedPair(t)
	s := create(t, a, CreateOptions{})
	query(t, s, "hi", QueryOptions{})
	if !s.makeDormant("test") {
		t.Fatal("could not make the session dormant")
	}
	bs, err := b.Get(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	other := create(t, b, CreateOptions{})
	if _, err := a.Close(s.ID); err != nil {
		t.Fatal(err)
	}
	_, err = bs.Query(ctxFor(t), "hi", QueryOptions{})
	if !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "closed on another") {
		t.Errorf("query on B after A closed the session: %v", err)
	}
	if in := bs.Info(); in.State != state.Closed {
		t.Errorf("B's copy is %s, want closed", in.State)
	}
	if _, err := b.Get(s.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("B still finds the closed session: %v", err)
	}
	if n := b.LiveCount(); n != 1 {
		t.Errorf("B has %d live processes, want 1 (its own session only)", n)
	}
	b.persist()
	if got, want := registryIDs(path), sortedIDs(other); !slices.Equal(got, want) {
		t.Errorf("the registry holds %v, want %v", got, want)
	}
	if _, ok := readRegistry(t, path).Closed[s.ID]; !ok {
		t.Errorf("no tombstone for the closed session")
	}
	c := newManager(t, Config{Registry: store.NewFile(path, nil)})
	if _, err := c.Get(s.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("a third instance brings the closed session back: %v", err)
	}
	if n := c.Count(); n != 1 {
		t.Errorf("a third instance restores %d sessions, want 1", n)
	}
}

// TestShareCosts: the totals count every instance's turns once, however
// often each writes.
func TestShareCosts(t *testing.T) {
	t.Parallel()
	path, a, b := sharedPair(t)
	sa := create(t, a, CreateOptions{Owner: "alice"})
	sb := create(t, b, CreateOptions{Owner: "bob"})
	var alice, bob float64
	for range 2 {
		alice += query(t, sa, "hi", QueryOptions{}).CostUSD
	}
	bob += query(t, sb, "THINK", QueryOptions{}).CostUSD
	if alice <= 0 || bob <= 0 {
		t.Fatalf("turn costs %v and %v", alice, bob)
	}
	for range 3 { // writes that add nothing
		a.persist()
		b.persist()
	}
	near := func(x, y float64) bool { return math.Abs(x-y) < 1e-9 }
	f := readRegistry(t, path)
	if !near(f.SpentUSD, alice+bob) || !near(f.UserSpentUSD["alice"], alice) || !near(f.UserSpentUSD["bob"], bob) {
		t.Errorf("registry totals: %v, per user %v; want %v (alice %v, bob %v)", f.SpentUSD, f.UserSpentUSD, alice+bob, alice, bob)
	}
	for name, m := range map[string]*Manager{"A": a, "B": b} {
		if got := m.Spent(); !near(got, alice+bob) {
			t.Errorf("%s counts %v spent, want %v (both instances' turns)", name, got, alice+bob)
		}
	}
	a.Shutdown()
	b.Shutdown()
	c := newManager(t, Config{Registry: store.NewFile(path, nil)})
	if got := c.Spent(); !near(got, alice+bob) {
		t.Errorf("after a restart %v spent, want %v", got, alice+bob)
	}
}

// TestShareAdoptResume: a session one instance made dormant resumes on the
// other (--resume with its Claude session id); while one instance runs it,
// the other refuses to.
func TestShareAdoptResume(t *testing.T) {
	t.Parallel()
	path, a, b := sharedPair(t)
	s := create(t, a, CreateOptions{})
	query(t, s, "hi", QueryOptions{})
	csid := s.Info().ClaudeSessionID

	bs, err := b.Get(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	_, err = bs.Query(ctxFor(t), "hi", QueryOptions{})
	if !errors.Is(err, ErrElsewhere) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Errorf("query on B while A runs the session: %v", err)
	}
	if n := b.LiveCount(); n != 0 {
		t.Errorf("B started %d process(es) for a session A runs", n)
	}
	if st := bs.Info().State; st != state.Dormant {
		t.Errorf("B's copy is %s, want dormant", st)
	}

	if !s.makeDormant("test") {
		t.Fatal("could not make the session dormant on A")
	}
	var pr probe
	r := query(t, bs, "hi", QueryOptions{OnEvent: pr.onEvent(bs)})
	if r.IsError || r.ClaudeSessionID != csid {
		t.Errorf("query on B: %+v", r)
	}
	pr.checkArg(t, "--resume="+csid, true)
	if in := bs.Info(); in.Queries != 2 || in.State != state.Idle {
		t.Errorf("B's session after its query: %+v", in)
	}
	if c := readRegistry(t, path).Live[s.ID]; c.Instance != b.share.Me().Instance {
		t.Errorf("the registry's claim on the session = %+v, want B's", c)
	}

	_, err = s.Query(ctxFor(t), "hi", QueryOptions{})
	if !errors.Is(err, ErrElsewhere) {
		t.Errorf("query on A while B runs the session: %v", err)
	}
	if n := a.LiveCount(); n != 0 {
		t.Errorf("A started %d process(es) for a session B runs", n)
	}
	if !bs.makeDormant("test") {
		t.Fatal("could not make the session dormant on B")
	}
	if _, ok := readRegistry(t, path).Live[s.ID]; ok {
		t.Errorf("the claim stays after B's process stopped")
	}
	var pr2 probe
	query(t, s, "hi", QueryOptions{OnEvent: pr2.onEvent(s)})
	pr2.checkArg(t, "--resume="+csid, true)
	if n := s.Info().Queries; n != 3 {
		t.Errorf("A's session says %d queries, want 3 (B's turn taken over)", n)
	}
}

// TestShareStaleClaim: a claim holds while its instance may run the
// session: until its lease ends, or, on this host, its process is gone.
func TestShareStaleClaim(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sessions.json")
	a := newManager(t, Config{Registry: store.NewFile(path, nil)})
	s := create(t, a, CreateOptions{})
	query(t, s, "hi", QueryOptions{})
	a.Shutdown()
	b := newManager(t, Config{Registry: store.NewFile(path, nil)})
	bs, err := b.Get(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	me := b.share.Me()
	claim := func(c store.Claim) {
		t.Helper()
		if !bs.makeDormant("test") && bs.Info().PID != 0 {
			t.Fatal("could not make the session dormant")
		}
		c.Instance = "another"
		if _, err := store.NewFile(path, nil).Update(func(f *store.State, _ time.Time) {
			f.Live = map[string]store.Claim{s.ID: c}
		}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		c    store.Claim
		runs bool
	}{
		{"alive", store.Claim{Host: me.Host, PIDNS: me.PIDNS, PID: os.Getpid(), Until: time.Now().Add(time.Hour)}, false},
		{"other_host", store.Claim{Host: me.Host + "-elsewhere", PIDNS: me.PIDNS, PID: math.MaxInt32, Until: time.Now().Add(time.Hour)}, false},
		{"expired", store.Claim{Host: me.Host + "-elsewhere", PIDNS: me.PIDNS, PID: os.Getpid(), Until: time.Now().Add(-time.Second)}, true},
		{"dead_pid", store.Claim{Host: me.Host, PIDNS: me.PIDNS, PID: math.MaxInt32, Until: time.Now().Add(time.Hour)}, true},
	} {
		claim(tc.c)
		_, err := bs.Query(ctxFor(t), "hi", QueryOptions{})
		if tc.runs && err != nil {
			t.Errorf("%s claim: query refused: %v", tc.name, err)
		}
		if !tc.runs && !errors.Is(err, ErrElsewhere) {
			t.Errorf("%s claim: query = %v, want ErrElsewhere", tc.name, err)
		}
	}
}

// TestShareConcurrentSaves: writes from several managers at once lose
// nothing (store's TestConcurrentUpdates: from several registries).
func TestShareConcurrentSaves(t *testing.T) {
	t.Parallel()
	t.Run("managers", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "sessions.json")
		managers := []*Manager{
			newManager(t, Config{Registry: store.NewFile(path, nil)}),
			newManager(t, Config{Registry: store.NewFile(path, nil)}),
		}
		var (
			wg    sync.WaitGroup
			mu    sync.Mutex
			made  []*Session
			total float64
		)
		for _, m := range managers {
			for range 3 {
				wg.Go(func() {
					s, err := m.Create(ctxFor(t), CreateOptions{Cwd: t.TempDir()})
					if err != nil {
						t.Error(err)
						return
					}
					r, err := s.Query(ctxFor(t), "hi", QueryOptions{})
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					made, total = append(made, s), total+r.CostUSD
					mu.Unlock()
				})
			}
			wg.Go(func() {
				for range 10 {
					m.persist()
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		if got, want := registryIDs(path), sortedIDs(made...); !slices.Equal(got, want) {
			t.Errorf("the registry holds %v, want %v", got, want)
		}
		for _, m := range managers {
			m.persist()
		}
		f := readRegistry(t, path)
		if math.Abs(f.SpentUSD-total) > 1e-9 {
			t.Errorf("the registry counts %v spent, want %v", f.SpentUSD, total)
		}
		for i, m := range managers {
			if got := m.Spent(); math.Abs(got-total) > 1e-9 {
				t.Errorf("manager %d counts %v spent, want %v", i, got, total)
			}
		}
	})
}

// TestShareCloseSeen: a session closed on one instance is gone from the
// other's list and lookups at once, without the other writing anything.
func TestShareCloseSeen(t *testing.T) {
	t.Parallel()
	_, a, b := sharedPair(t)
	s := create(t, a, CreateOptions{Owner: "alice"})
	bs, err := b.Get(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	kept := create(t, b, CreateOptions{})
	if _, err := a.Close(s.ID); err != nil {
		t.Fatal(err)
	}
	if got, want := sortedIDs(b.List()...), sortedIDs(kept); !slices.Equal(got, want) {
		t.Errorf("B lists %v after A closed %s, want %v", got, s.ID, want)
	}
	if st := bs.Info().State; st != state.Closed {
		t.Errorf("B's copy is %s, want closed", st)
	}
	if _, err := b.Get(s.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("B still finds the closed session: %v", err)
	}
}

// TestShareUserQuota: --user-max-sessions counts the user's open sessions
// on every instance sharing the registry, and this instance's temporary
// ones; a session closed elsewhere frees its place at once.
func TestShareUserQuota(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sessions.json")
	a := newManager(t, Config{Registry: store.NewFile(path, nil), UserMaxSessions: 2})
	b := newManager(t, Config{Registry: store.NewFile(path, nil), UserMaxSessions: 2})
	x := create(t, a, CreateOptions{Owner: "alice"})
	create(t, b, CreateOptions{Owner: "alice"})
	refused := func(m *Manager, name string, opts CreateOptions) {
		t.Helper()
		opts.Owner, opts.Cwd = "alice", t.TempDir()
		_, err := m.Open(ctxFor(t), opts)
		if !errors.Is(err, ErrTooMany) || !strings.Contains(err.Error(), "user alice has 2 open sessions") {
			t.Errorf("%s: a third session of alice: %v", name, err)
		}
	}
	refused(b, "B", CreateOptions{})
	refused(a, "A, temporary", CreateOptions{Temporary: true})
	create(t, b, CreateOptions{Owner: "bob"})

	if _, err := a.Close(x.ID); err != nil {
		t.Fatal(err)
	}
	z := create(t, b, CreateOptions{Owner: "alice"}) // x's place
	refused(a, "A, after B took x's place", CreateOptions{})

	// A temporary session counts on its instance.
	if _, err := b.Close(z.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Open(ctxFor(t), CreateOptions{Owner: "alice", Cwd: t.TempDir(), Temporary: true}); err != nil {
		t.Fatal(err)
	}
	refused(b, "B, with a temporary session", CreateOptions{})
}

// TestShareAdoptQuota: taking up another instance's session counts against
// --user-max-sessions as a create does.
func TestShareAdoptQuota(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sessions.json")
	b := newManager(t, Config{Registry: store.NewFile(path, nil), UserMaxSessions: 1})
	a := newManager(t, Config{Registry: store.NewFile(path, nil)})
	x := create(t, a, CreateOptions{Owner: "alice"})
	y := create(t, a, CreateOptions{Owner: "alice"})
	bob := create(t, a, CreateOptions{Owner: "bob"})
	_, err := b.Get(x.ID)
	if !errors.Is(err, ErrTooMany) || !strings.Contains(err.Error(), "user alice has 1 other open sessions") || !strings.Contains(err.Error(), "--user-max-sessions") {
		t.Errorf("B taking up a second session of alice: %v", err)
	}
	if _, err := b.Get(bob.ID); err != nil {
		t.Errorf("B taking up bob's session: %v", err)
	}
	if _, err := a.Close(y.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(x.ID); err != nil {
		t.Errorf("B taking up alice's only session: %v", err)
	}
}

// TestShareTombstoneHorizon: a tombstone dropped to keep the file small
// does not let an instance that held the session bring it back.
func TestShareTombstoneHorizon(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sessions.json")
	ra := store.NewFile(path, nil)
	ra.MaxTombstones = 3
	a := newManager(t, Config{Registry: ra})
	b := newManager(t, Config{Registry: store.NewFile(path, nil)})
	s := create(t, a, CreateOptions{})
	bs, err := b.Get(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	b.persist()
	if _, err := a.Close(s.ID); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		o, err := a.Open(ctxFor(t), CreateOptions{Cwd: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		a.persist()
		if _, err := a.Close(o.ID); err != nil {
			t.Fatal(err)
		}
	}
	if f := readRegistry(t, path); len(f.Closed) != 3 || f.ClosedHorizon.IsZero() {
		t.Fatalf("%d tombstones, horizon %v; want 3 and a horizon", len(f.Closed), f.ClosedHorizon)
	}
	b.persist()
	if ids := registryIDs(path); slices.Contains(ids, s.ID) {
		t.Errorf("B brought back the closed session whose tombstone was dropped: %v", ids)
	}
	if st := bs.Info().State; st != state.Closed {
		t.Errorf("B's copy is %s, want closed", st)
	}
}

// TestConversationOwner: who made a conversation is known from the open
// sessions (every Claude session id they had) and, once closed, from
// their tombstones, on every instance sharing the registry.
func TestConversationOwner(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sessions.json")
	a := newManager(t, Config{Registry: store.NewFile(path, nil)}, fakecli.EnvNoTranscript, "1")
	b := newManager(t, Config{Registry: store.NewFile(path, nil)})
	s := create(t, a, CreateOptions{Owner: "alice"})
	query(t, s, "hi", QueryOptions{})
	first := s.Info().ClaudeSessionID
	if !s.makeDormant("test") {
		t.Fatal("not dormant")
	}
	// The transcript is lost: the session replays into a new conversation.
	if r := query(t, s, "hi", QueryOptions{}); r.Recovered != "replayed" {
		t.Fatalf("the query after a lost transcript: %+v", r)
	}
	second := s.Info().ClaudeSessionID
	if second == first {
		t.Fatal("the Claude session id did not change")
	}
	stdio := create(t, b, CreateOptions{})
	check := func(m *Manager, name, id, owner string, known bool) {
		t.Helper()
		if o, k := m.ConversationOwner(id); o != owner || k != known {
			t.Errorf("%s: ConversationOwner(%s) = %q, %v; want %q, %v", name, id, o, k, owner, known)
		}
	}
	for name, m := range map[string]*Manager{"A": a, "B": b} {
		check(m, name, first, "alice", true)
		check(m, name, second, "alice", true)
		check(m, name, stdio.Info().ClaudeSessionID, "", true)
		check(m, name, "f0f0f0f0-0000-4000-8000-000000000000", "", false)
	}
	if _, err := a.Close(s.ID); err != nil {
		t.Fatal(err)
	}
	c := newManager(t, Config{Registry: store.NewFile(path, nil)})
	for name, m := range map[string]*Manager{"A": a, "B": b, "C": c} {
		check(m, name+" after the close", first, "alice", true)
		check(m, name+" after the close", second, "alice", true)
	}
	tomb := readRegistry(t, path).Closed[s.ID]
	if tomb.Owner != "alice" || !slices.Contains(tomb.ClaudeSessionIDs, first) || !slices.Contains(tomb.ClaudeSessionIDs, second) {
		t.Errorf("tombstone = %+v", tomb)
	}

	// Without a registry, the sessions closed here are remembered.
	m := newManager(t, Config{})
	ms := create(t, m, CreateOptions{Owner: "bob"})
	id := ms.Info().ClaudeSessionID
	if _, err := m.Close(ms.ID); err != nil {
		t.Fatal(err)
	}
	check(m, "no registry", id, "bob", true)
}

// sharedPair is two managers, as two instances, sharing one registry at
// path.
func sharedPair(t *testing.T) (path string, a, b *Manager) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "sessions.json")
	return path, newManager(t, Config{Registry: store.NewFile(path, nil)}), newManager(t, Config{Registry: store.NewFile(path, nil)})
}

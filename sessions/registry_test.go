package sessions

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
)

// ---------------------------------------------------------------------------
// Registry

func TestRegistryRestore(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sessions.json")
	m1 := newManager(t, Config{Registry: store.NewFile(path, nil), ProfileEnv: func(name string) (map[string]string, error) {
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

	m2 := newManager(t, Config{Registry: store.NewFile(path, nil), ProfileEnv: func(name string) (map[string]string, error) {
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
	if in.State != state.Dormant || in.PID != 0 || in.ClaudeSessionID != before.ClaudeSessionID || in.Queries != 1 ||
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
	if got := rs.Info(); got.Queries != 2 || got.State != state.Idle {
		t.Errorf("after the query: %+v", got)
	}

	b, err := m2.Get(broken.ID)
	if err != nil {
		t.Fatal(err)
	}
	if in := b.Info(); in.State != state.Refused || !strings.Contains(in.Failure, `no profile "gone"`) {
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
	if got := store.NewFile(path, nil).Load(); len(got) != 1 || got[0].SessionID != s.ID || got[0].Queries != 2 {
		t.Errorf("registry after close = %+v", got)
	}
}

// TestRegistryCorruptManager: a manager over a corrupt registry (moved
// aside, see store's TestRegistryCorrupt) starts empty and writes a good
// file.
func TestRegistryCorruptManager(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sessions.json")
	if err := os.WriteFile(path, []byte(`{"version":1,"sessions":[{"sessionId":`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := store.NewFile(path, nil)
	m := newManager(t, Config{Registry: r})
	if n := m.Count(); n != 0 {
		t.Errorf("Count = %d", n)
	}
	if aside, _ := filepath.Glob(path + ".corrupt-*"); len(aside) != 1 {
		t.Errorf("moved-aside files: %v", aside)
	}
	create(t, m, CreateOptions{})
	if got := store.NewFile(path, nil).Load(); len(got) != 1 {
		t.Errorf("after a create the registry holds %+v", got)
	}
}

// TestRegistryTombstonesBounded: a long create/close loop keeps the file
// small: tombstones past the count are dropped, oldest first, and so are
// those older than store.TombstoneAge, so that the file (which every write reads
// and writes whole) stops growing.
func TestRegistryTombstonesBounded(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sessions.json")
	r := store.NewFile(path, nil)
	r.MaxTombstones = 40
	m := newManager(t, Config{Registry: r})
	cwd := t.TempDir()
	cycle := func() {
		s, err := m.Open(ctxFor(t), CreateOptions{Cwd: cwd, Owner: "alice"})
		if err != nil {
			t.Fatal(err)
		}
		m.persist()
		if _, err := m.Close(s.ID); err != nil {
			t.Fatal(err)
		}
	}
	size := func() int64 {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	var sizes []int64
	for i := range 240 {
		cycle()
		if i%40 == 39 {
			sizes = append(sizes, size())
		}
	}
	f := readRegistry(t, path)
	if len(f.Closed) != 40 || f.ClosedHorizon.IsZero() {
		t.Errorf("after 240 closes: %d tombstones, horizon %v; want 40 and a horizon", len(f.Closed), f.ClosedHorizon)
	}
	for _, s := range sizes[1:] {
		if s > sizes[0]+64 { // the same records, give or take a digit
			t.Errorf("the registry grows with the closes: %v bytes every 40 cycles", sizes)
			break
		}
	}
	// Tombstones older than store.TombstoneAge go at the next write.
	if _, err := r.Update(func(f *store.State, now time.Time) {
		for id, tomb := range f.Closed {
			tomb.Closed = now.Add(-store.TombstoneAge - time.Minute)
			f.Closed[id] = tomb
			break
		}
	}); err != nil {
		t.Fatal(err)
	}
	cycle()
	if n := len(readRegistry(t, path).Closed); n != 40 {
		t.Errorf("%d tombstones, want 40 (the expired one gone, the new one in)", n)
	}
}

// BenchmarkRegistryCreateClose runs create/close cycles through the
// manager (no process: Open, a merge, Close, a merge) with the default
// tombstone cap. Run with -benchtime=5000x: the file stops growing once
// the cap is reached (cycle 2048), and the time per cycle of the last 500
// cycles ("last-µs/cycle") stays that of the 500 cycles after the cap was
// reached ("at-cap-µs/cycle"); "first-µs/cycle" is of the first 500.
func BenchmarkRegistryCreateClose(b *testing.B) {
	path := filepath.Join(b.TempDir(), "sessions.json")
	m := newManager(b, Config{Registry: store.NewFile(path, nil)})
	cwd := b.TempDir()
	ctx := ctxFor(b)
	var times []time.Duration
	for b.Loop() {
		start := time.Now()
		s, err := m.Open(ctx, CreateOptions{Cwd: cwd, Owner: "alice"})
		if err != nil {
			b.Fatal(err)
		}
		m.persist()
		if _, err := m.Close(s.ID); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(start))
	}
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(st.Size()), "file-bytes")
	b.ReportMetric(float64(len(readRegistry(b, path).Closed)), "tombstones")
	avg := func(from, to int) float64 {
		var sum time.Duration
		for _, d := range times[from:to] {
			sum += d
		}
		return float64(sum.Microseconds()) / float64(to-from)
	}
	const window = 500
	b.ReportMetric(avg(0, min(window, len(times))), "first-µs/cycle")
	if len(times) >= store.DefaultMaxTombstones+2*window {
		b.ReportMetric(avg(store.DefaultMaxTombstones, store.DefaultMaxTombstones+window), "at-cap-µs/cycle")
		b.ReportMetric(avg(len(times)-window, len(times)), "last-µs/cycle")
	}
}

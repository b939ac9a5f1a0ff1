package metrics

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakecli"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/promtext"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/recstore/sqlite"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

// TestMain lets the test binary double as the fake claude CLI.
func TestMain(m *testing.M) { fakecli.TestMain(m) }

const waitLimit = 30 * time.Second

// plainCost is what a turn of the fake CLI's plain capture costs.
const plainCost = 0.000275

// served is a manager running the fake CLI with the metrics' hooks, and
// the metrics served over HTTP.
type served struct {
	met *Metrics
	mgr *sessions.Manager
	url string
}

func serve(t *testing.T) *served {
	t.Helper()
	met := New()
	path, env := fakecli.Command(t)
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "sessions.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	mgr := sessions.NewManager(sessions.Config{CLIPath: path, Env: env, CloseStage: 2 * time.Second, Store: met.Timed(st),
		OnAlert: met.Turn, OnTakeover: met.Takeover})
	t.Cleanup(func() {
		mgr.Shutdown()
		if n := mgr.LiveCount(); n != 0 {
			t.Errorf("after Shutdown LiveCount = %d", n)
		}
	})
	met.Watch(mgr)
	srv := httptest.NewServer(met.Handler())
	t.Cleanup(srv.Close)
	return &served{met: met, mgr: mgr, url: srv.URL}
}

func (s *served) scrape(t *testing.T) promtext.Families {
	t.Helper()
	return promtext.Scrape(t, http.DefaultClient, s.url, "")
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	t.Cleanup(cancel)
	return ctx
}

// query runs prompt on s and fails t unless the turn ends as wantError says.
func query(t *testing.T, s *sessions.Session, prompt string, wantError bool) {
	t.Helper()
	r, err := s.Query(ctxFor(t), prompt, sessions.QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.IsError != wantError {
		t.Fatalf("query %q: IsError %v (%s), want %v", prompt, r.IsError, r.ErrorText, wantError)
	}
}

// TestMetricsMoveWithTurns: the turn histogram, the cost by user, the
// store's writes, the sessions by state and the live processes follow the
// turns of a manager running the fake CLI, as a scrape reads them.
func TestMetricsMoveWithTurns(t *testing.T) {
	t.Parallel()
	sv := serve(t)
	f := sv.scrape(t)
	for _, st := range States {
		if v := promtext.Value(f.Metric(t, Prefix+"sessions", "state", string(st))); v != 0 {
			t.Errorf("sessions{state=%q} = %v before any session, want 0", st, v)
		}
	}
	if v := promtext.Value(f.Metric(t, Prefix+"live_processes")); v != 0 {
		t.Errorf("live_processes = %v before any session, want 0", v)
	}

	ctx := ctxFor(t)
	local, err := sv.mgr.Create(ctx, sessions.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	alice, err := sv.mgr.Create(ctx, sessions.CreateOptions{Owner: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	query(t, local, "hi", false)
	query(t, alice, "hi", false)
	query(t, alice, "ERR400", true)

	f = sv.scrape(t)
	turns := Prefix + "turn_duration_seconds"
	if v := promtext.Value(f.Metric(t, turns, "outcome", Success)); v != 2 {
		t.Errorf("%s{outcome=success} counts %v turns, want 2", turns, v)
	}
	if v := promtext.Value(f.Metric(t, turns, "outcome", Failed)); v != 1 {
		t.Errorf("%s{outcome=error} counts %v turns, want 1", turns, v)
	}
	if m := f.Metric(t, turns, "outcome", Success); m.GetHistogram().GetSampleSum() <= 0 {
		t.Errorf("%s{outcome=success} sums %v s, want a positive time", turns, m.GetHistogram().GetSampleSum())
	}
	cost := Prefix + "cost_usd_total"
	if v := promtext.Value(f.Metric(t, cost, "user", LocalUser)); v != plainCost {
		t.Errorf("%s{user=%q} = %v, want one plain turn's %v", cost, LocalUser, v, plainCost)
	}
	if v := promtext.Value(f.Metric(t, cost, "user", "alice")); v < plainCost {
		t.Errorf("%s{user=alice} = %v, want at least one plain turn's %v", cost, v, plainCost)
	}
	if v := promtext.Value(f.Metric(t, Prefix+"store_write_seconds")); v < 3 {
		t.Errorf("store_write_seconds counts %v writes, want at least one per create and turn", v)
	}
	if v := promtext.Value(f.Metric(t, Prefix+"sessions", "state", "idle")); v != 2 {
		t.Errorf("sessions{state=idle} = %v, want 2", v)
	}
	if v := promtext.Value(f.Metric(t, Prefix+"live_processes")); v != 2 {
		t.Errorf("live_processes = %v, want 2", v)
	}
	if v := promtext.Value(f.Metric(t, Prefix+"queue_depth")); v != 0 {
		t.Errorf("queue_depth = %v, want 0", v)
	}

	if _, err := sv.mgr.Close(local.ID); err != nil {
		t.Fatal(err)
	}
	f = sv.scrape(t)
	if v := promtext.Value(f.Metric(t, Prefix+"sessions", "state", "idle")); v != 1 {
		t.Errorf("sessions{state=idle} = %v after a close, want 1", v)
	}
	if v := promtext.Value(f.Metric(t, Prefix+"lease_takeovers_total")); v != 0 {
		t.Errorf("lease_takeovers_total = %v with one instance, want 0", v)
	}
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes"} {
		if _, ok := f[name]; !ok {
			t.Errorf("the scrape lacks the library's %s", name)
		}
	}
}

// TestMetricsHooks: the hooks that need no manager move their metric, a
// permission wait (an alert without a result) moves nothing, and every
// metric passes the library's lint (names, units, help).
func TestMetricsHooks(t *testing.T) {
	t.Parallel()
	m := New()
	m.Takeover()
	m.Takeover()
	m.StoreWrite(3 * time.Millisecond)
	m.Turn(sessions.Alert{Tool: "Bash"}) // a permission wait
	m.Watch(fakeSource{})
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	f := promtext.Scrape(t, srv.Client(), srv.URL, "")
	if v := promtext.Value(f.Metric(t, Prefix+"lease_takeovers_total")); v != 2 {
		t.Errorf("lease_takeovers_total = %v after two takeovers, want 2", v)
	}
	if h := f.Metric(t, Prefix+"store_write_seconds").GetHistogram(); h.GetSampleCount() != 1 || h.GetSampleSum() != 0.003 {
		t.Errorf("store_write_seconds = %v writes of %v s, want one of 0.003", h.GetSampleCount(), h.GetSampleSum())
	}
	if fam, ok := f[Prefix+"turn_duration_seconds"]; ok && len(fam.GetMetric()) != 0 {
		t.Errorf("a permission wait made %d turn series, want none", len(fam.GetMetric()))
	}
	// The exposition passes Prometheus's own linter.
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	problems, err := promlint.New(resp.Body).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// TestHistogramBuckets: an observation counts in the first bucket whose
// bound holds it, the buckets are written cumulative, +Inf counts them all.
func TestHistogramBuckets(t *testing.T) {
	t.Parallel()
	m := New()
	for _, d := range []time.Duration{500 * time.Microsecond, time.Millisecond, 7 * time.Millisecond, 10 * time.Second} {
		m.StoreWrite(d)
	}
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	h := promtext.Scrape(t, srv.Client(), srv.URL, "").Metric(t, Prefix+"store_write_seconds").GetHistogram()
	want := map[float64]uint64{0.001: 2, 0.0025: 2, 0.005: 2, 0.01: 3, 2.5: 3}
	for _, b := range h.GetBucket() {
		if n, ok := want[b.GetUpperBound()]; ok && b.GetCumulativeCount() != n {
			t.Errorf("le=%v counts %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), n)
		}
	}
	if h.GetSampleCount() != 4 {
		t.Errorf("count %d, want 4", h.GetSampleCount())
	}
}

// fakeSource holds no sessions.
type fakeSource struct{}

func (fakeSource) List() []*sessions.Session { return nil }
func (fakeSource) LiveCount() int            { return 3 }
func (fakeSource) Count() int                { return 5 }
func (fakeSource) Queued() int               { return 2 }

// TestMetricsScrapeReadsSource: the gauges read the source at each scrape.
func TestMetricsScrapeReadsSource(t *testing.T) {
	t.Parallel()
	m := New()
	m.Watch(fakeSource{})
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	f := promtext.Scrape(t, srv.Client(), srv.URL, "")
	if v := promtext.Value(f.Metric(t, Prefix+"live_processes")); v != 3 {
		t.Errorf("live_processes = %v, want the source's 3", v)
	}
	if v := promtext.Value(f.Metric(t, Prefix+"queue_depth")); v != 2 {
		t.Errorf("queue_depth = %v, want the source's 2", v)
	}
	// It holds none of the store's 5 open sessions: all are stored.
	if v := promtext.Value(f.Metric(t, Prefix+"sessions", "state", Stored)); v != 5 {
		t.Errorf(`sessions{state="stored"} = %v, want the store's 5 less the 0 held`, v)
	}
}

// BenchmarkTurnHook: what the metrics add to each turn's end (Turn, a
// sessions.Config.OnAlert) and to each registry write (StoreWrite).
func BenchmarkTurnHook(b *testing.B) {
	m := New()
	path, env := fakecli.Command(b)
	mgr := sessions.NewManager(sessions.Config{CLIPath: path, Env: env})
	defer mgr.Shutdown()
	s, err := mgr.Open(context.Background(), sessions.CreateOptions{Owner: "alice"})
	if err != nil {
		b.Fatal(err)
	}
	a := sessions.Alert{Session: s, Result: &turn.Result{CostUSD: plainCost}, Started: time.Now()}
	b.ReportAllocs()
	for b.Loop() {
		m.Turn(a)
		m.StoreWrite(time.Millisecond)
	}
}

// TestAnonymousHandler: the unauthenticated handler (--metrics, which any
// process of the machine may read) serves the cost summed over the users,
// without their names; the authenticated one keeps them (defect 12 of
// issue 43).
func TestAnonymousHandler(t *testing.T) {
	t.Parallel()
	m := New()
	m.cost["alice"], m.cost["bob"] = 1.5, 0.25
	anon := httptest.NewServer(m.AnonymousHandler())
	t.Cleanup(anon.Close)
	full := httptest.NewServer(m.Handler())
	t.Cleanup(full.Close)
	body := func(url string) string {
		t.Helper()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	a, f := body(anon.URL), body(full.URL)
	if strings.Contains(a, "alice") || strings.Contains(a, "bob") || !strings.Contains(a, Prefix+"cost_usd_total 1.75") {
		t.Errorf("the anonymous metrics name users or lack the sum:\n%s", grep(a, "cost"))
	}
	if !strings.Contains(f, `user="alice"`) || !strings.Contains(f, `user="bob"`) {
		t.Errorf("the authenticated metrics lack the users:\n%s", grep(f, "cost"))
	}
	if !strings.Contains(a, "go_goroutines") {
		t.Error("the anonymous metrics lack the rest")
	}
}

// grep is the lines of s holding sub.
func grep(s, sub string) string {
	var out []string
	for line := range strings.Lines(s) {
		if strings.Contains(line, sub) {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return strings.Join(out, "\n")
}

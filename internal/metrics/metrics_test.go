package metrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/promtext"
)

// TestMetricsHooks: the hooks move their metric, no turn makes no turn
// series, and every metric passes the library's lint (names, units, help).
func TestMetricsHooks(t *testing.T) {
	t.Parallel()
	m := New()
	m.Takeover()
	m.Takeover()
	m.StoreWrite(3 * time.Millisecond)
	m.Watch(fakeSource)
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
		t.Errorf("no turn made %d turn series, want none", len(fam.GetMetric()))
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

// fakeSource holds one session, running, of 5 open.
func fakeSource() Counts {
	return Counts{Held: []StateCount{{"idle", 0}, {"running", 1}}, Open: 5, Live: 3, Queued: 2}
}

// TestMetricsScrapeReadsSource: the gauges read the source at each scrape.
func TestMetricsScrapeReadsSource(t *testing.T) {
	t.Parallel()
	m := New()
	m.Watch(fakeSource)
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	f := promtext.Scrape(t, srv.Client(), srv.URL, "")
	if v := promtext.Value(f.Metric(t, Prefix+"live_processes")); v != 3 {
		t.Errorf("live_processes = %v, want the source's 3", v)
	}
	if v := promtext.Value(f.Metric(t, Prefix+"queue_depth")); v != 2 {
		t.Errorf("queue_depth = %v, want the source's 2", v)
	}
	// It holds one of the store's 5 open sessions: 4 are stored.
	if v := promtext.Value(f.Metric(t, Prefix+"sessions", "state", Stored)); v != 4 {
		t.Errorf(`sessions{state="stored"} = %v, want the store's 5 less the 1 held`, v)
	}
	if v := promtext.Value(f.Metric(t, Prefix+"sessions", "state", "idle")); v != 0 {
		t.Errorf(`sessions{state="idle"} = %v, want a series of 0`, v)
	}
}

// BenchmarkTurnHook: what the metrics add to each turn's end (Turn) and to
// each store write (StoreWrite).
func BenchmarkTurnHook(b *testing.B) {
	m := New()
	t := TurnEnd{User: "alice", CostUSD: 0.000275, Started: time.Now()}
	b.ReportAllocs()
	for b.Loop() {
		m.Turn(t)
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

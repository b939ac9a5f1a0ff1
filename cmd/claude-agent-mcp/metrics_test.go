package main

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/metrics"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakecli"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/promtext"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/listing"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store/sqlite"
)

// TestMetricsPortTaken: a --metrics address that cannot be listened on is
// an error at start naming the flag (the operator asked for the endpoint:
// it is never silently missing nor moved), and nothing is hooked.
func TestMetricsPortTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	var log bytes.Buffer
	var mcfg sessions.Config
	om, err := newOperatorMetrics(&config{metrics: taken.Addr().String()}, &mcfg, slog.New(slog.NewTextHandler(&log, nil)))
	if err == nil || om != nil || !strings.Contains(err.Error(), "listening on --metrics "+taken.Addr().String()) {
		t.Fatalf("newOperatorMetrics on a taken port = %v, %v; want an error naming --metrics and the address", om, err)
	}
	if mcfg.OnAlert != nil || mcfg.OnTakeover != nil {
		t.Error("hooks were set although the metrics failed")
	}

	// Without --metrics nor --metrics-tokens-file there are no metrics.
	if om, err := newOperatorMetrics(&config{}, &mcfg, slog.New(slog.DiscardHandler)); om != nil || err != nil {
		t.Errorf("without the flags: %v, %v; want nothing", om, err)
	}
	om.serve(nil)() // a nil one serves nothing
}

// plainCost is what a turn of the fake CLI's plain capture costs.
const plainCost = 0.000275

// servedMetrics is a manager running the fake CLI with the hooks that
// --metrics sets, and its metrics endpoint.
type servedMetrics struct {
	mgr *sessions.Manager
	url string
}

func serveMetrics(t *testing.T) *servedMetrics {
	t.Helper()
	path, env := fakecli.Command(t)
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "sessions.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	mcfg := sessions.Config{CLIPath: path, Env: env, CloseStage: 2 * time.Second, Store: st}
	om, err := newOperatorMetrics(&config{metrics: "127.0.0.1:0"}, &mcfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	mgr := sessions.NewManager(mcfg)
	t.Cleanup(func() {
		mgr.Shutdown()
		if n := mgr.LiveCount(); n != 0 {
			t.Errorf("after Shutdown LiveCount = %d", n)
		}
	})
	t.Cleanup(om.serve(mgr))
	// The authenticated handler (--metrics-tokens-file's), which names the
	// users; --metrics's listener serves the same without them.
	srv := httptest.NewServer(om.m.Handler())
	t.Cleanup(srv.Close)
	return &servedMetrics{mgr: mgr, url: srv.URL}
}

func (s *servedMetrics) scrape(t *testing.T) promtext.Families {
	t.Helper()
	return promtext.Scrape(t, http.DefaultClient, s.url, "")
}

// metricsQuery runs prompt on s and fails t unless the turn ends as
// wantError says.
func metricsQuery(t *testing.T, s *sessions.Session, prompt string, wantError bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := s.Query(ctx, prompt, sessions.QueryOptions{})
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
	sv := serveMetrics(t)
	f := sv.scrape(t)
	for _, st := range listing.States {
		if v := promtext.Value(f.Metric(t, metrics.Prefix+"sessions", "state", string(st))); v != 0 {
			t.Errorf("sessions{state=%q} = %v before any session, want 0", st, v)
		}
	}
	if v := promtext.Value(f.Metric(t, metrics.Prefix+"live_processes")); v != 0 {
		t.Errorf("live_processes = %v before any session, want 0", v)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	local, err := sv.mgr.Create(ctx, sessions.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	alice, err := sv.mgr.Create(ctx, sessions.CreateOptions{Owner: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	metricsQuery(t, local, "hi", false)
	metricsQuery(t, alice, "hi", false)
	metricsQuery(t, alice, "ERR400", true)

	f = sv.scrape(t)
	turns := metrics.Prefix + "turn_duration_seconds"
	if v := promtext.Value(f.Metric(t, turns, "outcome", metrics.Success)); v != 2 {
		t.Errorf("%s{outcome=success} counts %v turns, want 2", turns, v)
	}
	if v := promtext.Value(f.Metric(t, turns, "outcome", metrics.Failed)); v != 1 {
		t.Errorf("%s{outcome=error} counts %v turns, want 1", turns, v)
	}
	if m := f.Metric(t, turns, "outcome", metrics.Success); m.GetHistogram().GetSampleSum() <= 0 {
		t.Errorf("%s{outcome=success} sums %v s, want a positive time", turns, m.GetHistogram().GetSampleSum())
	}
	cost := metrics.Prefix + "cost_usd_total"
	if v := promtext.Value(f.Metric(t, cost, "user", metrics.LocalUser)); v != plainCost {
		t.Errorf("%s{user=%q} = %v, want one plain turn's %v", cost, metrics.LocalUser, v, plainCost)
	}
	if v := promtext.Value(f.Metric(t, cost, "user", "alice")); v < plainCost {
		t.Errorf("%s{user=alice} = %v, want at least one plain turn's %v", cost, v, plainCost)
	}
	if v := promtext.Value(f.Metric(t, metrics.Prefix+"store_write_seconds")); v < 3 {
		t.Errorf("store_write_seconds counts %v writes, want at least one per create and turn", v)
	}
	if v := promtext.Value(f.Metric(t, metrics.Prefix+"sessions", "state", "idle")); v != 2 {
		t.Errorf("sessions{state=idle} = %v, want 2", v)
	}
	if v := promtext.Value(f.Metric(t, metrics.Prefix+"live_processes")); v != 2 {
		t.Errorf("live_processes = %v, want 2", v)
	}
	if v := promtext.Value(f.Metric(t, metrics.Prefix+"queue_depth")); v != 0 {
		t.Errorf("queue_depth = %v, want 0", v)
	}

	if _, err := sv.mgr.Close(local.ID); err != nil {
		t.Fatal(err)
	}
	f = sv.scrape(t)
	if v := promtext.Value(f.Metric(t, metrics.Prefix+"sessions", "state", "idle")); v != 1 {
		t.Errorf("sessions{state=idle} = %v after a close, want 1", v)
	}
	if v := promtext.Value(f.Metric(t, metrics.Prefix+"lease_takeovers_total")); v != 0 {
		t.Errorf("lease_takeovers_total = %v with one instance, want 0", v)
	}
	if _, ok := turnEnd(sessions.Alert{Tool: "Bash"}); ok {
		t.Error("a permission wait (an alert without a result) counts as a turn's end")
	}
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes"} {
		if _, ok := f[name]; !ok {
			t.Errorf("the scrape lacks the library's %s", name)
		}
	}
}

package e2e_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/metrics"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/promtext"
)

// metricsURLRE finds the --metrics endpoint in the server's log.
var metricsURLRE = regexp.MustCompile(`metrics \(Prometheus text format\) url=(http://\S+/metrics)`)

// checkTurnMetrics checks a scrape after one successful turn of user's one
// session, which is idle with its live process (no warm spares); user ""
// is the unauthenticated listener's scrape, which names no user.
func checkTurnMetrics(t *testing.T, f promtext.Families, user string) {
	t.Helper()
	p := metrics.Prefix
	if v := promtext.Value(f.Metric(t, p+"turn_duration_seconds", "outcome", metrics.Success)); v != 1 {
		t.Errorf("turn_duration_seconds{outcome=success} counts %v turns, want 1", v)
	}
	if user == "" {
		if v := promtext.Value(f.Metric(t, p+"cost_usd_total")); v <= 0 {
			t.Errorf("cost_usd_total = %v, want the turn's cost (above 0)", v)
		}
		for _, m := range f[p+"cost_usd_total"].GetMetric() {
			if len(m.GetLabel()) != 0 {
				t.Errorf("the unauthenticated scrape names a user: %v", m.GetLabel())
			}
		}
	} else if v := promtext.Value(f.Metric(t, p+"cost_usd_total", "user", user)); v <= 0 {
		t.Errorf("cost_usd_total{user=%q} = %v, want the turn's cost (above 0)", user, v)
	}
	if v := promtext.Value(f.Metric(t, p+"sessions", "state", "idle")); v != 1 {
		t.Errorf("sessions{state=idle} = %v, want 1", v)
	}
	if v := promtext.Value(f.Metric(t, p+"sessions", "state", "running")); v != 0 {
		t.Errorf("sessions{state=running} = %v, want 0", v)
	}
	if v := promtext.Value(f.Metric(t, p+"live_processes")); v != 1 {
		t.Errorf("live_processes = %v, want 1", v)
	}
	if v := promtext.Value(f.Metric(t, p+"queue_depth")); v != 0 {
		t.Errorf("queue_depth = %v, want 0", v)
	}
	if v := promtext.Value(f.Metric(t, p+"store_write_seconds")); v < 1 {
		t.Errorf("store_write_seconds counts %v writes, want at least the turn's", v)
	}
	if _, ok := f["process_resident_memory_bytes"]; !ok {
		t.Error("the scrape lacks the library's process_resident_memory_bytes")
	}
}

// TestE2EMetrics: the built server with the real CLI and the fake API
// serves its metrics in the Prometheus text format — on stdio at --metrics
// (its own loopback listener, no token), over --http at /metrics behind a
// token of --metrics-tokens-file (401 without it, and with an MCP user's
// token) — and a scrape after one query shows the turn, its cost for its
// user, the idle session and its live process.
func TestE2EMetrics(t *testing.T) {
	t.Parallel()
	t.Run("stdio", func(t *testing.T) {
		e := startE2E(t, e2eOptions{args: []string{"--metrics", "127.0.0.1:0", "--warm-spares", "0"}})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		// Logged before serving began, so before the client connected.
		log, err := os.ReadFile(e.logPath)
		if err != nil {
			t.Fatal(err)
		}
		m := metricsURLRE.FindSubmatch(log)
		if m == nil {
			t.Fatalf("the log names no metrics URL:\n%s", log)
		}
		url := string(m[1])
		before := promtext.Scrape(t, http.DefaultClient, url, "")
		if fam, ok := before[metrics.Prefix+"turn_duration_seconds"]; ok {
			t.Errorf("turns counted before any query: %v", fam)
		}
		if v := promtext.Value(before.Metric(t, metrics.Prefix+"sessions", "state", "idle")); v != 0 {
			t.Errorf("sessions{state=idle} = %v before any session, want 0", v)
		}
		sid, _ := e.create(t, ctx, nil)
		if res, _ := e.query(t, ctx, sid, "hi"); res.IsError {
			t.Fatalf("query: %s", text(res))
		}
		checkTurnMetrics(t, promtext.Scrape(t, http.DefaultClient, url, ""), "")
	})
	t.Run("http", func(t *testing.T) {
		scrapeToken := "scrape-" + randomHex(t, 16)
		file := filepath.Join(t.TempDir(), "metrics-tokens")
		if err := os.WriteFile(file, []byte("prometheus:"+sha256Hex(scrapeToken)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		e := startHTTPE2E(t, httpE2EOptions{users: []string{"alice"}, args: []string{"--metrics-tokens-file", file, "--warm-spares", "0"}})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		url := e.url + "/metrics"
		for _, token := range []string{"", "wrong", e.tokens["alice"]} {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("/metrics with token %q: %s, want 401", token, resp.Status)
			}
		}
		alice := e.connect(t, "alice", "")
		_, out := httpCall(t, ctx, alice, "claude_session_create", map[string]any{"cwd": e.cwd})
		sid, _ := out["sessionId"].(string)
		if res, _ := httpCall(t, ctx, alice, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "hi"}); res.IsError {
			t.Fatalf("query: %v", res.Content)
		}
		checkTurnMetrics(t, promtext.Scrape(t, http.DefaultClient, url, scrapeToken), "alice")
		if resp, err := http.Get(e.url + "/healthz"); err != nil || resp.StatusCode != http.StatusOK {
			t.Errorf("/healthz beside /metrics: %v %v", resp, err)
		} else {
			resp.Body.Close()
		}
	})
}

package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/metrics"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/listing"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
)

// checkMetrics checks --metrics (a loopback HOST:PORT: its listener has
// no authentication) and --metrics-tokens-file (needs --http, and must
// read).
func (c *config) checkMetrics() error {
	if c.metrics != "" {
		host, _, err := net.SplitHostPort(c.metrics)
		if err != nil {
			return fmt.Errorf("invalid --metrics %q: use a loopback HOST:PORT, such as 127.0.0.1:9464", c.metrics)
		}
		if !loopback(host) {
			return fmt.Errorf("invalid --metrics %q: its listener has no authentication, so it listens on loopback only (127.0.0.1, ::1 or localhost); to be scraped from elsewhere, serve --http with --metrics-tokens-file (/metrics behind a bearer token)", c.metrics)
		}
	}
	if c.metricsTokensFile == "" {
		return nil
	}
	if c.http == "" {
		return errors.New("--metrics-tokens-file needs --http: it guards /metrics on the --http listener (on stdio use --metrics)")
	}
	_, err := metrics.LoadTokens(c.metricsTokensFile)
	return err
}

// operatorMetrics are the metrics of --metrics and --metrics-tokens-file:
// the hooks are set in the sessions' configuration before the manager
// exists, the listener of --metrics is taken at once (a taken port is an
// error at start, not a metrics endpoint silently missing), and serving
// begins once the manager exists (serve).
type operatorMetrics struct {
	m      *metrics.Metrics
	ln     net.Listener    // --metrics's own, nil without
	tokens *metrics.Tokens // --metrics-tokens-file's, nil without
	log    *slog.Logger
}

// newOperatorMetrics makes the metrics (nil without --metrics and
// --metrics-tokens-file) and sets their hooks in mcfg: its store's
// writes (openStore has run), the lease takeovers and the turns' ends
// (beside the --notify alerts already there).
func newOperatorMetrics(c *config, mcfg *sessions.Config, logger *slog.Logger) (*operatorMetrics, error) {
	if c.metrics == "" && c.metricsTokensFile == "" {
		return nil, nil
	}
	om := &operatorMetrics{m: metrics.New(), log: logger}
	if c.metricsTokensFile != "" {
		t, err := metrics.LoadTokens(c.metricsTokensFile)
		if err != nil {
			return nil, err
		}
		if t.Len() == 0 {
			logger.Warn("--metrics-tokens-file holds no token: /metrics answers 401 until it holds one and is reloaded (SIGHUP)")
		}
		om.tokens = t
	}
	if c.metrics != "" {
		ln, err := net.Listen("tcp", c.metrics)
		if err != nil {
			return nil, fmt.Errorf("listening on --metrics %s (give another port, or leave --metrics out): %w", c.metrics, err)
		}
		om.ln = ln
	}
	if mcfg.Store != nil {
		mcfg.Store = om.m.Timed(mcfg.Store)
	}
	mcfg.OnTakeover = om.m.Takeover
	notify := mcfg.OnAlert
	mcfg.OnAlert = func(a sessions.Alert) {
		if t, ok := turnEnd(a); ok {
			om.m.Turn(t)
		}
		if notify != nil {
			notify(a)
		}
	}
	return om, nil
}

// turnEnd is the turn's end an alert tells of, as the metrics count it; a
// permission wait (no result) is none.
func turnEnd(a sessions.Alert) (metrics.TurnEnd, bool) {
	r := a.Result
	if r == nil {
		return metrics.TurnEnd{}, false
	}
	return metrics.TurnEnd{User: a.Session.Info().Owner, Started: a.Started, CostUSD: r.CostUSD,
		IsError: r.IsError, Interrupted: r.Interrupted}, true
}

// sessionCounts is what a scrape of the metrics reads of mgr: the sessions
// it holds by state — every state a list filters by, in its order, then
// any other —, the open sessions in all, its live processes and queue.
func sessionCounts(mgr *sessions.Manager) metrics.Counts {
	n := map[state.State]int{}
	for _, s := range mgr.List() {
		n[s.Info().State]++
	}
	c := metrics.Counts{Open: mgr.Count(), Live: mgr.LiveCount(), Queued: mgr.Queued()}
	for _, st := range listing.States {
		c.Held = append(c.Held, metrics.StateCount{State: string(st), N: n[st]})
		delete(n, st)
	}
	for _, st := range slices.Sorted(maps.Keys(n)) {
		c.Held = append(c.Held, metrics.StateCount{State: string(st), N: n[st]})
	}
	return c
}

// serve reads the sessions of mgr at each scrape and serves the metrics on
// the --metrics listener; stop ends it. A nil om serves nothing.
func (om *operatorMetrics) serve(mgr *sessions.Manager) (stop func()) {
	if om == nil {
		return func() {}
	}
	om.m.Watch(func() metrics.Counts { return sessionCounts(mgr) })
	if om.ln == nil {
		return func() {}
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", om.m.AnonymousHandler()) // no authentication: no user's name or spend
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, WriteTimeout: time.Minute, IdleTimeout: time.Minute}
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := hs.Serve(om.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			om.log.Error("the metrics endpoint stopped serving", "err", err)
		}
	}()
	om.log.Info("metrics (Prometheus text format)", "url", "http://"+om.ln.Addr().String()+"/metrics")
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if hs.Shutdown(ctx) != nil {
			_ = hs.Close()
		}
		<-served
	}
}

// route puts /metrics behind --metrics-tokens-file's tokens in front of
// the --http handler h (h itself without them).
func (om *operatorMetrics) route(h http.Handler) http.Handler {
	if om == nil || om.tokens == nil {
		return h
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", om.tokens.Protect(om.m.Handler()))
	mux.Handle("/", h)
	return mux
}

// reload reads --metrics-tokens-file again (on SIGHUP); an error keeps the
// tokens as they were.
func (om *operatorMetrics) reload() {
	if om == nil || om.tokens == nil {
		return
	}
	if err := om.tokens.Reload(); err != nil {
		om.log.Error("reloading --metrics-tokens-file: the tokens stay as they were", "err", err)
		return
	}
	om.log.Info("--metrics-tokens-file reloaded", "tokens", om.tokens.Len())
}

package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/audit"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/dashboard"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// checkUI checks --ui and --ui-admins: on stdio the dashboard listens on
// loopback only; over --http it is /ui of that listener (--ui on).
func (c *config) checkUI() error {
	switch {
	case c.ui == "" && c.uiAdmins != "":
		return errors.New("--ui-admins needs --ui")
	case c.ui == "":
		return nil
	case c.http != "" && c.ui != "on":
		return fmt.Errorf("invalid --ui %q: with --http the dashboard is /ui on its listener: use --ui on", c.ui)
	case c.http != "" && c.tokensFile == "" && os.Getenv(TokenEnv) == "":
		return fmt.Errorf("--ui over --http needs --tokens-file or %s: a person signs in to the dashboard with a bearer token", TokenEnv)
	case c.http == "" && c.uiAdmins != "":
		return errors.New("--ui-admins needs --http (on stdio there is one user)")
	case c.http != "" || c.ui == "on":
		return nil
	}
	host, _, err := net.SplitHostPort(c.ui)
	if err != nil {
		return fmt.Errorf("invalid --ui %q: use on, or a loopback HOST:PORT such as 127.0.0.1:8790", c.ui)
	}
	if !loopback(host) {
		return fmt.Errorf("invalid --ui %q: on stdio the dashboard listens on loopback only (127.0.0.1, ::1 or localhost); serve --http with tokens to reach it from elsewhere", c.ui)
	}
	return nil
}

// startUI makes the dashboard (nil without --ui). On stdio it listens on
// its loopback address and logs the link that signs a browser in; stop
// ends its listener and its pages' streams. Over --http the HTTP handler
// serves it (serveHTTP).
func startUI(c *config, mgr *sessions.Manager, audit *audit.Log, logger *slog.Logger) (dash *dashboard.Dashboard, stop func(), err error) {
	if c.ui == "" {
		return nil, func() {}, nil
	}
	o := dashboard.Options{Audit: audit, Logger: logger, Admins: splitList(c.uiAdmins, ",")}
	if c.http != "" {
		return dashboard.New(mgr, o), func() {}, nil
	}
	addr := c.ui
	if addr == "on" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("listening on --ui %s: %w", c.ui, err)
	}
	o.BaseURL = "http://" + ln.Addr().String()
	dash = dashboard.New(mgr, o)
	mux := http.NewServeMux()
	mux.Handle("/ui", dash)
	mux.Handle("/ui/", dash)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, IdleTimeout: 30 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("the dashboard stopped serving", "err", err)
		}
	}()
	// The link carries the secret: whoever has it sees and steers the
	// sessions, like the person who started the server.
	logger.Info("dashboard (open this link; it carries this start's secret)", "url", dash.URL())
	return dash, func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if hs.Shutdown(ctx) != nil {
			_ = hs.Close() // event streams do not end by themselves
		}
		<-served
	}, nil
}

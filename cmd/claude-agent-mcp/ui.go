package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"syscall"
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
// serves it (serveHTTP). An address that cannot be listened on does not
// end the server: a port already taken (a second server, such as the
// check `claude mcp list` runs) moves the dashboard to the next free one
// (listenUI), and any other failure leaves it off, logged once.
func startUI(c *config, mgr *sessions.Manager, audit *audit.Log, logger *slog.Logger) (dash *dashboard.Dashboard, stop func(), err error) {
	if c.ui == "" {
		return nil, func() {}, nil
	}
	o := dashboard.Options{Audit: audit, Logger: logger, Admins: splitList(c.uiAdmins, ",")}
	if c.http != "" {
		return dashboard.New(mgr, o), func() {}, nil
	}
	ln, err := listenUI(c.ui, logger)
	if err != nil {
		// The dashboard never costs the server: MCP goes on without it.
		logger.Error("the dashboard is off: its address cannot be listened on", "ui", c.ui, "err", err)
		return nil, func() {}, nil
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

// uiPortTries is how many ports after a taken --ui port listenUI tries
// before taking any free one.
const uiPortTries = 10

// listenUI listens on the dashboard's stdio address: ui is "on" (any free
// loopback port) or a loopback HOST:PORT (checkUI). When that port is
// taken it tries the next ones, then any free port of that host, and
// says which in the log: the link logged and claude_session_list's
// dashboardUrl carry the port it got.
func listenUI(ui string, logger *slog.Logger) (net.Listener, error) {
	if ui == "on" {
		return net.Listen("tcp", "127.0.0.1:0")
	}
	ln, err := net.Listen("tcp", ui)
	if !errors.Is(err, syscall.EADDRINUSE) {
		return ln, err
	}
	host, port, _ := net.SplitHostPort(ui) // checked by checkUI
	p, _ := strconv.Atoi(port)
	for i := 1; i <= uiPortTries && p != 0 && p+i <= 65535; i++ {
		if ln, err = net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p+i))); err == nil {
			break
		}
	}
	if ln == nil {
		if ln, err = net.Listen("tcp", net.JoinHostPort(host, "0")); err != nil {
			return nil, err
		}
	}
	logger.Warn("the dashboard's port is taken (another server?): it listens on another one", "ui", ui, "addr", ln.Addr().String())
	return ln, nil
}

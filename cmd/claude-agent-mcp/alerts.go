package main

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/alerts"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/textcut"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/dashboard"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// urlList is a repeatable flag of URLs (--notify): each use adds one; its
// environment twin may hold several, separated by spaces.
type urlList []string

func (l *urlList) String() string { return strings.Join(*l, " ") }

func (l *urlList) Set(v string) error {
	for _, u := range strings.Fields(v) {
		if err := alerts.CheckURL(u); err != nil {
			return err
		}
		*l = append(*l, u)
	}
	return nil
}

// notifier sends the --notify alerts: built before the manager (whose
// OnAlert it is), told the dashboard once it runs, for the links.
type notifier struct {
	sender *alerts.Sender
	dash   atomic.Pointer[dashboard.Dashboard]
}

// newNotifier returns the alerts of urls (nil without any).
func newNotifier(urls []string, logger *slog.Logger) *notifier {
	if len(urls) == 0 {
		return nil
	}
	logger.Info("alerts go to the --notify webhooks", "count", len(urls))
	return &notifier{sender: alerts.New(urls, alerts.Options{Log: logger})}
}

// onAlert is sessions.Config.OnAlert: it never blocks (Sender.Send).
func (n *notifier) onAlert(a sessions.Alert) {
	info := a.Session.Info()
	e := alerts.Event{SessionID: info.SessionID, Name: info.Name, User: info.Owner, State: string(info.State), CostUSD: info.CostUSD, Tool: a.Tool}
	switch r := a.Result; {
	case r == nil:
		e.Kind = alerts.Waiting
	case r.Interrupted:
		return // whoever interrupted it knows
	case r.IsError && r.Subtype == "error_max_budget_usd":
		e.Kind, e.Answer = alerts.Budget, r.ErrorText
	case r.IsError:
		e.Kind, e.Answer = alerts.Failed, r.ErrorText
	default:
		e.Kind, e.Answer = alerts.Finished, r.FinalText
	}
	if d := n.dash.Load(); d != nil {
		e.DashboardURL = d.SessionURL(info.SessionID)
	}
	name := info.Name
	if name == "" {
		name = "session " + info.SessionID
	}
	switch e.Kind {
	case alerts.Waiting:
		e.Title = name + " waits for a permission answer"
		e.Text = e.Title + ": " + a.Tool
	default:
		e.Title = name + " " + string(e.Kind)
		e.Text = e.Title + ": " + firstLineOf(e.Answer)
	}
	n.sender.Send(e)
}

// firstLineOf is the first line of s, cut at 200 bytes.
func firstLineOf(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return textcut.Cut(s, 200)
}

// close gives queued alerts a few seconds to go out.
func (n *notifier) close() {
	if n == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	n.sender.Close(ctx)
}

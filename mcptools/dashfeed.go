package mcptools

import (
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/dashboard"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/resulttext"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// The calls that follow a query's run are its views (sessions.Run.Attach):
// the query call itself, claude_chat_wait, the retried call of an
// input-required result. The dashboard, when one runs, watches every run
// besides (sessions.Run.Watch): its feed of the run (a dashboard.Feed)
// receives the turn's events whether a call waits on it or not, and never
// holds back the drop of a result nobody collects.

// attachDashboard makes d, if any, the dashboard that watches every run
// and gives it what it needs of the server (dashboard.Server).
func (h *handlers) attachDashboard(d *dashboard.Dashboard) {
	if h.dash = d; d != nil {
		d.Attach(dashboard.Server{RunningTask: h.tasks.runningTask, Question: resulttext.Permission, Answer: pageAnswer})
	}
}

// watch makes the dashboard's feed of s, when a dashboard runs, a watcher
// of the run about to start with o; started binds the feed to the run, or
// abandons it when the run did not start (err).
func (h *handlers) watch(s *sessions.Session, o *sessions.QueryOptions) (started func(*sessions.Run, error)) {
	if h.dash == nil {
		return func(*sessions.Run, error) {}
	}
	f := h.dash.Watch(s)
	o.Watchers = append(o.Watchers, f)
	return func(r *sessions.Run, err error) {
		if err != nil {
			f.Abandon()
			return
		}
		f.Bind(r)
	}
}

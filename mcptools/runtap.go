package mcptools

import (
	"context"
	"sync"

	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/dashboard"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/resulttext"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/run"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

// A sessions.Run has one listener at a time (Run.Attach), and its views
// take turns: the query call, claude_chat_wait, the retried call of an
// input-required result. The dashboard (package dashboard), when one
// runs, watches every run besides, whether a call waits on it or not. So
// the run's listener is a tap: it hands each event to the current view,
// if any, and to the dashboard's feed of the run (a dashboard.Feed; nil,
// and nothing more to do, without a dashboard). Views attach to and detach
// from the tap (handlers.attach, detach).
//
// The run drops a result nobody collects only when it has no listener as
// it finishes (Run.finished), so the tap leaves the run as the view would
// have: a tap without a view detaches itself at the turn's end, and at
// once when its view leaves before the turn started (the dashboard then
// misses that run until a view attaches again). Without a dashboard a tap
// without a view never stays. A task holds its run's tap (it collects the
// result itself), so the dashboard sees the whole of a task's turn.
type tap struct {
	feed *dashboard.Feed // the dashboard's record of the run; nil without a dashboard

	mu       sync.Mutex
	run      *sessions.Run // nil until Start returned it
	view     run.Listener
	attached bool // the tap is the run's listener
	held     bool // a task owns the run: stay attached
	started  bool // the turn has started
	done     bool // the turn has ended
}

// attachDashboard makes d, if any, the dashboard that watches every run
// and gives it what it needs of the server (dashboard.Core).
func (h *handlers) attachDashboard(d *dashboard.Dashboard) {
	if h.dash = d; d != nil {
		d.Attach(dashboard.Core{RunningTask: h.tasks.runningTask, Question: resulttext.Permission, Answer: pageAnswer, Launch: h.pageLaunch})
	}
}

// pageLaunch starts a query a dashboard page sent (dashboard.Core.Launch):
// its tap, without a view, hands the events to the dashboard's feed, and a
// view that comes later (claude_chat_wait) attaches to it as to any run's.
func (h *handlers) pageLaunch(ctx context.Context, s *sessions.Session, prompt string) (*sessions.Run, error) {
	t := h.newTap(s, nil)
	r, err := s.StartRun(ctx, prompt, dashboard.LaunchOptions(t))
	if err != nil {
		if t.feed != nil {
			t.feed.Abandon()
		}
		return nil, err
	}
	h.bind(t, r)
	return r, nil
}

// newTap is the tap of a run about to start in s, with view as its first
// view; it is the run's listener from the start (RunOptions.Listener).
func (h *handlers) newTap(s *sessions.Session, view run.Listener) *tap {
	t := &tap{view: view, attached: true}
	if h.dash != nil {
		t.feed = h.dash.Watch(s)
	}
	return t
}

// bind records the run the tap listens to, once Start returned it.
func (h *handlers) bind(t *tap, r *sessions.Run) {
	t.mu.Lock()
	t.run = r
	t.mu.Unlock()
	h.tapsMu.Lock()
	if h.taps == nil {
		h.taps = map[*sessions.Run]*tap{}
	}
	for run := range h.taps {
		if isClosed(run.Done()) { // runs that ended without a view detaching
			delete(h.taps, run)
		}
	}
	h.taps[r] = t
	h.tapsMu.Unlock()
	if t.feed != nil {
		t.feed.Bind(r)
	}
}

// tapOf returns the tap of r, a new one (not attached) when r has none any
// more.
func (h *handlers) tapOf(r *sessions.Run) *tap {
	h.tapsMu.Lock()
	defer h.tapsMu.Unlock()
	if t := h.taps[r]; t != nil {
		return t
	}
	t := &tap{run: r, started: true}
	if h.taps == nil {
		h.taps = map[*sessions.Run]*tap{}
	}
	if !isClosed(r.Done()) {
		h.taps[r] = t
	}
	return t
}

// forget drops the tap of r once r has ended.
func (h *handlers) forget(r *sessions.Run) {
	h.tapsMu.Lock()
	delete(h.taps, r)
	h.tapsMu.Unlock()
}

// attach makes v the view of r (replacing any other) and returns how far
// the run has come (see sessions.Run.Attach).
func (h *handlers) attach(r *sessions.Run, v run.Listener) run.Progress {
	t := h.tapOf(r)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.view = v
	if !t.attached {
		t.attached = true
		return r.Attach(t)
	}
	return r.Progress()
}

// detach stops events to v, if it is still r's view.
func (h *handlers) detach(r *sessions.Run, v run.Listener) {
	t := h.tapOf(r)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.view != v {
		return
	}
	t.view = nil
	if t.held || (t.feed != nil && t.started && !t.done && t.attached) {
		return // the dashboard watches the rest of the turn
	}
	if t.attached {
		r.Detach(t)
		t.attached = false
	}
	if isClosed(r.Done()) {
		h.forget(r)
	}
}

// hold keeps the tap of r attached for good: a task collects r's result.
func (h *handlers) hold(r *sessions.Run) {
	t := h.tapOf(r)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.feed == nil {
		return // nobody but a view wants the events
	}
	t.held = true
	if !t.attached {
		t.attached = true
		r.Attach(t)
	}
}

// OnEvent implements [run.Listener].
func (t *tap) OnEvent(e turn.Event) {
	t.mu.Lock()
	switch e.Kind {
	case turn.EventTurnStarted:
		t.started = true
	case turn.EventDone:
		t.done = true
		if t.view == nil && !t.held && t.attached && t.run != nil {
			// Nobody waits: the run may drop an uncollected result, as it
			// does without a listener.
			t.run.Detach(t)
			t.attached = false
		}
	}
	v := t.view
	t.mu.Unlock()
	if t.feed != nil {
		t.feed.OnEvent(e)
	}
	if v != nil {
		v.OnEvent(e)
	}
}

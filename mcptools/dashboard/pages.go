package dashboard

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/jsonstr"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/textcut"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/history"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/worktree"
)

// The pages: the list of sessions (with the spend chart and the sessions
// of other instances), a session's page (its running turn, live, its
// pending questions and its history), and their event stream.

// pageBase is what every page has.
type pageBase struct {
	Title string
	CSRF  string // the page's token for actions
	User  string // "" on stdio
	HTTP  bool   // signed in with a token (a sign-out button)
	Admin bool
}

type errorPage struct {
	pageBase
	Message string
}

type signinPage struct {
	pageBase
	Failed     bool
	RetryAfter int // seconds, when the throttle held the attempt back
}

// sessionRow is a session in the list.
type sessionRow struct {
	ID, Name, State, Model, Cwd, Owner, Task string
	Worktree                                 *worktree.Info
	Running                                  bool
	Since                                    int64 // the running turn's start, Unix ms
	Elapsed                                  string
	Turns, Tools                             int
	LastStep                                 string
	Cost, Budget                             float64
	Questions                                int
	Queries                                  int
	Limited, LimitNote                       string // the usage limit: when it resets, the CLI's warning
}

// otherRow is a stored session this instance does not hold: dormant, or
// another instance's (stored.go).
type otherRow struct {
	ID, Name, State, Model, Cwd, Owner, LastUsed string
	Cost                                         float64
	Queries                                      int
}

type listPage struct {
	pageBase
	Rows    []sessionRow // those waiting for a permission answer first
	Waiting int          // how many wait
	Others  []otherRow   // a page of the stored sessions
	Query   listQuery    // the page's cursor and filters
	Next    string       // the next page's cursor; "" at the end
	Error   string       // why the stored sessions were not read
	Charts  []spendChart
}

type sessionPage struct {
	pageBase
	Row       sessionRow
	Questions []shownQuestion
	History   []history.Entry
	Older     int // the cursor of the older page; -1 for none
	Newer     int
	Total     int
	From      int // the index of History[0]
	ReadOnly  bool
	CanAnswer bool
	Prompts   int  // the prompts before History[0]
	CanRewind bool // the owner's page, the server keeps file checkpoints
}

func (d *Dashboard) base(si *signin, title string) pageBase {
	return pageBase{Title: title, CSRF: d.pageToken(si), User: si.user, HTTP: d.overHTTP, Admin: d.admin(si.user)}
}

// row describes s for si.
func (d *Dashboard) row(ctx context.Context, s *sessions.Session, withWorktree bool) sessionRow {
	i := s.Info()
	row := sessionRow{ID: i.SessionID, Name: i.Name, State: string(i.State), Model: i.Model, Cwd: i.Cwd, Owner: i.Owner,
		Cost: i.CostUSD, Budget: s.Budget(), Queries: i.Queries, LimitNote: i.LimitNote}
	if !i.LimitedUntil.IsZero() {
		row.Limited = turn.Limit{Until: i.LimitedUntil, Kind: i.LimitKind}.Describe(time.Now())
	}
	if d.core.RunningTask != nil {
		row.Task = d.core.RunningTask(i.SessionID)
	}
	if withWorktree && i.Worktree != nil {
		wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		row.Worktree = s.WorktreeInfo(wctx)
		cancel()
	}
	if f := d.feedOf(i.SessionID); f != nil {
		// Running from the feed's start (before Start has returned the run)
		// to the turn's end.
		if r, done := f.state(); !done && (r == nil || !ended(r)) {
			row.Running, row.Since = true, f.start.UnixMilli()
			row.Elapsed = time.Since(f.start).Round(time.Second).String()
			if r != nil {
				p := r.Progress()
				row.Turns, row.Tools, row.LastStep = p.Turns, p.ToolsUsed, textcut.Cut(p.LastStep, 200)
			}
		}
	}
	row.Questions = len(d.questions(i.SessionID))
	return row
}

// mine returns the open sessions si may see, oldest first.
func (d *Dashboard) mine(si *signin) []*sessions.Session {
	var out []*sessions.Session
	for _, s := range d.mgr.List() {
		if d.visible(si, s.Info().Owner) {
			out = append(out, s)
		}
	}
	return out
}

func (d *Dashboard) serveList(w http.ResponseWriter, r *http.Request, si *signin, rowsOnly bool) {
	page := listPage{pageBase: d.base(si, "Sessions"), Query: listQueryOf(r)}
	open := map[string]bool{}
	for _, s := range d.mine(si) {
		page.Rows = append(page.Rows, d.row(r.Context(), s, true))
		open[s.ID] = true
	}
	// The sessions waiting for a permission answer first, and counted in
	// the title.
	slices.SortStableFunc(page.Rows, func(a, b sessionRow) int { return cmp.Compare(waits(b), waits(a)) })
	for _, row := range page.Rows {
		page.Waiting += waits(row)
	}
	if page.Waiting > 0 {
		page.Title = "(" + strconv.Itoa(page.Waiting) + ") " + page.Title
	}
	d.stored(r.Context(), si, &page, open)
	code := http.StatusOK
	if page.Error != "" {
		code = http.StatusBadRequest
	}
	if rowsOnly {
		d.render(w, code, page.writeRows)
		return
	}
	page.Charts = d.spend.Charts(func(owner string) bool { return d.visible(si, owner) }, d.overHTTP)
	d.render(w, code, page.write)
}

// waits is 1 for a row of a session waiting for a permission answer.
func waits(r sessionRow) int {
	if r.Questions > 0 {
		return 1
	}
	return 0
}

// waitingKey names the permission questions open in the sessions si
// sees: it changes when one is asked or answered.
func (d *Dashboard) waitingKey(si *signin) string {
	var b strings.Builder
	for _, s := range d.mine(si) {
		for _, q := range d.questions(s.ID) {
			b.WriteString(q.ID + ",")
		}
	}
	return b.String()
}

// anyRunning reports whether a run the dashboard watches has not ended.
func (d *Dashboard) anyRunning() bool {
	d.mu.Lock()
	feeds := make([]*Feed, 0, len(d.feeds))
	for _, f := range d.feeds {
		feeds = append(feeds, f)
	}
	d.mu.Unlock()
	for _, f := range feeds {
		if _, done := f.state(); !done {
			return true
		}
	}
	return false
}

// historyPage is how many entries of the history a page shows.
const historyPage = 50

// serveSession serves a session's page, or a part of it: "panel" or
// "history" (the fragments the script fetches).
func (d *Dashboard) serveSession(w http.ResponseWriter, r *http.Request, si *signin, id string, part string) {
	s := d.session(si, id)
	if s == nil {
		// Another user's session is not found, like one that never was.
		d.render(w, http.StatusNotFound, errorPage{pageBase: d.base(si, "Not found"),
			Message: fmt.Sprintf("No open session %q of yours.", id)}.write)
		return
	}
	page := sessionPage{pageBase: d.base(si, "Session "+id), Row: d.row(r.Context(), s, true)}
	page.CanAnswer = page.Row.Owner == si.user
	page.CanRewind = page.CanAnswer && d.mgr.Config().FileCheckpoints
	page.Questions = d.questions(id)
	if page.Row.Name != "" {
		page.Title = page.Row.Name
	}
	if part == "panel" {
		d.render(w, http.StatusOK, page.writePanel)
		return
	}
	all := s.History()
	page.Total = len(all)
	end := len(all)
	if c := r.URL.Query().Get("before"); c != "" {
		if n, err := strconv.Atoi(c); err == nil && n >= 0 && n <= len(all) {
			end = n
		}
	}
	start := max(end-historyPage, 0)
	page.History, page.From = all[start:end], start
	for _, e := range all[:start] {
		if e.Kind == "prompt" {
			page.Prompts++
		}
	}
	page.Older, page.Newer = -1, -1
	if start > 0 {
		page.Older = start
	}
	if end < len(all) {
		page.Newer = min(end+historyPage, len(all))
	}
	for i := range page.History {
		if e := &page.History[i]; len(e.Text) > 20000 {
			e.Text = textcut.Cut(e.Text, 20000)
		}
	}
	if part == "history" {
		d.render(w, http.StatusOK, page.writeHistory)
		return
	}
	d.render(w, http.StatusOK, page.write)
}

// serveEvents is a page's event stream (server-sent events). The list's
// says "changed" (at most twice a second) and the page fetches its rows
// again. A session page's says "turn" when a run starts (the page clears
// its live view), "prompt" with what the run was asked (or the steered
// messages a follow-up answers), then each "step" of it and "partial" with
// the text being written as it grows (reset when a whole text replaced
// it); "resync" when the page fell
// behind the window (it clears, and the window follows); "panel" when the
// session's state or questions changed (the page fetches its panel and
// its history).
func (d *Dashboard) serveEvents(w http.ResponseWriter, r *http.Request, si *signin) {
	session := r.URL.Query().Get("session")
	var s *sessions.Session
	if session != "" {
		if s = d.session(si, session); s == nil {
			http.NotFound(w, r)
			return
		}
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	sub := d.subscribe(si, session, cancel)
	defer d.unsubscribe(sub)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	e := &sseWriter{w: w, rc: http.NewResponseController(w), timeout: d.writeTimeout}
	e.buf.WriteString("retry: 2000\n\n")
	heartbeat := time.NewTicker(15 * time.Second)
	defer heartbeat.Stop()
	// Questions queued in a run appear without an event of their own: while
	// a turn runs, the page's stream looks for them twice a second (and for
	// the session's state, which changes after the turn's last step).
	poll := time.NewTicker(500 * time.Millisecond)
	defer poll.Stop()
	var page sessionCursor
	list := listCursor{first: true}
	defer list.stop()
	if s != nil {
		// The CLI's text deltas come while a page follows (and a few
		// seconds after it left, so that a reload misses none).
		stop := s.FollowText()
		defer func() { time.AfterFunc(followGrace, stop) }()
	}
	for changed := true; ; {
		live := false
		if session != "" {
			live = d.sessionUpdate(e, &page, session, s)
		} else {
			if changed {
				list.update(e)
			}
			live = d.anyRunning()
		}
		if err := e.flush(); err != nil {
			return // the browser stopped reading: it reconnects and resyncs
		}
		var tick <-chan time.Time
		if live {
			tick = poll.C
		}
		changed = false
		select {
		case <-ctx.Done():
			return
		case <-sub.wake:
			changed = true
		case <-tick:
			// A question queued in a run pokes nobody: the list looks.
			changed = session == "" && list.waitingChanged(d.waitingKey(si))
		case <-list.due:
			list.due = nil
			list.changed(e)
		case <-heartbeat.C:
			if !d.valid(si) {
				return
			}
			e.buf.WriteString(": keep-alive\n\n")
			if session == "" && list.due == nil {
				list.changed(e) // states change without a turn too (dormancy)
			}
		}
	}
}

// followGrace is how long a session page's stream keeps following the
// text being written after the page left.
const followGrace = 5 * time.Second

// sseWriter writes server-sent events, buffered until flush.
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	buf     bytes.Buffer
	timeout time.Duration
}

// flush writes what is buffered, within the write timeout.
func (e *sseWriter) flush() error {
	if e.buf.Len() == 0 {
		return nil
	}
	_ = e.rc.SetWriteDeadline(time.Now().Add(e.timeout))
	_, err := e.w.Write(e.buf.Bytes())
	e.buf.Reset()
	if err == nil {
		err = e.rc.Flush()
	}
	return err
}

// event buffers one event (id 0: none).
func (e *sseWriter) event(name string, id uint64, data any) {
	raw, _ := json.Marshal(data)
	if id > 0 {
		fmt.Fprintf(&e.buf, "id: %d\n", id)
	}
	fmt.Fprintf(&e.buf, "event: %s\ndata: %s\n\n", name, raw)
}

// partial buffers a "partial" event: {"reset":…,"text":…}, as event
// would write it, the text (up to the feed's MiB) quoted by jsonstr in a
// pass, a fraction of json.Marshal's time.
func (e *sseWriter) partial(text string, reset bool) {
	e.buf.WriteString("event: partial\ndata: {\"reset\":")
	e.buf.WriteString(strconv.FormatBool(reset))
	e.buf.WriteString(`,"text":`)
	e.buf.Write(jsonstr.AppendQuote(e.buf.AvailableBuffer(), text))
	e.buf.WriteString("}\n\n")
}

// sessionCursor is how far a session page's stream has got.
type sessionCursor struct {
	cur      *Feed
	next     uint64
	panel    string
	prompted bool   // the turn's prompt was sent
	pgen     uint64 // the generation of the text being written the page has
	poff     int    // and how much of it
}

// sessionUpdate buffers what is new for a session page: a new turn, its
// prompt, its steps since the last (a resync when the page fell behind the
// feed's window), the text being written, a changed panel. It reports
// whether a turn runs.
func (d *Dashboard) sessionUpdate(e *sseWriter, c *sessionCursor, session string, s *sessions.Session) bool {
	live := false
	if f := d.feedOf(session); f != c.cur {
		*c = sessionCursor{cur: f, panel: c.panel}
		if f != nil {
			run, done := f.state()
			e.event("turn", 0, map[string]any{"id": f.id, "started": f.start.UnixMilli(), "done": done, "bound": run != nil})
		}
	}
	if c.cur != nil {
		run, _ := c.cur.state()
		if !c.prompted && run != nil {
			prompt, steered := run.Prompt()
			e.event("prompt", 0, map[string]any{"text": textcut.Cut(prompt, 20000), "steered": steered})
			c.prompted = true
		}
		steps, lost := c.cur.since(c.next)
		if lost {
			e.event("resync", 0, map[string]any{"id": c.cur.id})
			steps, _ = c.cur.since(0)
		}
		for _, st := range steps {
			e.event("step", st.Seq, st)
			c.next = st.Seq + 1
		}
		gen, text, reset := c.cur.partialSince(c.pgen, c.poff)
		if reset || text != "" {
			e.partial(text, reset)
			if reset {
				c.poff = 0
			}
			c.pgen, c.poff = gen, c.poff+len(text)
		}
		_, done := c.cur.state()
		live = !done
	}
	if p := d.panelKey(s); p != c.panel {
		if c.panel != "" {
			e.event("panel", 0, map[string]any{})
		}
		c.panel = p
	}
	// After the turn's last step the session is running still until the
	// turn is recorded (its history, its state): the panel's key changes
	// then.
	return live || s.Info().State == state.Running
}

// listCursor paces the list page's "changed" events: at most one each
// 500 ms.
type listCursor struct {
	first   bool
	waiting string // the questions waiting in the list's sessions
	last    time.Time
	timer   *time.Timer
	due     <-chan time.Time
}

// update buffers "changed", or arms the timer that will.
func (l *listCursor) update(e *sseWriter) {
	switch {
	case l.first:
		l.first, l.last = false, time.Now() // the page has just rendered its rows
	case l.due == nil:
		if wait := 500*time.Millisecond - time.Since(l.last); wait > 0 {
			l.timer = time.NewTimer(wait)
			l.due = l.timer.C
		} else {
			l.changed(e)
		}
	}
}

// waitingChanged records the list's key of waiting questions and reports
// whether it changed.
func (l *listCursor) waitingChanged(key string) bool {
	if key == l.waiting {
		return false
	}
	l.waiting = key
	return true
}

func (l *listCursor) changed(e *sseWriter) {
	e.event("changed", 0, map[string]any{})
	l.last = time.Now()
}

func (l *listCursor) stop() {
	if l.timer != nil {
		l.timer.Stop()
	}
}

// panelKey sums up what a session page's panel shows that changes: the
// state, the counts, the questions.
func (d *Dashboard) panelKey(s *sessions.Session) string {
	i := s.Info()
	var b strings.Builder
	running := false
	if f := d.feedOf(s.ID); f != nil {
		r, done := f.state()
		running = !done && r != nil
	}
	fmt.Fprintf(&b, "%s|%d|%g|%s|%v|%s|%s|", i.State, i.Queries, i.CostUSD, i.Model, running, i.LimitedUntil.UTC().Format(time.RFC3339), i.LimitNote)
	for _, q := range d.questions(s.ID) {
		b.WriteString(q.ID + ",")
	}
	return b.String()
}

// ended reports whether r has ended.
func ended(r *sessions.Run) bool {
	select {
	case <-r.Done():
		return true
	default:
		return false
	}
}

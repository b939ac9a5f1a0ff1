package dashboard

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/textcut"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

// A run's feed is the dashboard's record of its turn: the steps so far, in
// a bounded window, each numbered. Adding a step never waits for a page: it
// appends under a short lock and wakes the pages that watch (a token in a
// channel of one, dropped when one is there). Each page's event stream
// reads the steps after the last one it sent; a page that fell so far
// behind that the window moved past it is told to resync and gets the
// window anew. So a slow or stalled browser costs the query nothing.

// uiStep is one step of a turn as a page shows it (JSON in the event
// stream; the script renders every field as text).
type uiStep struct {
	Seq     uint64 `json:"seq"`
	Kind    string `json:"kind"`
	Text    string `json:"text,omitempty"`
	Tool    string `json:"tool,omitempty"`
	ToolID  string `json:"toolId,omitempty"`
	IsError bool   `json:"isError,omitempty"`
	Ms      int64  `json:"ms"` // since the run started
	Turns   int    `json:"turns"`
	Tools   int    `json:"tools"`
}

// stepTextBytes bounds the text of one step (a tool's output, say).
const stepTextBytes = 8 << 10

// Feed is the dashboard's record of one run (see Watch).
type Feed struct {
	d       *Dashboard
	session *sessions.Session
	owner   string
	id      string // the run's id once bound (a placeholder before)
	start   time.Time
	prev    *Feed // the session's feed before, back if this run does not start

	mu    sync.Mutex
	run   *sessions.Run
	steps []uiStep
	first uint64 // seq of steps[0]
	next  uint64 // seq of the next step; steps are numbered from 1
	bytes int
	done  bool
	// The text being written (partial messages): the deltas since the
	// last whole text, bounded by maxPartialBytes, kept as one text rather
	// than a step per delta (a minute of deltas would flood the window).
	// partialGen counts its resets (a whole text replaced it).
	partial    strings.Builder
	partialGen uint64
}

// maxPartialBytes bounds the text being written that a feed keeps (its
// whole text, when it comes, replaces it).
const maxPartialBytes = 1 << 20

// Watch starts the feed of a run about to start in s; it is the
// session's current feed from now on. The run's listener hands the feed
// the run once it started (Bind) and each of its events (OnEvent), or
// drops it when the run did not start (Abandon).
func (d *Dashboard) Watch(s *sessions.Session) *Feed {
	f := &Feed{d: d, session: s, owner: s.Info().Owner, id: uuid.NewString(), start: time.Now(), first: 1, next: 1}
	d.mu.Lock()
	f.prev = d.feeds[s.ID] // f is not shared yet
	d.feeds[s.ID] = f
	feeds := make([]*Feed, 0, len(d.feeds))
	for _, other := range d.feeds {
		feeds = append(feeds, other)
	}
	d.mu.Unlock()
	// The feeds of closed sessions go (looked at without d.mu: Info
	// takes the session's lock).
	for _, other := range feeds {
		if other.session.Info().State == state.Closed {
			other.forget()
		}
	}
	d.poke(s.ID, f.owner)
	return f
}

// Bind records the run, once it started.
func (f *Feed) Bind(r *sessions.Run) {
	f.mu.Lock()
	f.run = r
	f.prev = nil // its run started: the feed before is gone for good
	f.mu.Unlock()
}

// Abandon forgets a feed whose run did not start (say, a second query
// refused while one runs): the session's feed before is its feed again.
func (f *Feed) Abandon() {
	f.mu.Lock()
	prev := f.prev
	f.prev = nil
	f.mu.Unlock()
	if prev != nil && f.session.Info().State == state.Closed {
		prev = nil
	}
	f.d.mu.Lock()
	if f.d.feeds[f.session.ID] == f {
		delete(f.d.feeds, f.session.ID)
		if prev != nil {
			f.d.feeds[f.session.ID] = prev
		}
	}
	f.d.mu.Unlock()
	f.d.poke(f.session.ID, f.owner)
}

// forget drops the feed of a closed session.
func (f *Feed) forget() {
	f.d.mu.Lock()
	if f.d.feeds[f.session.ID] == f {
		delete(f.d.feeds, f.session.ID)
	}
	f.d.mu.Unlock()
}

// feedOf is the session's current feed (its latest run), or nil.
func (d *Dashboard) feedOf(sessionID string) *Feed {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.feeds[sessionID]
}

// OnEvent records an event of the turn and wakes the pages that watch it.
func (f *Feed) OnEvent(e turn.Event) {
	switch e.Kind {
	case turn.EventHeartbeat:
		return
	case turn.EventTextDelta:
		f.mu.Lock()
		if f.partial.Len()+len(e.Text) <= maxPartialBytes {
			f.partial.WriteString(e.Text)
		}
		f.mu.Unlock()
		f.d.poke(f.session.ID, f.owner)
		return
	case turn.EventTurnStarted, turn.EventDone:
		info := f.session.Info() // the cost before and after the turn
		f.d.spend.Add(spendSample{T: time.Now(), Session: f.session.ID, Name: info.Name, Owner: info.Owner, Cost: info.CostUSD})
	}
	text := e.Text
	if e.Kind == turn.EventDone && e.Text == "" {
		text = "done"
	}
	st := uiStep{Kind: string(e.Kind), Text: textcut.Cut(text, stepTextBytes), Tool: e.Tool, ToolID: e.ToolID, IsError: e.IsError,
		Turns: e.Turns, Tools: e.ToolsUsed, Ms: time.Since(f.start).Milliseconds()}
	f.addStep(st)
	f.d.poke(f.session.ID, f.owner)
}

// addStep numbers st and appends it to the window, dropping the oldest
// steps beyond its bounds.
func (f *Feed) addStep(st uiStep) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st.Seq = f.next
	f.next++
	f.steps = append(f.steps, st)
	// The whole text replaces its deltas; once the turn ended nothing is
	// being written: a page opened after it must not show deltas as live
	// (the open pages cleared theirs at the turn's end).
	if (st.Kind == string(turn.EventText) || st.Kind == string(turn.EventDone)) && f.partial.Len() > 0 {
		f.partial.Reset()
		f.partialGen++
	}
	f.bytes += len(st.Text) + 64
	for len(f.steps) > 1 && (len(f.steps) > f.d.maxSteps || f.bytes > f.d.maxStepBytes) {
		f.bytes -= len(f.steps[0].Text) + 64
		f.steps[0] = uiStep{}
		f.steps = f.steps[1:]
		f.first++
	}
	if st.Kind == string(turn.EventDone) {
		f.done = true
	}
}

// since returns the steps from seq on; lost is true when some of those
// are no longer in the window (the reader must resync).
func (f *Feed) since(seq uint64) (steps []uiStep, lost bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if seq < f.first {
		lost = seq > 0
		seq = f.first
	}
	if seq >= f.next {
		return nil, lost
	}
	return append([]uiStep(nil), f.steps[seq-f.first:]...), lost
}

// partialSince returns the text being written as a reader that has seen
// its first off bytes of generation gen should get it: the bytes after
// off, or, when it was reset since (a whole text replaced it), the whole
// of the new one with reset set.
func (f *Feed) partialSince(gen uint64, off int) (newGen uint64, text string, reset bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cur := f.partial.String()
	if gen != f.partialGen || off > len(cur) {
		return f.partialGen, cur, true
	}
	return gen, cur[off:], false
}

// state is whether the feed's turn has ended, and its run (nil until
// bound).
func (f *Feed) state() (run *sessions.Run, done bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.run, f.done
}

// subscriber is a page's event stream: the list (session "") or one
// session's page.
type subscriber struct {
	user    string
	admin   bool
	session string
	wake    chan struct{} // a token when something changed
	cancel  context.CancelFunc
}

func (d *Dashboard) subscribe(si *signin, session string, cancel context.CancelFunc) *subscriber {
	sub := &subscriber{user: si.user, admin: d.admin(si.user), session: session, wake: make(chan struct{}, 1), cancel: cancel}
	d.mu.Lock()
	d.subs[sub] = struct{}{}
	d.mu.Unlock()
	return sub
}

func (d *Dashboard) unsubscribe(sub *subscriber) {
	d.mu.Lock()
	delete(d.subs, sub)
	d.mu.Unlock()
}

// poke wakes the pages that show session id of owner: its own page and
// the lists that show owner's sessions (the owner's and the admins'); id
// "" wakes only those lists. Another user's list is not woken: when a
// session changes is not theirs to know.
func (d *Dashboard) poke(id, owner string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for sub := range d.subs {
		list := sub.session == "" && (sub.user == owner || sub.admin)
		if list || id != "" && sub.session == id {
			select {
			case sub.wake <- struct{}{}:
			default:
			}
		}
	}
}

// watched reports whether a page of the one who may answer a question of
// session id is open: its owner's (an admin may not answer for them, see
// serveAction), the list or the session's own page.
func (d *Dashboard) watched(id, owner string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for sub := range d.subs {
		if sub.user == owner && (sub.session == "" || sub.session == id) {
			return true
		}
	}
	return false
}

// pendingQuestion is a permission question the dashboard may answer: one
// of a run that asks its client by elicitation (whoever answers first
// wins), or of a client that cannot be asked while a page is open.
type pendingQuestion struct {
	id      string
	session string
	owner   string
	req     *turn.PermissionRequest
	asked   time.Time
	answer  chan *claudeagent.PermissionResult // the page's answer, once it won
	won     atomic.Bool                        // an answer was taken: the first wins
}

// errNoPage: the client cannot be asked and no dashboard page of the
// session's owner is open.
var errNoPage = errors.New("its MCP client did not declare elicitation and no dashboard page of the session's owner was open")

// Asker is the AskPermission of a run in s: it asks the client (elicit,
// when it can be asked) and offers the question on the dashboard; the
// first answer wins, the other side's question is withdrawn. A client that
// cannot be asked leaves the question to a dashboard page of the one who
// may answer it, the session's owner, if one is open; else the server's
// policy answers at once (another user's page, an admin's too, does not
// hold the question: they could not answer it).
func (d *Dashboard) Asker(s *sessions.Session, elicit func(context.Context, *turn.PermissionRequest) (*claudeagent.PermissionResult, error)) func(context.Context, *turn.PermissionRequest) (*claudeagent.PermissionResult, error) {
	owner := s.Info().Owner
	return func(ctx context.Context, pr *turn.PermissionRequest) (*claudeagent.PermissionResult, error) {
		if elicit == nil && !d.watched(pr.SessionID, owner) {
			return nil, errNoPage
		}
		q := &pendingQuestion{id: "permission-" + uuid.NewString(), session: pr.SessionID, owner: owner, req: pr, asked: time.Now(),
			answer: make(chan *claudeagent.PermissionResult, 1)}
		d.mu.Lock()
		d.pending[q.id] = q
		d.mu.Unlock()
		d.poke(pr.SessionID, owner)
		defer func() {
			d.mu.Lock()
			delete(d.pending, q.id)
			d.mu.Unlock()
			d.poke(pr.SessionID, owner)
		}()
		type result struct {
			res *claudeagent.PermissionResult
			err error
		}
		var client chan result
		if elicit != nil {
			ectx, cancel := context.WithCancel(ctx)
			defer cancel() // withdraws the client's question when the page answered
			client = make(chan result, 1)
			go func() {
				res, err := elicit(ectx, pr)
				client <- result{res, err}
			}()
		}
		select {
		case res := <-q.answer:
			return res, nil
		case r := <-client:
			if q.won.CompareAndSwap(false, true) {
				return r.res, r.err
			}
		case <-ctx.Done():
			if q.won.CompareAndSwap(false, true) {
				return nil, ctx.Err()
			}
		}
		return <-q.answer, nil // the page won the race: its answer is on the way
	}
}

// questions returns the permission questions open in session id: the
// dashboard's own and those queued in its run (asked of a client of
// protocol 2026-07-28, or a task).
func (d *Dashboard) questions(id string) []shownQuestion {
	var out []shownQuestion
	d.mu.Lock()
	for _, q := range d.pending {
		if q.session == id {
			out = append(out, shownQuestion{ID: q.id, Message: d.question(q.req), Tool: q.req.ToolName, Asked: modelQuestions(q.req), asked: q.asked})
		}
	}
	d.mu.Unlock()
	if f := d.feedOf(id); f != nil {
		if r, _ := f.state(); r != nil {
			for _, q := range r.Questions() {
				out = append(out, shownQuestion{ID: q.ID, Message: d.question(q.PermissionRequest), Tool: q.ToolName, Asked: modelQuestions(q.PermissionRequest)})
			}
		}
	}
	return out
}

// shownQuestion is a question as a page shows it: a permission, or the
// model's clarifying questions (Asked).
type shownQuestion struct {
	ID, Message, Tool string
	Asked             []claudeagent.Question
	asked             time.Time
}

// answerQuestion delivers a page's answer to question qid of session id,
// made by reply from the question; false when it is no longer open
// (answered elsewhere, timed out). An error of reply (an answer that does
// not fit the question) leaves the question open.
func (d *Dashboard) answerQuestion(id, qid string, reply func(*turn.PermissionRequest) (*claudeagent.PermissionResult, error)) (bool, error) {
	d.mu.Lock()
	q := d.pending[qid]
	d.mu.Unlock()
	if q != nil && q.session == id {
		res, err := reply(q.req)
		if err != nil {
			return false, err
		}
		d.mu.Lock()
		delete(d.pending, qid)
		d.mu.Unlock()
		if !q.won.CompareAndSwap(false, true) {
			return false, nil // the client answered first
		}
		q.answer <- res
		return true, nil
	}
	f := d.feedOf(id)
	if f == nil {
		return false, nil
	}
	r, _ := f.state()
	if r == nil {
		return false, nil
	}
	for _, rq := range r.Questions() {
		if rq.ID == qid {
			res, err := reply(rq.PermissionRequest)
			if err != nil {
				return false, err
			}
			return r.Answer(qid, res), nil
		}
	}
	return false, nil
}

// question says what pr asks (Server.Question), or names its tool.
func (d *Dashboard) question(pr *turn.PermissionRequest) string {
	if d.core.Question == nil {
		return "Claude Code wants to use " + pr.ToolName
	}
	return d.core.Question(pr)
}

// answer maps a person's answer to the CLI's (Server.Answer).
func (d *Dashboard) answer(pr *turn.PermissionRequest, decision, reason string) (*claudeagent.PermissionResult, error) {
	if d.core.Answer == nil {
		return nil, errors.New("this dashboard cannot answer permission questions: it is not attached to a server")
	}
	return d.core.Answer(pr, decision, reason)
}

// SessionsChanged wakes the lists that show owner's sessions (the owner's
// and the admins'): a tool call may have created, closed or changed one.
func (d *Dashboard) SessionsChanged(owner string) { d.poke("", owner) }

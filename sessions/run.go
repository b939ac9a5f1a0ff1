package sessions

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/textcut"
)

// RunOptions tune a run.
type RunOptions struct {
	IncludeThinking bool
	Effort          string  // this query's effort (see QueryOptions)
	Images          []Image // sent with the prompt
	OnLimit         string  // what the query does at the usage limit (see QueryOptions)
	// CloseAfter closes the session once the result is collected (or
	// dropped).
	CloseAfter bool
	// Ask forwards a permission question to the caller at once (an
	// elicitation on a client that can take one at any time). When nil and
	// QueueQuestions is set, questions wait in the run for whoever serves
	// them (see [Run.Questions]); when both are unset nobody can be asked
	// and the manager's policy answers.
	Ask            func(ctx context.Context, req *PermissionRequest) (*claudeagent.PermissionResult, error)
	QueueQuestions bool
	// Listener receives the turn's events from the first one on, until it
	// is detached or replaced (see [Run.Attach]).
	Listener Listener
	// ReturnAfter makes StartRun return the run after this long even when its
	// turn has not started yet (the process is still starting); 0 waits for
	// the start. Errors that keep the turn from starting then come as the
	// run's result.
	ReturnAfter time.Duration
}

// Listener receives a run's events, one at a time, in order.
type Listener interface {
	OnEvent(Event)
}

// Run is one query started with [Session.StartRun]. It runs on its own
// context, so it outlives the call that started it: the calls that follow
// it — the query call itself, claude_chat_wait, an MCP task — are views of
// the run. It carries the turn's events (to one listener at a time), what
// is new since the last report, the permission questions it waits on, and
// the result, which is collected exactly once.
type Run struct {
	ID      string
	session *Session
	opts    RunOptions
	start   time.Time
	cancel  context.CancelFunc
	started chan struct{} // closed when the turn has started
	onStart func()        // closes started, once
	done    chan struct{} // closed when the query has returned
	result  *TurnResult
	err     error

	mu        sync.Mutex
	listener  Listener
	activity  []string
	reported  int
	texts     []string
	turns     int // API round trips, as of the latest event
	tools     int // tool calls, likewise
	lastStep  string
	lastAt    time.Duration // when the latest event came, since start
	limited   time.Time     // while the query waits for a usage limit to reset: the reset
	limitKind string        // and which limit
	owner     string
	collected bool
	dropTimer *time.Timer
	questions []*Question
	asked     chan struct{} // a token when a question was added
}

// Question is a permission question a run waits on until it is answered
// (see [Run.Answer]), the permission timeout passes, or the run ends.
type Question struct {
	ID string
	*PermissionRequest
	answer chan *claudeagent.PermissionResult
}

// Progress is how far a run has come.
type Progress struct {
	Elapsed   time.Duration
	Turns     int           // API round trips
	ToolsUsed int           // tool calls
	LastStep  string        // what happened last, for a person
	LastAt    time.Duration // when it happened, since the start
	Text      string        // the assistant text so far
	// LimitedUntil, while the query waits for the account's usage limit to
	// reset, is the reset (zero otherwise); LimitKind which limit.
	LimitedUntil time.Time
	LimitKind    string
}

// StartRun starts a query run in the background and returns once its turn has
// started or it waits for a usage limit's reset (or after
// RunOptions.ReturnAfter), or with the error that kept it
// from starting (a busy session is refused at once). Cancelling ctx before the turn starts cancels the run;
// afterwards only [Run.Cancel] does. A temporary session whose query cannot
// start is discarded (see oneshot.go).
func (s *Session) StartRun(ctx context.Context, prompt string, o RunOptions) (*Run, error) {
	rctx, cancel := context.WithCancel(context.Background())
	r := &Run{ID: uuid.NewString(), session: s, opts: o, start: time.Now(), cancel: cancel, listener: o.Listener,
		started: make(chan struct{}), done: make(chan struct{}), asked: make(chan struct{}, 1)}
	qo := QueryOptions{IncludeThinking: o.IncludeThinking, Effort: o.Effort, Images: o.Images, OnLimit: o.OnLimit, OnEvent: r.onEvent}
	switch {
	case o.Ask != nil:
		qo.AskPermission = o.Ask
	case o.QueueQuestions:
		qo.AskPermission = r.queue
	}
	var startOnce sync.Once
	r.onStart = func() { startOnce.Do(func() { close(r.started) }) }
	go func() {
		defer cancel()
		r.result, r.err = s.Query(rctx, prompt, qo)
		close(r.done)
		r.finished()
	}()
	var early <-chan time.Time
	if o.ReturnAfter > 0 {
		t := time.NewTimer(o.ReturnAfter)
		defer t.Stop()
		early = t.C
	}
	select {
	case <-r.started:
	case <-early:
	case <-r.done:
		if r.err != nil {
			s.m.endUnstarted(s, r.err) // a one-shot's query could not start
			return nil, r.err
		}
	case <-ctx.Done():
		cancel()
		<-r.done
		s.m.endUnstarted(s, ctx.Err())
		return nil, ctx.Err()
	}
	s.mu.Lock()
	old := s.run
	s.run = r
	s.mu.Unlock()
	if old != nil {
		old.supersede()
	}
	return r, nil
}

// CurrentRun returns the session's latest run whose result was not
// collected yet (running or finished), or nil.
func (s *Session) CurrentRun() *Run {
	s.mu.Lock()
	r := s.run
	s.mu.Unlock()
	if r == nil || r.Collected() {
		return nil
	}
	return r
}

// SetOwner records who alone collects the run (say, an MCP task), so that
// other views leave it alone.
func (r *Run) SetOwner(owner string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.owner = owner
}

// Owner is what SetOwner recorded.
func (r *Run) Owner() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.owner
}

// Session is the run's session.
func (r *Run) Session() *Session { return r.session }

// Thinking reports whether the run includes thinking texts.
func (r *Run) Thinking() bool { return r.opts.IncludeThinking }

// Started is when the run started.
func (r *Run) Started() time.Time { return r.start }

// Done is closed when the query has returned.
func (r *Run) Done() <-chan struct{} { return r.done }

// Cancel interrupts the turn; the run then ends with what it produced and
// Interrupted set. The session survives.
func (r *Run) Cancel() { r.cancel() }

func (r *Run) onEvent(e Event) {
	r.mu.Lock()
	if e.Kind != EventHeartbeat && e.Kind != EventLimitWarning {
		r.limited, r.limitKind = e.Until, e.Limit // set while the query waits for a reset, cleared by what comes next
	}
	switch e.Kind {
	case EventQueued:
		r.lastStep = e.Text
	case EventTurnStarted:
		r.lastStep = "turn started"
	case EventText:
		r.texts = append(r.texts, e.Text)
		r.addStep("said: " + textcut.Cut(e.Text, 300))
	case EventToolStarted:
		r.addStep(fmt.Sprintf("tool %s started: %s", e.Tool, textcut.Cut(e.Text, 200)))
	case EventToolFinished:
		status := "finished"
		if e.IsError {
			status = "failed"
		}
		r.addStep(fmt.Sprintf("tool %s %s: %s", orUnknownTool(e.Tool), status, textcut.Cut(e.Text, 200)))
	case EventPermission:
		r.addStep("permission: " + textcut.Cut(e.Text, 300))
	case EventRetry:
		r.lastStep = textcut.Cut(e.Text, 300)
	case EventLimited, EventLimitWarning:
		r.addStep(e.Text)
	}
	r.turns, r.tools = e.Turns, e.ToolsUsed
	r.lastAt = time.Since(r.start)
	l := r.listener
	r.mu.Unlock()
	if e.Kind == EventTurnStarted || e.Kind == EventLimited {
		r.onStart() // a query waiting for a usage limit's reset has started, as far as its caller is concerned
	}
	if l != nil {
		l.OnEvent(e)
	}
}

func (r *Run) addStep(s string) {
	r.activity = append(r.activity, s)
	r.lastStep = s
}

func orUnknownTool(s string) string {
	if s == "" {
		return "(unknown)"
	}
	return s
}

// Attach makes l the run's listener: it receives the turn's events from
// now on until it is detached or another listener attaches. It returns how
// far the run has come, so that a call that attaches late starts from
// there.
func (r *Run) Attach(l Listener) Progress {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.listener = l
	return r.progressLocked()
}

// Detach stops events to l, if it is still the listener.
func (r *Run) Detach(l Listener) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.listener == l {
		r.listener = nil
	}
}

// Progress reports how far the run has come.
func (r *Run) Progress() Progress {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.progressLocked()
}

func (r *Run) progressLocked() Progress {
	return Progress{Elapsed: time.Since(r.start), Turns: r.turns, ToolsUsed: r.tools, LastStep: r.lastStep, LastAt: r.lastAt,
		Text: strings.Join(r.texts, "\n\n"), LimitedUntil: r.limited, LimitKind: r.limitKind}
}

// TakeActivity returns what happened since the last call (steps for a
// person: texts, tool calls, permission answers).
func (r *Run) TakeActivity() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := append([]string{}, r.activity[r.reported:]...)
	r.reported = len(r.activity)
	return out
}

// Collected reports whether the result was collected (or dropped).
func (r *Run) Collected() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.collected
}

// Collect returns the result of a finished run to its first caller only
// (ok false for every later one, and while the run is still going), then
// closes a temporary or closeAfter session.
func (r *Run) Collect() (res *TurnResult, err error, ok bool) {
	select {
	case <-r.done:
	default:
		return nil, nil, false
	}
	if !r.take() {
		return nil, nil, false
	}
	r.release()
	return r.result, r.err, true
}

// take marks the result collected; only the first caller gets true.
func (r *Run) take() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.collected {
		return false
	}
	r.collected = true
	if r.dropTimer != nil {
		r.dropTimer.Stop()
	}
	return true
}

// release closes the session when the run asked for that, or when it is
// a one-shot's (see oneshot.go).
func (r *Run) release() {
	s := r.session
	switch {
	case s.opts.Temporary:
		s.m.endOneShot(s)
	case r.opts.CloseAfter:
		_, _ = s.m.Close(s.ID)
	}
}

// finished schedules the drop of a result nobody is waiting for.
func (r *Run) finished() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.listener != nil || r.collected {
		return
	}
	r.dropTimer = time.AfterFunc(r.session.m.cfg.DropAfter, r.drop)
}

// drop gives up on a result nobody collected and releases the session as
// a collection would.
func (r *Run) drop() {
	if r.take() {
		r.session.log.Info("dropping an uncollected query result", "run", r.ID)
		r.release()
	}
}

// supersede drops the uncollected result of a run that a newer run of the
// same session replaced: its caller went on using the session, so neither
// closeAfter nor the drop timer applies any more.
func (r *Run) supersede() {
	if r.take() {
		r.session.log.Info("a new query replaces an uncollected result", "run", r.ID)
	}
}

// queue is the AskPermission of a run whose questions wait for a view: it
// adds the question and blocks until it is answered or ctx ends (the
// manager bounds it with the permission timeout and then applies policy).
func (r *Run) queue(ctx context.Context, pr *PermissionRequest) (*claudeagent.PermissionResult, error) {
	q := &Question{ID: "permission-" + uuid.NewString(), PermissionRequest: pr, answer: make(chan *claudeagent.PermissionResult, 1)}
	r.mu.Lock()
	r.questions = append(r.questions, q)
	r.mu.Unlock()
	defer r.forget(q.ID)
	select {
	case r.asked <- struct{}{}:
	default:
	}
	select {
	case res := <-q.answer:
		return res, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (r *Run) forget(id string) *Question {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, q := range r.questions {
		if q.ID == id {
			r.questions = append(r.questions[:i], r.questions[i+1:]...)
			return q
		}
	}
	return nil
}

// Questions returns the permission questions the run waits on, oldest
// first.
func (r *Run) Questions() []*Question {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*Question(nil), r.questions...)
}

// Asked has a token whenever a question was added.
func (r *Run) Asked() <-chan struct{} { return r.asked }

// Answer answers the question id; it reports false for a question that is
// unknown or already answered (or given up on).
func (r *Run) Answer(id string, res *claudeagent.PermissionResult) bool {
	q := r.forget(id)
	if q == nil {
		return false
	}
	q.answer <- res // buffered: the asker may have given up meanwhile
	return true
}

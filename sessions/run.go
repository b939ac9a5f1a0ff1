package sessions

// A query's run: the one record of a running query — its events, handed to
// the views that follow it (the query call itself, a wait, an MCP task) and
// the watchers beside them (the dashboard), the partial text, the activity
// since the last report, the permission questions it waits on,
// cancellation, and the result, collected exactly once (or dropped when
// nobody collects it).

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/textcut"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

// runConfig is what a run is told when it starts.
type runConfig struct {
	// Prompt is what the query sent: for a page opened in the middle of
	// the turn. Steered marks the run of a follow-up, whose prompt is the
	// messages steered into the turn before.
	Prompt  string
	Steered bool
	// Thinking is whether the run's result includes thinking texts.
	Thinking bool
	// Listener is the run's first view (see [Run.Attach]), Watchers its
	// first watchers (see [Run.Watch]): they receive the turn's events from
	// the first one on.
	Listener Listener
	Watchers []Listener
	// Cancel cancels the query's context.
	Cancel context.CancelFunc
	// DropAfter is how long a result nobody collects is kept once the
	// query has returned.
	DropAfter time.Duration
	// Release is called once, when the result is collected or dropped
	// (not when a newer run supersedes it).
	Release func()
	// Log gets the run's drops.
	Log func(msg string, args ...any)
}

// Listener receives a run's events, one at a time, in order.
type Listener interface {
	OnEvent(turn.Event)
}

// Question is a permission question a run waits on until it is answered
// (see [Run.Answer]), the permission timeout passes, or the run ends.
type Question struct {
	ID string
	*turn.PermissionRequest
	answer chan *claudeagent.PermissionResult
}

// Progress is how far a run has come.
type Progress struct {
	Elapsed   time.Duration
	Turns     int           // API round trips
	ToolsUsed int           // tool calls
	LastStep  string        // what happened last, for a person
	LastAt    time.Duration // when it happened, since the start
	// Text is the start of the assistant text so far, the message being
	// written included: its texts joined by blank lines, cut to
	// ProgressTextBytes with "…" (textcut.Cut) when longer.
	Text string
	// LimitedUntil, while the query waits for the account's usage limit to
	// reset, is the reset (zero otherwise); LimitKind which limit.
	LimitedUntil time.Time
	LimitKind    string
}

// Run is one query's record. It runs on its own context, so it outlives
// the call that started it.
type Run struct {
	ID      string
	session *Session
	cfg     runConfig
	start   time.Time
	started chan struct{} // closed when the turn has started
	onStart func()        // closes started, once
	done    chan struct{} // closed when the query has returned
	result  *turn.Result
	err     error

	mu        sync.Mutex
	views     []Listener // the calls that follow the run (Attach)
	watchers  []Listener // the rest of the turn's followers (Watch)
	activity  []string
	reported  int
	texts     []string
	partial   strings.Builder // the text being written: deltas since the last whole text, while it is within ProgressTextBytes
	turns     int             // API round trips, as of the latest event
	tools     int             // tool calls, likewise
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

// newRun returns the record of a query that starts now; its caller runs the
// query and ends the record with Finish.
func newRun(cfg runConfig) *Run {
	if cfg.Log == nil {
		cfg.Log = func(string, ...any) {}
	}
	r := &Run{ID: uuid.NewString(), cfg: cfg, start: time.Now(), watchers: cfg.Watchers,
		started: make(chan struct{}), done: make(chan struct{}), asked: make(chan struct{}, 1)}
	if cfg.Listener != nil {
		r.views = []Listener{cfg.Listener}
	}
	var startOnce sync.Once
	r.onStart = func() { startOnce.Do(func() { close(r.started) }) }
	return r
}

// Finish records the query's outcome: Done closes, and a result nobody
// listens for is dropped after runConfig.DropAfter unless collected.
func (r *Run) Finish(res *turn.Result, err error) {
	r.result, r.err = res, err
	close(r.done)
	r.finished()
}

// TurnStarted is closed once the turn has started, or the query waits for
// a usage limit's reset (as far as its caller is concerned, it started).
func (r *Run) TurnStarted() <-chan struct{} { return r.started }

// Err is the error that kept the query from running; valid once Done is
// closed.
func (r *Run) Err() error { return r.err }

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

// Prompt is what the query sent (the steered messages, for a follow-up,
// with Steered true).
func (r *Run) Prompt() (prompt string, steered bool) { return r.cfg.Prompt, r.cfg.Steered }

// Thinking reports whether the run includes thinking texts.
func (r *Run) Thinking() bool { return r.cfg.Thinking }

// Started is when the run started.
func (r *Run) Started() time.Time { return r.start }

// Done is closed when the query has returned.
func (r *Run) Done() <-chan struct{} { return r.done }

// Cancel interrupts the turn; the run then ends with what it produced and
// Interrupted set. The session survives.
func (r *Run) Cancel() { r.cfg.Cancel() }

// OnEvent takes one of the turn's events: the query's OnEvent.
func (r *Run) OnEvent(e turn.Event) {
	r.mu.Lock()
	if e.Kind != turn.EventHeartbeat && e.Kind != turn.EventLimitWarning {
		r.limited, r.limitKind = e.Until, e.Limit // set while the query waits for a reset, cleared by what comes next
	}
	switch e.Kind {
	case turn.EventQueued:
		r.lastStep = e.Text
	case turn.EventTurnStarted:
		r.lastStep = "turn started"
	case turn.EventText:
		r.texts = append(r.texts, e.Text)
		r.partial.Reset() // the whole text replaces its deltas
		r.addStep("said: " + textcut.Cut(e.Text, 300))
	case turn.EventTextDelta:
		if r.partial.Len() <= ProgressTextBytes { // past it, Progress shows none of it
			r.partial.WriteString(e.Text)
		}
	case turn.EventSteer:
		r.addStep("steered: " + textcut.Cut(e.Text, 300))
	case turn.EventToolStarted:
		r.addStep(fmt.Sprintf("tool %s started: %s", e.Tool, textcut.Cut(e.Text, 200)))
	case turn.EventToolFinished:
		status := "finished"
		if e.IsError {
			status = "failed"
		}
		r.addStep(fmt.Sprintf("tool %s %s: %s", orUnknownTool(e.Tool), status, textcut.Cut(e.Text, 200)))
	case turn.EventPermission:
		r.addStep("permission: " + textcut.Cut(e.Text, 300))
	case turn.EventRetry:
		r.lastStep = textcut.Cut(e.Text, 300)
	case turn.EventLimited, turn.EventLimitWarning:
		r.addStep(e.Text)
	}
	r.turns, r.tools = e.Turns, e.ToolsUsed
	r.lastAt = time.Since(r.start)
	followers := append(r.watchers[:len(r.watchers):len(r.watchers)], r.views...)
	r.mu.Unlock()
	if e.Kind == turn.EventTurnStarted || e.Kind == turn.EventLimited {
		r.onStart() // a query waiting for a usage limit's reset has started, as far as its caller is concerned
	}
	for _, l := range followers {
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

// Attach makes l a view of the run — a call that follows it and may
// collect its result: it receives the turn's events from now on until it
// is detached. A run drops a result nobody collects only when no view is
// attached as it finishes. Attach returns how far the run has come, so
// that a call that attaches late starts from there.
func (r *Run) Attach(l Listener) Progress {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !slices.Contains(r.views, l) {
		r.views = append(r.views, l)
	}
	return r.progressLocked()
}

// Detach stops events to the view l.
func (r *Run) Detach(l Listener) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.views = slices.DeleteFunc(r.views, func(v Listener) bool { return v == l })
}

// Watch makes l a watcher of the run (the dashboard's feed): it receives
// the rest of the turn's events, and never holds the result back from
// being dropped.
func (r *Run) Watch(l Listener) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.watchers = append(r.watchers, l)
}

// Progress reports how far the run has come.
func (r *Run) Progress() Progress {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.progressLocked()
}

func (r *Run) progressLocked() Progress {
	return Progress{Elapsed: time.Since(r.start), Turns: r.turns, ToolsUsed: r.tools, LastStep: r.lastStep, LastAt: r.lastAt,
		Text: r.textStartLocked(), LimitedUntil: r.limited, LimitKind: r.limitKind}
}

// textStartLocked is Progress.Text: the texts and the partial text joined
// as far as the cut needs (one byte past ProgressTextBytes tells that it
// cuts), not a copy of megabytes of them on every call.
func (r *Run) textStartLocked() string {
	texts := r.texts
	if r.partial.Len() > 0 {
		texts = append(texts[:len(texts):len(texts)], r.partial.String())
	}
	var b strings.Builder
	for i, t := range texts {
		if i > 0 {
			b.WriteString("\n\n")
		}
		if room := ProgressTextBytes + 1 - b.Len(); len(t) > room {
			b.WriteString(t[:max(room, 0)])
			break
		}
		b.WriteString(t)
	}
	return textcut.Cut(b.String(), ProgressTextBytes)
}

// ProgressTextBytes is how much of the text so far Progress.Text gives
// (a running query's partialText): the run keeps no more of a message
// being written than that, and a delta.
const ProgressTextBytes = 4000

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
// releases it (see runConfig.Release).
func (r *Run) Collect() (res *turn.Result, err error, ok bool) {
	select {
	case <-r.done:
	default:
		return nil, nil, false
	}
	if !r.take() {
		return nil, nil, false
	}
	r.cfg.Release()
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

// finished schedules the drop of a result nobody is waiting for.
func (r *Run) finished() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.views) > 0 || r.collected {
		return
	}
	r.dropTimer = time.AfterFunc(r.cfg.DropAfter, r.Drop)
}

// Drop gives up on a result nobody collected and releases the run as a
// collection would: what happens runConfig.DropAfter after the query
// returned, unless a view is attached or it was collected.
func (r *Run) Drop() {
	if r.take() {
		r.cfg.Log("dropping an uncollected query result", "run", r.ID)
		r.cfg.Release()
	}
}

// Supersede drops the uncollected result of a run that a newer run of the
// same session replaced: its caller went on using the session, so neither
// closeAfter nor the drop timer applies any more.
func (r *Run) Supersede() {
	if r.take() {
		r.cfg.Log("a new query replaces an uncollected result", "run", r.ID)
	}
}

// Queue is the AskPermission of a run whose questions wait for a view: it
// adds the question and blocks until it is answered or ctx ends (the
// manager bounds it with the permission timeout and then applies policy).
func (r *Run) Queue(ctx context.Context, pr *turn.PermissionRequest) (*claudeagent.PermissionResult, error) {
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

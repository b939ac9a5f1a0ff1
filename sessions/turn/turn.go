// Package turn is one turn of a session as the CLI's messages arrive: it
// folds them into Events for whoever watches the query and into the
// turn's Result (texts, thinking, tool calls, usage and cost, permission
// denials, the usage limit the turn met), carrying what earlier turns of
// the same query produced when a continuation follows a usage limit's
// reset. It also holds the vocabulary of a query that the layers above
// share: Event, Result, PermissionRequest, Limit, Deadline.
//
// It knows the CLI's messages (claudeagent) and the history's entries; it
// must not know sessions, the manager, processes' lifecycle, the store
// or MCP.
package turn

import (
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/textcut"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/history"
)

// EventKind names what happened during a turn.
type EventKind string

// Event kinds, in the order they typically occur.
const (
	EventQueued       EventKind = "queued" // waiting for a live process, before the turn starts
	EventTurnStarted  EventKind = "turn_started"
	EventText         EventKind = "text"
	EventTextDelta    EventKind = "text_delta" // a piece of the text the model is writing (partial messages)
	EventSteer        EventKind = "steer"      // a message written into the running turn (Session.Steer)
	EventThinking     EventKind = "thinking"
	EventToolStarted  EventKind = "tool_started"
	EventToolFinished EventKind = "tool_finished"
	EventRetry        EventKind = "api_retry"
	EventLimited      EventKind = "limited"       // the query waits for the usage limit to reset (Until)
	EventLimitWarning EventKind = "limit_warning" // the usage limit is near: shown, not acted on
	EventPermission   EventKind = "permission"
	EventHeartbeat    EventKind = "heartbeat"
	EventDone         EventKind = "done"
)

// Event is one thing that happened during a turn, for streaming to the
// caller. Only the fields that fit Kind are set.
type Event struct {
	Kind    EventKind
	Text    string // assistant text, thinking text, error or permission message
	Tool    string // tool name
	ToolID  string
	IsError bool
	Until   time.Time // EventLimited: when the usage limit resets
	Limit   string    // EventLimited: which (five_hour, seven_day, …)
	// Elapsed, Turns (API round trips) and ToolsUsed describe the turn so
	// far.
	Elapsed   time.Duration
	Turns     int
	ToolsUsed int
}

// ToolInvocation is one tool call of a turn: the tool_use paired with its
// tool_result by id.
type ToolInvocation struct {
	ID      string          `json:"id"`
	Name    string          `json:"name"`
	Input   json.RawMessage `json:"input"`
	Output  string          `json:"output"`
	IsError bool            `json:"isError"`
	Error   string          `json:"error,omitempty"`
	Done    bool            `json:"-"`
}

// Usage is a turn's token usage.
type Usage struct {
	InputTokens              int64 `json:"inputTokens"`
	OutputTokens             int64 `json:"outputTokens"`
	CacheCreationInputTokens int64 `json:"cacheCreationInputTokens"`
	CacheReadInputTokens     int64 `json:"cacheReadInputTokens"`
}

// add adds v to u.
func (u *Usage) Add(v Usage) {
	u.InputTokens += v.InputTokens
	u.OutputTokens += v.OutputTokens
	u.CacheCreationInputTokens += v.CacheCreationInputTokens
	u.CacheReadInputTokens += v.CacheReadInputTokens
}

// PermissionDenial is a tool call the turn was not allowed to make.
type PermissionDenial struct {
	ToolName  string          `json:"toolName"`
	ToolUseID string          `json:"toolUseId"`
	ToolInput json.RawMessage `json:"toolInput,omitempty"`
}

// QuestionAsked is one of the model's clarifying questions (AskUserQuestion)
// and what became of it: its Answer (the chosen labels joined by ", ", or
// the person's own text), or, unanswered, what the model was told instead.
type QuestionAsked struct {
	ToolUseID   string   `json:"toolUseId"`
	Question    string   `json:"question"`
	Options     []string `json:"options,omitempty"`
	MultiSelect bool     `json:"multiSelect,omitempty"`
	Answer      string   `json:"answer,omitempty"`
	Unanswered  string   `json:"unanswered,omitempty"`
}

// PermissionRequest is a tool call the CLI wants permission for.
type PermissionRequest struct {
	SessionID string
	Cwd       string
	*claudeagent.CanUseToolRequest
}

// Result is everything a query produced. A failed turn is still a
// Result, with IsError and ErrorText set and the rest as far as known.
type Result struct {
	FinalText         string
	StructuredOutput  json.RawMessage // with jsonSchema: the answer, validated by the CLI
	Thinking          []string
	ToolInvocations   []ToolInvocation
	ClaudeSessionID   string
	Usage             Usage
	DurationMs        int64
	DurationAPIMs     int64
	NumTurns          int
	CostUSD           float64 // this turn only
	Model             string
	StopReason        string
	Subtype           string
	TerminalReason    string
	IsError           bool
	ErrorText         string
	PermissionDenials []PermissionDenial
	// Questions are the model's clarifying questions in this turn, in
	// order; an unanswered one is not a permission denial.
	Questions   []QuestionAsked
	Interrupted bool
	TimedOut    bool
	// Recovered is "replayed" when the conversation's transcript was lost
	// (the CLI was killed before writing it) and this turn started a fresh
	// conversation seeded with the session's recorded history.
	Recovered string
	// LimitedUntil is when the account's usage limit resets, when the query
	// ended on it: it did not wait (onLimit fail, a reset beyond its
	// timeout or --max-limit-wait) or its wait was cut short; zero
	// otherwise. LimitKind names the limit (five_hour, seven_day, …).
	LimitedUntil time.Time
	LimitKind    string
	// LimitNote is the CLI's warning that the usage limit is near, for a
	// person; "" without one.
	LimitNote string
	// FollowUp is set when a message steered into the turn was not folded
	// into it: the CLI answers it in a turn of its own, which the session
	// runs on (collected like any run, see Session.Steer).
	FollowUp bool
}

// Turn aggregates the messages of one query. The session's pump goroutine
// feeds it; the querying goroutine waits on Done.
type Turn struct {
	start   time.Time
	uuid    string // of the user message that started it (t.mu)
	onEvent func(Event)
	now     func() time.Time // the manager's clock, for the usage limit's texts

	mu          sync.Mutex
	texts       []string // assistant texts in order, for partial results
	steps       []history.Entry
	apiCalls    int // distinct assistant message ids: API round trips
	lastMsgID   string
	lastUUID    string // of the last assistant message of the main conversation: its mark in the transcript
	thinking    []string
	tools       []ToolInvocation
	toolIndex   map[string]int
	model       string
	sessionID   string
	interrupted bool
	timedOut    bool
	result      *claudeagent.ResultMessage
	failure     string // set when the turn ended without a result
	forced      string // why the process was stopped to end the turn
	denials     []PermissionDenial
	questions   []QuestionAsked
	limits      turnLimits // the usage limit as the turn met it (limit.go)
	steering               // messages steered into the turn (steer.go)
	carry       carried    // what the turns before a continuation produced (limit.go)

	done     chan struct{} // closed when the turn ended; replaced by Again (limit.go)
	finished bool          // done is closed
	stopped  chan struct{} // closed once the query is interrupted: ends a wait for a usage limit

	emitMu sync.Mutex // one onEvent call at a time
	ended  bool       // EventDone was emitted; later events are dropped
}

// New returns the turn of a query whose events go to onEvent (nil: none);
// now is the clock of the usage limit's texts (nil: time.Now).
func New(onEvent func(Event), now func() time.Time) *Turn {
	if onEvent == nil {
		onEvent = func(Event) {}
	}
	if now == nil {
		now = time.Now
	}
	return &Turn{start: time.Now(), uuid: uuid.NewString(), onEvent: onEvent, now: now, toolIndex: map[string]int{},
		done: make(chan struct{}), stopped: make(chan struct{}), steering: steering{seen: make(chan struct{})}}
}

// ID is the uuid of the user message whose turn t waits for.
func (t *Turn) ID() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.uuid
}

// Emit sends e, with the turn's progress so far, to the query's events;
// nothing after EventDone.
func (t *Turn) Emit(e Event) {
	t.mu.Lock()
	e.Elapsed = time.Since(t.start)
	e.Turns = t.apiCalls
	e.ToolsUsed = len(t.tools)
	t.mu.Unlock()
	// The pump and permission handlers both emit; a handler may finish
	// after the turn (an interrupt cancels its question).
	t.emitMu.Lock()
	defer t.emitMu.Unlock()
	if t.ended {
		return
	}
	t.ended = e.Kind == EventDone
	t.onEvent(e)
}

// LastMessage is the uuid of the turn's last assistant message in the main
// conversation ("" for none): the CLI writes it into its transcript, so a
// transcript holding it holds the turn.
func (t *Turn) LastMessage() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lastUUID
}

// Handle folds one CLI message into the turn; it reports whether the turn
// has ended.
func (t *Turn) Handle(m claudeagent.Message) bool {
	t.seenOnce.Do(func() { close(t.seen) })
	switch m := m.(type) {
	case *claudeagent.SystemMessage:
		t.handleSystem(m)
	case *claudeagent.AssistantMessage:
		t.handleAssistant(m)
	case *claudeagent.UserMessage:
		t.handleToolResults(m)
	case *claudeagent.RateLimitEvent:
		t.noteLimit(&m.Info)
	case *claudeagent.StreamEvent:
		t.handleStream(m)
	case *claudeagent.ResultMessage:
		if !t.answeredBy(m) {
			// A turn the CLI started by itself (a background task finished):
			// not this query's end.
			return false
		}
		t.mu.Lock()
		t.result = m
		if m.SessionID != "" {
			t.sessionID = m.SessionID
		}
		t.mu.Unlock()
		return true
	}
	return false
}

// handleSystem takes the model and session id of init, and reports API
// retries and model fallbacks.
func (t *Turn) handleSystem(m *claudeagent.SystemMessage) {
	switch m.Subtype {
	case "init":
		t.mu.Lock()
		t.model, t.sessionID = m.Model, m.SessionID
		t.mu.Unlock()
	case "api_retry":
		t.Emit(Event{Kind: EventRetry, Text: "API error " + m.Error + "; retrying (attempt " + strconv.Itoa(m.Attempt) + " of " + strconv.Itoa(m.MaxRetries) + ")"})
	case "model_fallback":
		t.mu.Lock()
		t.model = m.FallbackModel // the model that answers, not init's
		t.mu.Unlock()
		text := m.Content
		if text == "" {
			text = "switched from " + m.OriginalModel + " to " + m.FallbackModel + " (" + m.Trigger + ")"
		}
		t.Emit(Event{Kind: EventRetry, Text: text})
	}
}

// handleAssistant counts the API round trips and takes the texts,
// thinking and tool calls of an assistant message.
func (t *Turn) handleAssistant(m *claudeagent.AssistantMessage) {
	t.mu.Lock()
	if id := m.Message.ID; id != "" && id != t.lastMsgID {
		t.apiCalls, t.lastMsgID = t.apiCalls+1, id
	}
	if m.UUID != "" && m.ParentToolUseID == nil {
		t.lastUUID = m.UUID // a sub-agent's messages go to a transcript of their own
	}
	t.mu.Unlock()
	if m.APIErrorParams != nil && m.APIErrorParams.RateLimitInfo != nil {
		t.noteLimit(m.APIErrorParams.RateLimitInfo)
	}
	for _, b := range m.Message.Content {
		switch b.Type {
		case "text":
			t.mu.Lock()
			t.texts = append(t.texts, b.Text)
			t.steps = append(t.steps, history.Entry{Kind: "text", Text: b.Text, Time: time.Now()})
			t.mu.Unlock()
			t.Emit(Event{Kind: EventText, Text: b.Text, IsError: m.Error != ""})
		case "thinking":
			t.mu.Lock()
			t.thinking = append(t.thinking, b.Thinking)
			t.mu.Unlock()
			t.Emit(Event{Kind: EventThinking, Text: b.Thinking})
		case "tool_use":
			t.mu.Lock()
			if _, seen := t.toolIndex[b.ID]; !seen {
				t.toolIndex[b.ID] = len(t.tools)
				t.tools = append(t.tools, ToolInvocation{ID: b.ID, Name: b.Name, Input: b.Input})
				t.steps = append(t.steps, history.Entry{Kind: "tool", Tool: b.Name, ToolID: b.ID, Input: b.Input, Time: time.Now()})
			}
			t.mu.Unlock()
			t.Emit(Event{Kind: EventToolStarted, Tool: b.Name, ToolID: b.ID, Text: history.SummarizeInput(b.Input, 300)})
		}
	}
}

// handleToolResults pairs the tool results of a user message with their
// calls.
func (t *Turn) handleToolResults(m *claudeagent.UserMessage) {
	for _, b := range m.Blocks() {
		if b.Type != "tool_result" {
			continue
		}
		out := b.ResultText()
		t.mu.Lock()
		t.toolResults++
		i, ok := t.toolIndex[b.ToolUseID]
		var name string
		if ok {
			inv := &t.tools[i]
			inv.Output, inv.IsError, inv.Done = out, b.IsError, true
			if b.IsError {
				inv.Error = out
			}
			name = inv.Name
		}
		t.mu.Unlock()
		t.Emit(Event{Kind: EventToolFinished, Tool: name, ToolID: b.ToolUseID, IsError: b.IsError, Text: out})
	}
}

// Fail ends the turn without a result message (the process died, or the
// turn was abandoned).
func (t *Turn) Fail(reason string) {
	t.mu.Lock()
	if t.result == nil && t.failure == "" {
		t.failure = reason
	}
	t.mu.Unlock()
	t.Finish()
}

// Finish ends the turn: Done is closed.
func (t *Turn) Finish() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.finished {
		t.finished = true
		close(t.done)
	}
}

// Done is closed when the turn has ended.
func (t *Turn) Done() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.done
}

// Force records that the turn's process had to be stopped, and why.
func (t *Turn) Force(why string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.interruptedLocked()
	if t.forced == "" {
		t.forced = why
	}
}

// MarkInterrupted records that the query was interrupted, which also ends
// its wait for a usage limit (see Stopped).
func (t *Turn) MarkInterrupted() {
	t.mu.Lock()
	t.interruptedLocked()
	t.mu.Unlock()
}

// interruptedLocked marks the query interrupted, which ends its wait for
// a usage limit; t.mu is held.
func (t *Turn) interruptedLocked() {
	if !t.interrupted {
		t.interrupted = true
		close(t.stopped)
	}
}

// Interrupted reports whether the query was interrupted.
func (t *Turn) Interrupted() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.interrupted
}

// AddQuestion records one of the model's clarifying questions.
func (t *Turn) AddQuestion(q QuestionAsked) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.questions = append(t.questions, q)
}

// AddDenial records a tool call the turn was not allowed to make.
func (t *Turn) AddDenial(d PermissionDenial) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, have := range t.denials {
		if have.ToolUseID == d.ToolUseID && d.ToolUseID != "" {
			return
		}
	}
	t.denials = append(t.denials, d)
}

// Stopped is closed once the query is interrupted: it ends a wait for a
// usage limit's reset.
func (t *Turn) Stopped() <-chan struct{} { return t.stopped }

// MarkTimedOut records that the query's timeout (--query-timeout) ended it.
func (t *Turn) MarkTimedOut() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.timedOut = true
}

// TotalCost is the process's cumulative cost as the turn's result reported
// it; false when the turn has no result.
func (t *Turn) TotalCost() (float64, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.result == nil {
		return 0, false
	}
	return t.result.TotalCostUSD, true
}

// Steps are the turn's texts and tool calls as history entries, each tool
// call with its result cut to history.ResultChars.
func (t *Turn) Steps() []history.Entry {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]history.Entry, 0, len(t.steps))
	for _, e := range t.steps {
		if e.Kind == "tool" {
			if i, ok := t.toolIndex[e.ToolID]; ok {
				inv := t.tools[i]
				e.Result, e.IsError = textcut.Cut(inv.Output, history.ResultChars), inv.IsError
			}
		}
		out = append(out, e)
	}
	return out
}

// Thinking says whether a result carries the turn's thinking texts.
type Thinking bool

// The values of Thinking.
const (
	WithoutThinking Thinking = false
	WithThinking    Thinking = true
)

// Snapshot builds the result. prevCost is the process's cumulative cost
// before this turn (the CLI reports a running total).
func (t *Turn) Snapshot(prevCost float64, thinking Thinking) *Result {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.snapshotLocked(prevCost, thinking)
	t.carry.addTo(r)
	t.limitResultLocked(r)
	return r
}

// snapshotLocked is Snapshot of the latest turn alone (a continuation
// after a usage limit is one); t.mu is held.
func (t *Turn) snapshotLocked(prevCost float64, thinking Thinking) *Result {
	r := &Result{
		ClaudeSessionID: t.sessionID,
		Model:           t.model,
		Interrupted:     t.interrupted,
		TimedOut:        t.timedOut,
		ToolInvocations: append([]ToolInvocation(nil), t.tools...),
	}
	if thinking == WithThinking {
		r.Thinking = append([]string{}, t.thinking...)
	}
	r.PermissionDenials = append(r.PermissionDenials, t.denials...)
	r.Questions = append(r.Questions, t.questions...)
	res := t.result
	if res == nil {
		r.IsError = true
		r.ErrorText = t.failure
		if t.forced != "" {
			r.ErrorText = t.forced
			if t.timedOut {
				r.ErrorText = "the query timed out, and " + t.forced
			}
		}
		r.FinalText = strings.Join(t.texts, "\n\n")
		r.DurationMs = time.Since(t.start).Milliseconds()
		r.Subtype = "error_no_result"
		return r
	}
	r.FinalText = res.Result
	r.StructuredOutput = res.StructuredOutput
	if string(r.StructuredOutput) == "null" {
		r.StructuredOutput = nil
	}
	if r.FinalText == "" && len(t.texts) > 0 {
		// An interrupted or failed turn has no result text; keep what was said.
		r.FinalText = strings.Join(t.texts, "\n\n")
	}
	r.Subtype, r.IsError, r.TerminalReason = res.Subtype, res.IsError, res.TerminalReason
	r.ErrorText = res.ErrorText()
	if t.interrupted && res.Subtype == "error_during_execution" {
		// The CLI reports its own diagnostics here; say what happened.
		if t.timedOut {
			r.ErrorText = "the query timed out and was interrupted (--query-timeout)"
		} else {
			// An interrupt the caller asked for is an outcome, not a failure.
			r.IsError, r.ErrorText = false, ""
		}
	}
	r.DurationMs, r.DurationAPIMs, r.NumTurns = res.DurationMs, res.DurationAPIMs, res.NumTurns
	if res.StopReason != nil {
		r.StopReason = *res.StopReason
	}
	if res.Usage != nil {
		r.Usage = Usage{res.Usage.InputTokens, res.Usage.OutputTokens, res.Usage.CacheCreationInputTokens, res.Usage.CacheReadInputTokens}
	}
	r.CostUSD = res.TotalCostUSD - prevCost
	if r.CostUSD < 0 {
		r.CostUSD = res.TotalCostUSD
	}
	for _, d := range res.PermissionDenials {
		dup := false
		for _, have := range r.PermissionDenials {
			dup = dup || (have.ToolUseID == d.ToolUseID && d.ToolUseID != "")
		}
		for _, q := range r.Questions {
			dup = dup || (q.ToolUseID == d.ToolUseID && d.ToolUseID != "") // a question nobody answered: listed as such
		}
		if !dup {
			r.PermissionDenials = append(r.PermissionDenials, PermissionDenial{ToolName: d.ToolName, ToolUseID: d.ToolUseID, ToolInput: d.ToolInput})
		}
	}
	return r
}

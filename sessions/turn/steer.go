package turn

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/history"
)

// Steering: a user message written into a running turn. Both supported
// CLIs fold it into the turn at its next API request when a tool call is
// in progress (the turn ends with one result), but finish the turn first
// and answer it in a turn of its own when none is (the final answer was
// streaming): then a second result follows, for every message queued so,
// in one turn. Which happened is known when the turn's result comes:
// CLI 2.1.330 names in it every user message the turn answered
// (user_message_uuids); 2.1.197 names none, and a message is taken as
// folded when a tool result came after it was sent (the request that
// carried that result carried the message too).

// steering is what a turn knows of the messages steered into it.
type steering struct {
	seen        chan struct{} // closed at the first message handled
	seenOnce    sync.Once
	steers      []steer
	toolResults int      // tool results handled so far
	answers     []string // a follow-up's: the steered messages it answers
	// admitted and admittedBytes count the messages TakeSteer let in.
	admitted      int
	admittedBytes int
}

// steer is one message steered into the turn.
type steer struct {
	uuid        string
	text        string
	toolResults int // tool results handled when it was sent
}

// MaxSteers is how many messages may be steered into one turn.
const MaxSteers = 16

// ErrSteerLimit is a steer past a turn's bound (TakeSteer).
var ErrSteerLimit = errors.New("the turn's steering limit")

// TakeSteer admits a message of n bytes into the turn, whose steered
// messages may hold at most maxBytes in all and be at most MaxSteers: an
// error wrapping ErrSteerLimit says which bound it passes. Once admitted,
// the message counts whether or not it is written (AddSteer).
func (t *Turn) TakeSteer(n, maxBytes int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.admitted >= MaxSteers:
		return fmt.Errorf("%w: a turn takes at most %d steered messages, and this one has them", ErrSteerLimit, MaxSteers)
	case maxBytes > 0 && t.admittedBytes+n > maxBytes:
		return fmt.Errorf("%w: the messages steered into a turn hold at most %d bytes in all (--max-prompt-bytes), and this one would make %d", ErrSteerLimit, maxBytes, t.admittedBytes+n)
	}
	t.admitted++
	t.admittedBytes += n
	return nil
}

// AddSteer records that the user message uuid with text was written into
// the running turn, and tells the turn's watchers. The text is kept once:
// the turn's record of it and its step share it.
func (t *Turn) AddSteer(uuid, text string) {
	t.mu.Lock()
	t.steers = append(t.steers, steer{uuid: uuid, text: text, toolResults: t.toolResults})
	t.steps = append(t.steps, history.Entry{Kind: "steer", Text: text, Time: t.now()})
	t.mu.Unlock()
	t.Emit(Event{Kind: EventSteer, Text: text})
}

// Unanswered returns the uuids and texts of the messages steered into the
// turn that its result did not answer: the CLI answers them in a turn of
// its own next. It is valid once the result has come.
func (t *Turn) Unanswered() (uuids, texts []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.result == nil {
		return nil, nil
	}
	named := t.result.UserMessageUUIDs
	if t.result.UserMessageUUID != "" {
		named = append(slices.Clip(named), t.result.UserMessageUUID)
	}
	for _, s := range t.steers {
		folded := s.toolResults < t.toolResults // 2.1.197: a tool result came after it
		if len(named) > 0 {
			folded = slices.Contains(named, s.uuid)
		}
		if !folded {
			uuids, texts = append(uuids, s.uuid), append(texts, s.text)
		}
	}
	return uuids, texts
}

// NewFollowUp returns the turn in which the CLI answers the steered
// messages uuids that the turn before did not; its events go to onEvent.
func NewFollowUp(uuids []string, onEvent func(Event), now func() time.Time) *Turn {
	t := New(onEvent, now)
	t.uuid, t.answers = uuids[0], slices.Clone(uuids)
	return t
}

// Seen is closed once the turn has handled a message of the CLI.
func (t *Turn) Seen() <-chan struct{} { return t.seen }

// Named reports whether the CLI names the messages its results answer
// (2.1.330 does, 2.1.197 does not); valid once the result has come.
func (t *Turn) Named() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.result != nil && (len(t.result.UserMessageUUIDs) > 0 || t.result.UserMessageUUID != "")
}

// answeredBy reports whether m is the result of this turn: of the user
// message that started it (of any message a follow-up answers), and not
// of a turn the CLI started by itself.
func (t *Turn) answeredBy(m *claudeagent.ResultMessage) bool {
	t.mu.Lock()
	ids := t.answers
	id := t.uuid
	t.mu.Unlock()
	if len(ids) == 0 {
		return m.Answers(id)
	}
	return slices.ContainsFunc(ids, m.Answers)
}

// handleStream emits the text deltas of the turn's own assistant messages
// (partial messages); a sub-agent's are left out, as its texts are.
func (t *Turn) handleStream(m *claudeagent.StreamEvent) {
	if m.ParentToolUseID != nil {
		return
	}
	if text, thinking, ok := m.TextDelta(); ok && !thinking && text != "" {
		t.Emit(Event{Kind: EventTextDelta, Text: text})
	}
}

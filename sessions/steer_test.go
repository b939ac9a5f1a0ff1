package sessions

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakecli"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

// eventsTo is a Listener that hands every event to a channel.
type eventsTo chan turn.Event

func (c eventsTo) OnEvent(e turn.Event) { c <- e }

// untilEvent reads events until one of kind k; it fails when the run
// ends first.
func untilEvent(t *testing.T, events eventsTo, r *Run, k turn.EventKind) turn.Event {
	t.Helper()
	for {
		select {
		case e := <-events:
			if e.Kind == k {
				return e
			}
		case <-r.Done():
			t.Fatalf("the run ended before a %s event", k)
		}
	}
}

// collect waits for r and collects its result.
func collect(t *testing.T, r *Run) *turn.Result {
	t.Helper()
	waitDone(t, r)
	res, err, ok := r.Collect()
	if !ok || err != nil {
		t.Fatalf("Collect = %v, %v", err, ok)
	}
	return res
}

// steps is the kinds and texts of the session's history.
func steps(s *Session) (kinds, texts []string) {
	for _, e := range s.History() {
		kinds, texts = append(kinds, e.Kind), append(texts, e.Text)
	}
	return kinds, texts
}

// TestSteerFolded: a message steered while a tool call runs goes into the
// same turn (the CLI folds it in): the query returns its one result, no
// follow-up, the session is idle, and the history holds the message as a
// steer, between the prompt and the answer.
func TestSteerFolded(t *testing.T) {
	t.Parallel()
	log := filepath.Join(t.TempDir(), "stdin.jsonl")
	m := newManager(t, Config{}, fakecli.EnvInputLog, log)
	s := create(t, m, CreateOptions{SessionOptions: claudeagent.SessionOptions{PermissionMode: "bypassPermissions"}})
	events := make(eventsTo, 1024)
	r := startRun(t, s, "TOOL_BASH[sleep 1; echo slept]", QueryOptions{Listener: events})
	untilEvent(t, events, r, turn.EventToolStarted)
	if err := s.Steer(ctxFor(t), "also say hi", nil); err != nil {
		t.Fatalf("Steer: %v", err)
	}
	if e := untilEvent(t, events, r, turn.EventSteer); e.Text != "also say hi" {
		t.Errorf("steer event %q", e.Text)
	}
	res := collect(t, r)
	if res.FollowUp || res.IsError || !strings.Contains(res.FinalText, "Tool said: slept") {
		t.Errorf("result %+v: want the tool turn's answer and no follow-up", res)
	}
	if st := stateOf(s); st != state.Idle || s.CurrentRun() != nil {
		t.Errorf("after the query: state %s, current run %v", st, s.CurrentRun())
	}
	kinds, texts := steps(s)
	if got := strings.Join(kinds, ","); got != "prompt,text,tool,steer,text" {
		t.Errorf("history kinds %s (%q)", got, texts)
	}
	in, _ := os.ReadFile(log)
	if !strings.Contains(string(in), "also say hi") {
		t.Errorf("the message was not written to the CLI:\n%s", in)
	}
}

// TestSteerFollowUp: a message steered while the final answer streams gets
// a turn of its own: the query returns its own answer with FollowUp set,
// the session stays running (a query is refused), the follow-up's answer
// is the session's next run to collect, it is in the history, and the
// next query gets its own answer, not the follow-up's.
func TestSteerFollowUp(t *testing.T) {
	t.Parallel()
	m := newManager(t, Config{})
	s := create(t, m, CreateOptions{})
	stop := s.FollowText()
	defer stop()
	events := make(eventsTo, 1024)
	r := startRun(t, s, "SLOW4", QueryOptions{Listener: events})
	untilEvent(t, events, r, turn.EventTextDelta)
	if err := s.Steer(ctxFor(t), "STEERED also say hi", nil); err != nil {
		t.Fatalf("Steer: %v", err)
	}
	res := collect(t, r)
	if !res.FollowUp || res.FinalText != "chunk0 chunk1 chunk2 chunk3 " {
		t.Fatalf("the query's result: FollowUp %v, text %q", res.FollowUp, res.FinalText)
	}
	follow := s.CurrentRun()
	if follow == nil || follow == r {
		t.Fatalf("no follow-up run after the query's result was collected (%v)", follow)
	}
	if prompt, steered := follow.Prompt(); prompt != "STEERED also say hi" || !steered {
		t.Errorf("the follow-up's prompt %q, steered %v", prompt, steered)
	}
	if _, err := s.Query(ctxFor(t), "hi", QueryOptions{}); !errors.Is(err, ErrBusy) && !isDone(follow.Done()) {
		t.Errorf("a query while the follow-up runs: %v, want ErrBusy", err)
	}
	fres := collect(t, follow)
	if fres.IsError || fres.FollowUp || fres.FinalText != "Hello from fake API (n_messages=1)" {
		t.Errorf("the follow-up's result %+v", fres)
	}
	if st := stateOf(s); st != state.Idle {
		t.Errorf("after the follow-up: state %s", st)
	}
	next := query(t, s, "hi", QueryOptions{})
	if next.FinalText != hello || next.FollowUp {
		t.Errorf("the next query's answer %q (FollowUp %v)", next.FinalText, next.FollowUp)
	}
	// In the order it happened: the message went in while the answer was
	// being written, whose whole text came after it.
	kinds, _ := steps(s)
	if got := strings.Join(kinds, ","); got != "prompt,steer,text,text,prompt,text" {
		t.Errorf("history kinds %s", got)
	}
}

// TestSteerRefused: a session without a running query refuses a message,
// naming claude_chat_query, and so does an empty message.
func TestSteerRefused(t *testing.T) {
	t.Parallel()
	m := newManager(t, Config{})
	s := create(t, m, CreateOptions{})
	err := s.Steer(ctxFor(t), "hello?", nil)
	if !errors.Is(err, ErrNotRunning) || !strings.Contains(err.Error(), "claude_chat_query") || !strings.Contains(err.Error(), "idle") {
		t.Errorf("steering an idle session: %v", err)
	}
	query(t, s, "hi", QueryOptions{})
	if err := s.Steer(ctxFor(t), " ", nil); !errors.Is(err, ErrEmptyPrompt) {
		t.Errorf("an empty message: %v", err)
	}
	if kinds, _ := steps(s); strings.Contains(strings.Join(kinds, ","), "steer") {
		t.Errorf("a refused message is in the history: %v", kinds)
	}
}

// TestFollowText: the text deltas of a streamed answer become events while
// someone follows the session's text, and none do once nobody does; the
// run's progress carries the text so far.
func TestFollowText(t *testing.T) {
	t.Parallel()
	m := newManager(t, Config{})
	s := create(t, m, CreateOptions{})
	count := func(prompt string) (deltas int, text string) {
		events := make(eventsTo, 1024)
		r := startRun(t, s, prompt, QueryOptions{Listener: events})
		for {
			select {
			case e := <-events:
				if e.Kind == turn.EventTextDelta {
					deltas++
					text = r.Progress().Text
				}
			case <-r.Done():
				collect(t, r)
				return deltas, text
			}
		}
	}
	stop := s.FollowText()
	n, text := count("SLOW3")
	if n != 3 || !strings.HasPrefix(text, "chunk0 chunk1") {
		t.Errorf("followed: %d deltas (want 3), progress text %q", n, text)
	}
	stop()
	stop() // a second stop changes nothing
	if n, _ := count("SLOW3"); n != 0 {
		t.Errorf("not followed: %d deltas, want none", n)
	}
}

// TestSteerBounded: the messages steered into one turn are bounded in
// bytes (in all, MaxSteerBytes: --max-prompt-bytes) and in count
// (turn.MaxSteers); a refused message says the limit and is neither
// written nor kept; the next turn has its own bound (defect 6: 92 MiB
// steered into one turn grew the server to 537 MiB).
func TestSteerBounded(t *testing.T) {
	t.Parallel()
	log := filepath.Join(t.TempDir(), "stdin.jsonl")
	m := newManager(t, Config{MaxSteerBytes: 100}, fakecli.EnvInputLog, log)
	s := create(t, m, CreateOptions{SessionOptions: claudeagent.SessionOptions{PermissionMode: "bypassPermissions"}})
	events := make(eventsTo, 1024)
	r := startRun(t, s, "TOOL_BASH[sleep 2; echo slept]", QueryOptions{Listener: events})
	untilEvent(t, events, r, turn.EventToolStarted)
	if err := s.Steer(ctxFor(t), strings.Repeat("a", 60), nil); err != nil {
		t.Fatal(err)
	}
	err := s.Steer(ctxFor(t), strings.Repeat("b", 41), nil)
	if !errors.Is(err, turn.ErrSteerLimit) || !strings.Contains(err.Error(), "at most 100 bytes in all") || !strings.Contains(err.Error(), "101") {
		t.Errorf("a steer past the bytes: %v", err)
	}
	for i := 1; i < turn.MaxSteers; i++ {
		if err := s.Steer(ctxFor(t), "c", nil); err != nil {
			t.Fatalf("steer %d: %v", i+1, err)
		}
	}
	if err := s.Steer(ctxFor(t), "d", nil); !errors.Is(err, turn.ErrSteerLimit) || !strings.Contains(err.Error(), "at most 16 steered messages") {
		t.Errorf("a steer past the count: %v", err)
	}
	collect(t, r)
	in, _ := os.ReadFile(log)
	if strings.Contains(string(in), strings.Repeat("b", 41)) || strings.Contains(string(in), `"d"`) {
		t.Error("a refused message was written to the CLI")
	}
	for _, e := range s.History() {
		if e.Text == strings.Repeat("b", 41) || e.Text == "d" {
			t.Errorf("a refused message is in the history: %q", e.Text)
		}
	}
	// The next turn has its own bound.
	r = startRun(t, s, "TOOL_BASH[sleep 2; echo slept]", QueryOptions{Listener: events})
	untilEvent(t, events, r, turn.EventToolStarted)
	if err := s.Steer(ctxFor(t), strings.Repeat("e", 100), nil); err != nil {
		t.Errorf("the next turn's first steer: %v", err)
	}
	collect(t, r)
}

package claudeagent

import (
	"context"
	"log/slog"
	"strings"
	"testing"
)

// dispatchOnly is a Process that only reads lines: dispatch queues what it
// keeps, and nothing is ever written.
func dispatchOnly(t *testing.T) *Process {
	life, end := context.WithCancel(context.Background())
	t.Cleanup(end)
	p := &Process{log: slog.New(slog.DiscardHandler), pending: map[string]chan controlResult{}, incoming: map[string]context.CancelFunc{}, life: life, endLife: end}
	p.stdinClosed.Store(true)
	p.queue.init()
	return p
}

// drain returns what dispatch queued.
func (p *Process) drain() []Message {
	p.queue.close()
	var out []Message
	for {
		m, err := p.queue.pop(p.life)
		if err != nil {
			return out
		}
		out = append(out, m)
	}
}

// TestKeepPartials: stream_event lines are queued, their text deltas
// readable, while partials are kept; once they are not, they are dropped
// as they are read, without an allocation (never decoded), and every
// other line still goes through.
func TestKeepPartials(t *testing.T) {
	text := []byte(`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"chunk1 "}},"session_id":"s","parent_tool_use_id":null,"uuid":"u"}`)
	think := []byte(`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}},"session_id":"s","parent_tool_use_id":null,"uuid":"u"}`)
	start := []byte(`{"type":"stream_event","event":{"type":"message_start","message":{}},"session_id":"s","parent_tool_use_id":null,"uuid":"u"}`)
	other := []byte(`{"type":"system","subtype":"status","status":"requesting","session_id":"s"}`)

	p := dispatchOnly(t)
	p.partials.Store(true) // as Start leaves it
	for _, l := range [][]byte{text, think, start, other} {
		p.dispatch(append([]byte(nil), l...))
	}
	got := p.drain()
	if len(got) != 4 {
		t.Fatalf("kept: %d messages queued, want 4", len(got))
	}
	for i, want := range []struct {
		text           string
		thinking, isOK bool
	}{{"chunk1 ", false, true}, {"hmm", true, true}, {"", false, false}} {
		ev, ok := got[i].(*StreamEvent)
		if !ok {
			t.Fatalf("message %d is %T", i, got[i])
		}
		if s, th, ok := ev.TextDelta(); s != want.text || th != want.thinking || ok != want.isOK {
			t.Errorf("message %d: TextDelta = %q, %v, %v; want %+v", i, s, th, ok, want)
		}
	}

	p = dispatchOnly(t)
	p.KeepPartials(false)
	for _, l := range [][]byte{text, start, other} {
		p.dispatch(append([]byte(nil), l...))
	}
	got = p.drain()
	if len(got) != 1 || got[0].Type() != "system" {
		t.Fatalf("dropped: %d messages queued (%v), want only the system line", len(got), got)
	}
	if n := testing.AllocsPerRun(100, func() { p.dispatch(text) }); n != 0 {
		t.Errorf("dropping a stream_event line allocates %v times, want 0", n)
	}
}

// TestReadSkipsPartials: the reader skips a stream_event line nobody keeps
// before it is read out (a 200 KiB one too, longer than the reader's
// buffer), and still delivers every other line in order.
func TestReadSkipsPartials(t *testing.T) {
	p := dispatchOnly(t)
	p.readerDone = make(chan struct{})
	p.KeepPartials(false)
	big := `{"type":"stream_event","event":{"type":"content_block_delta","delta":{"type":"text_delta","text":"` + strings.Repeat("x", 200<<10) + `"}}}`
	in := strings.Join([]string{
		`{"type":"system","subtype":"init","session_id":"s"}`,
		big,
		`{"type":"stream_event","event":{"type":"message_stop"}}`,
		`{"type":"assistant","message":{"id":"m","role":"assistant","content":[{"type":"text","text":"hi"}]}}`,
		big,
		`{"type":"result","subtype":"success","result":"hi"}`,
	}, "\n") + "\n"
	p.readStdout(strings.NewReader(in))
	var types []string
	for _, m := range p.drain() {
		types = append(types, m.Type())
	}
	if got := strings.Join(types, ","); got != "system,assistant,result" {
		t.Errorf("read %s, want system,assistant,result", got)
	}
}

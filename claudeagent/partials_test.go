package claudeagent

import (
	"context"
	"log/slog"
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

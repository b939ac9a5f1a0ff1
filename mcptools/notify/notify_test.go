package notify

import (
	"context"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/mcptest"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

// connected is a server session with logging and a client recording its
// notifications, both closed at the test's end; ctx ends within 10 s.
func connected(t *testing.T) (context.Context, *mcp.ServerSession, *mcptest.Recorder) {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "notify", Version: "1"}, &mcp.ServerOptions{
		//lint:ignore SA1019 the logging capability serves clients of protocols before 2026-07-28
		Capabilities: &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}}})
	st, ct := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	rec := mcptest.NewRecorder("notify", nil)
	cs, err := rec.Connect(ctx, ct, "2025-11-25")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return ctx, ss, rec
}

// TestThinking: a thinking block is sent (as a log message and a progress
// notification) with Options.Thinking, and not without; the turn's done,
// sent after it, is the point by which it would have come.
func TestThinking(t *testing.T) {
	for _, thinking := range []bool{false, true} {
		ctx, ss, rec := connected(t)
		req := &mcp.CallToolRequest{Session: ss, Params: &mcp.CallToolParamsRaw{Meta: mcp.Meta{"progressToken": "p"}}}
		n := New(ctx, req, "s1", Options{Thinking: thinking})
		n.OnEvent(turn.Event{Kind: turn.EventThinking, Text: "pondering"})
		n.OnEvent(turn.Event{Kind: turn.EventDone})
		n.Close()
		events, err := rec.WaitEvents(ctx, "progress:done")
		if err != nil {
			t.Fatalf("thinking %v: %v (%q)", thinking, err, events)
		}
		if got := slices.Contains(events, "progress:thinking: pondering"); got != thinking {
			t.Errorf("Thinking %v: the thinking block was sent: %v (%q)", thinking, got, events)
		}
		if !n.SawDone() {
			t.Errorf("Thinking %v: SawDone is false after the done event", thinking)
		}
	}
}

// TestTextSoFar: a call with a progress token follows the text being
// written: the first delta is sent with the text so far, the next ones
// within textEvery are held back (until its last nanosecond), the first
// once it has passed carries them all; the whole text then starts the next
// afresh. The time is synctest's, so textEvery passes exactly.
func TestTextSoFar(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, ss, rec := connected(t)
		n := New(ctx, &mcp.CallToolRequest{Session: ss, Params: &mcp.CallToolParamsRaw{Meta: mcp.Meta{"progressToken": "p"}}}, "s1", Options{})
		if !n.WantsText() {
			t.Fatal("a call with a progress token does not want the text")
		}
		n.OnEvent(turn.Event{Kind: turn.EventTextDelta, Text: "Hel"})
		n.OnEvent(turn.Event{Kind: turn.EventTextDelta, Text: "lo "}) // held back
		time.Sleep(textEvery - time.Nanosecond)
		n.OnEvent(turn.Event{Kind: turn.EventTextDelta, Text: "wor"}) // still held back
		time.Sleep(time.Nanosecond)                                   // textEvery has passed
		n.OnEvent(turn.Event{Kind: turn.EventTextDelta, Text: "ld"})
		n.OnEvent(turn.Event{Kind: turn.EventText, Text: "Hello world"})
		n.OnEvent(turn.Event{Kind: turn.EventDone})
		n.Close()
		events, err := rec.WaitEvents(ctx, "progress:done")
		if err != nil {
			t.Fatalf("%v (%q)", err, events)
		}
		var writing []string
		for _, e := range events {
			if strings.HasPrefix(e, "progress:writing: ") {
				writing = append(writing, strings.TrimPrefix(e, "progress:writing: "))
			}
		}
		if !slices.Equal(writing, []string{"Hel", "Hello world"}) {
			t.Errorf("the text so far was sent as %q, want [Hel, Hello world]", writing)
		}
		if plain := New(ctx, &mcp.CallToolRequest{Session: ss, Params: &mcp.CallToolParamsRaw{}}, "s1", Options{}); plain.WantsText() {
			t.Error("a call without a progress token wants the text")
		}
	})
}

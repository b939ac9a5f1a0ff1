package notify

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/mcptest"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

// TestThinking: a thinking block is sent (as a log message and a progress
// notification) with Options.Thinking, and not without; the turn's done,
// sent after it, is the point by which it would have come.
func TestThinking(t *testing.T) {
	for _, thinking := range []bool{false, true} {
		srv := mcp.NewServer(&mcp.Implementation{Name: "notify", Version: "1"}, &mcp.ServerOptions{
			//lint:ignore SA1019 the logging capability serves clients of protocols before 2026-07-28
			Capabilities: &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}}})
		st, ct := mcp.NewInMemoryTransports()
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		ss, err := srv.Connect(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ss.Close()
		rec := mcptest.NewRecorder("notify", nil)
		cs, err := rec.Connect(ctx, ct, "2025-11-25")
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
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

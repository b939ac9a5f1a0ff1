package e2e_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// queryInBackground runs claude_chat_query in the background; its result
// and structured output come on the channel.
func (e *e2e) queryInBackground(t *testing.T, ctx context.Context, args map[string]any, progressToken any) <-chan [2]any {
	done := make(chan [2]any, 1)
	go func() {
		res, out, err := e.callErr(ctx, "claude_chat_query", args, progressToken)
		if err != nil {
			t.Errorf("claude_chat_query: %v", err)
			done <- [2]any{&mcp.CallToolResult{IsError: true}, map[string]any{}}
			return
		}
		done <- [2]any{res, out}
	}()
	return done
}

// TestE2ESteer: claude_chat_steer with the real CLI. A message steered while
// a tool call runs reaches the model in the same turn (the API's next
// request carries it after the tool's result) and the query returns its one
// result; one steered while the final answer streams is answered in a turn
// of its own, which claude_chat_wait returns and the next query does not
// receive; an idle session refuses a message, naming claude_chat_query.
// On the way, a call with a progress token gets the answer's text as it
// streams ("writing: …").
func TestE2ESteer(t *testing.T) {
	t.Parallel()
	e := startE2E(t, e2eOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	_, out := e.call(t, ctx, "claude_session_create", map[string]any{"cwd": e.cwd, "permissionMode": "bypassPermissions"}, nil)
	sid := out["sessionId"].(string)

	t.Run("folded", func(t *testing.T) {
		before := len(e.api.MessageRequests())
		done := e.queryInBackground(t, ctx, map[string]any{"sessionId": sid, "prompt": "TOOL_BASH[sleep 3; echo slept]"}, nil)
		if _, err := e.api.WaitMessageRequests(ctx, before+1); err != nil { // the request that asks for the tool
			t.Fatal(err)
		}
		res, sout := e.call(t, ctx, "claude_chat_steer", map[string]any{"sessionId": sid, "message": "STEERED-IN-TOOL also count to three"}, nil)
		if res.IsError || sout["sent"] != true {
			t.Fatalf("steer: %s", text(res))
		}
		r := <-done
		qres, q := r[0].(*mcp.CallToolResult), r[1].(map[string]any)
		if qres.IsError || q["finalText"] != "Tool said: slept" || q["followUp"] != nil {
			t.Fatalf("the query's result: %s %v", text(qres), q)
		}
		reqs := e.api.MessageRequests()[before:]
		if len(reqs) != 2 {
			t.Fatalf("%d API requests for the turn, want 2 (the tool, then its result with the message)", len(reqs))
		}
		if body := string(reqs[1].Body); !strings.Contains(body, "STEERED-IN-TOOL also count to three") || strings.Index(body, "STEERED-IN-TOOL") < strings.Index(body, "slept") {
			t.Errorf("the request after the tool does not carry the message after its result:\n%.3000s", body)
		}
	})

	t.Run("follow-up", func(t *testing.T) {
		before := len(e.api.MessageRequests())
		// With a progress token the call follows the text as it is
		// written: the message goes in once the answer streams.
		done := e.queryInBackground(t, ctx, map[string]any{"sessionId": sid, "prompt": "SLOW10"}, "steer-follow")
		if events, err := e.rec.WaitEvents(ctx, "writing: chunk0 chunk1"); err != nil {
			t.Fatalf("no progress with the text so far: %v\n%s", err, strings.Join(events, "\n"))
		}
		if res, _ := e.call(t, ctx, "claude_chat_steer", map[string]any{"sessionId": sid, "message": "STEERED-AFTER also say bye"}, nil); res.IsError {
			t.Fatalf("steer: %s", text(res))
		}
		r := <-done
		qres, q := r[0].(*mcp.CallToolResult), r[1].(map[string]any)
		fu, _ := q["followUp"].(map[string]any)
		if qres.IsError || !strings.HasPrefix(q["finalText"].(string), "chunk0 chunk1") || fu["status"] != "running" {
			t.Fatalf("the query's result: %s %v", text(qres), q)
		}
		res, w := e.call(t, ctx, "claude_chat_wait", map[string]any{"sessionId": sid}, nil)
		answer, _ := w["finalText"].(string)
		if res.IsError || w["status"] != "completed" || !strings.HasPrefix(answer, "Hello from fake API") {
			t.Fatalf("claude_chat_wait: %s %v", text(res), w)
		}
		reqs := e.api.MessageRequests()[before:]
		if len(reqs) != 2 || !strings.Contains(reqs[1].LastUserText(), "STEERED-AFTER also say bye") {
			t.Fatalf("%d requests; the follow-up's request does not carry the message", len(reqs))
		}
		res, next := e.call(t, ctx, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "ECHO next question"}, nil)
		if res.IsError || next["finalText"] != "ECHO next question" || next["followUp"] != nil {
			t.Errorf("the next query got %q (%v), want its own answer", next["finalText"], next["followUp"])
		}
		hist := e.api.MessageRequests()
		if last := hist[len(hist)-1]; !strings.Contains(last.LastUserText(), "next question") {
			t.Errorf("the next query's request: %q", last.LastUserText())
		}
	})

	t.Run("idle", func(t *testing.T) {
		res, _, err := e.callErr(ctx, "claude_chat_steer", map[string]any{"sessionId": sid, "message": "anyone?"}, nil)
		if err == nil && (!res.IsError || !strings.Contains(text(res), "claude_chat_query")) {
			t.Errorf("steering an idle session: %s", text(res))
		}
	})
}

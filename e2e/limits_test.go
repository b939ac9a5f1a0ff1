package e2e_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakeapi"
)

// oauthEnv logs the CLI in with a fake OAuth token instead of the API key,
// as a subscription: only then does it read the API's usage-limit headers
// and report them (rate_limit_event). Its traffic stays on the fake API
// (both CLIs, checked with strace: no connection but to the base URL).
var oauthEnv = map[string]string{"ANTHROPIC_API_KEY": "", "CLAUDE_CODE_OAUTH_TOKEN": "sk-ant-oat01-fake"}

// TestE2EUsageLimit: the real CLI (2.1.197 and 2.1.330 alike) is refused
// by the account's usage limit (the fake API's LIMIT[3]: a 429 with
// anthropic-ratelimit-unified-status rejected and a reset 3 s ahead). The
// query waits — the session list shows until when — and after the reset it
// goes on by itself and returns the answer, with nothing lost and nothing
// sent twice: the API sees the prompt once before the reset and once after
// it, in the same conversation, followed by the continuation.
func TestE2EUsageLimit(t *testing.T) {
	t.Parallel()
	e := startE2E(t, e2eOptions{protocol: "2025-11-25", env: oauthEnv})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, out := e.call(t, ctx, "claude_session_create", map[string]any{"cwd": e.cwd}, nil)
	sid, _ := out["sessionId"].(string)
	if sid == "" {
		t.Fatalf("create: %v", out)
	}

	const prompt = "LIMIT[3] hi"
	type answer struct {
		out  map[string]any
		text string
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		res, out, err := e.callErr(ctx, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": prompt}, "tok-limit")
		a := answer{out: out, err: err}
		if res != nil {
			a.text = text(res)
		}
		done <- a
	}()

	events, err := e.rec.WaitEvents(ctx, "progress:limited until ")
	if err != nil {
		t.Fatalf("no notification that the query waits: %v\n%s", err, strings.Join(events, "\n"))
	}
	reqs := e.api.MessageRequests()
	if len(reqs) == 0 {
		t.Fatal("the query waits, and the API saw no request")
	}
	res, list := e.call(t, ctx, "claude_session_list", map[string]any{"sessionId": sid}, nil)
	ss, _ := list["sessions"].([]any)
	var until string
	if len(ss) == 1 {
		until, _ = ss[0].(map[string]any)["limitedUntil"].(string)
	}
	resetAt, err := time.Parse(time.RFC3339, until)
	if err != nil || !strings.Contains(text(res), "limited until "+until) || ss[0].(map[string]any)["state"] != "running" {
		t.Fatalf("the list while the query waits: %v\n%s", list, text(res))
	}

	var a answer
	select {
	case a = <-done:
	case <-ctx.Done():
		t.Fatal("the query did not return after the reset")
	}
	if a.err != nil || a.out["finalText"] != "Hello from fake API (n_messages=1)" || a.out["limitedUntil"] != nil || a.out["interrupted"] != false {
		t.Fatalf("the query after the reset: %v, %v\n%s", a.out, a.err, a.text)
	}

	var main []fakeapi.Request
	for _, r := range e.api.MessageRequests() {
		if r.IsMainConversation() {
			main = append(main, r)
		}
	}
	if len(main) != 2 {
		t.Fatalf("the API saw %d requests of the conversation, want 2: the refused one, and one after the reset", len(main))
	}
	if main[0].LastUserText() != prompt || main[0].Received.After(resetAt) {
		t.Errorf("the first request: %q at %s (reset %s)", main[0].LastUserText(), main[0].Received, resetAt)
	}
	last := main[1].LastUserText()
	if main[1].Received.Before(resetAt) || strings.Count(last, prompt) != 1 || !strings.HasPrefix(last, prompt) || !strings.Contains(last, "Continue.") {
		t.Errorf("the request after the reset: %q at %s (reset %s): want the prompt once, then the continuation", last, main[1].Received, resetAt)
	}
	if in := main[1].ConversationLen(); in != 1 {
		t.Errorf("the request after the reset has %d messages, want the one user message (the refused turn left no answer)", in)
	}
	res, list = e.call(t, ctx, "claude_session_list", map[string]any{"sessionId": sid}, nil)
	if ss, _ := list["sessions"].([]any); len(ss) != 1 || ss[0].(map[string]any)["limitedUntil"] != nil || strings.Contains(text(res), "limited until") {
		t.Errorf("the list after the reset: %v", list)
	}
}

// TestE2EUsageLimitMidTurn: the usage limit refuses the request after a
// tool call (the turn's second model call). After the reset the query goes
// on from there: the API sees the conversation with the tool's result and
// the continuation, and the tool is not run again.
func TestE2EUsageLimitMidTurn(t *testing.T) {
	t.Parallel()
	e := startE2E(t, e2eOptions{protocol: "2025-11-25", env: oauthEnv})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var n atomic.Int64
	reset := time.Now().Add(3 * time.Second).Truncate(time.Second).Add(time.Second)
	e.api.SetHandler(func(r *fakeapi.Request) *fakeapi.Reply {
		if r.IsMainConversation() && n.Add(1) == 2 {
			return fakeapi.LimitReply(reset)
		}
		return nil // the keywords
	})
	_, out := e.call(t, ctx, "claude_session_create", map[string]any{"cwd": e.cwd, "permissionMode": "bypassPermissions"}, nil)
	sid, _ := out["sessionId"].(string)
	res, out := e.call(t, ctx, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "TOOL_BASH[echo hi]"}, nil)
	tools, _ := out["toolInvocations"].([]any)
	if res.IsError || out["finalText"] != "Tool said: hi" || len(tools) != 1 {
		t.Fatalf("the query: %v\n%s", out, text(res))
	}
	var main []fakeapi.Request
	for _, r := range e.api.MessageRequests() {
		if r.IsMainConversation() {
			main = append(main, r)
		}
	}
	if len(main) != 3 || main[2].Received.Before(reset) {
		t.Fatalf("the API saw %d requests of the conversation, want 3, the last after the reset %s", len(main), reset)
	}
	msgs := main[2].Messages
	var users []string
	for _, m := range msgs {
		if m.Role == "user" {
			users = append(users, string(m.Content))
		}
	}
	if len(users) != 2 || strings.Count(users[0], "TOOL_BASH[echo hi]") != 1 || strings.Count(users[1], `"tool_result"`) != 1 ||
		!strings.Contains(users[1], "Continue.") || main[2].LastToolResults()[0].Content != "hi" {
		t.Errorf("the request after the reset: %d user messages %q", len(users), users)
	}
}

package fakeapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Bodies shaped like what CLI 2.1.330 sends.
const (
	hostUA  = "claude-cli/2.1.330 (external, cli)"
	childUA = "claude-cli/2.1.330 (external, claude-agent-mcp)"
)

func billing(entrypoint string) map[string]any {
	return map[string]any{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.330.66f; cc_entrypoint=" + entrypoint + ";"}
}

func sysText(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

// cliBody is a Messages request body with a system prompt, tools and
// messages.
func cliBody(system []any, tools []string, msgs ...any) []byte {
	var ts []any
	for _, n := range tools {
		ts = append(ts, map[string]any{"name": n, "input_schema": map[string]any{"type": "object"}})
	}
	b, _ := json.Marshal(map[string]any{"model": "claude-opus-5-5", "stream": true, "max_tokens": 100,
		"system": system, "tools": ts, "messages": msgs})
	return b
}

// send posts b with the User-Agent ua and returns the reply's events.
func send(t *testing.T, srv *Server, ua string, b []byte) []sseEvent {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL()+"/v1/messages?beta=true", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if ua != "" {
		req.Header.Set("User-Agent", ua)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	return readSSE(t, resp.Body)
}

var (
	hostSystem  = []any{billing("cli"), sysText("You are Claude Code, Anthropic's official CLI for Claude."), sysText("\nYou are an agent…")}
	childSystem = []any{billing("claude-agent-mcp"), sysText("You are a Claude agent, built on Anthropic's Claude Agent SDK.")}
	titleSystem = []any{billing("cli"), sysText("Generate a concise, sentence-case title for this conversation.")}
)

// conversation is a host conversation after a ToolSearch call and an MCP
// tool call, with their results.
func conversation() []any {
	return []any{
		user("Ask a sub-agent."),
		map[string]any{"role": "system", "content": "The following MCP servers are still connecting"},
		map[string]any{"role": "assistant", "content": []any{
			map[string]any{"type": "tool_use", "id": "toolu_s1", "name": "ToolSearch", "input": map[string]any{"query": "select:mcp__agent__q"}}}},
		user([]any{
			map[string]any{"type": "tool_result", "tool_use_id": "toolu_s1", "content": []any{
				map[string]any{"type": "tool_reference", "tool_name": "mcp__agent__q"}}},
			map[string]any{"type": "text", "text": "Tool loaded."}}),
		map[string]any{"role": "assistant", "content": []any{
			map[string]any{"type": "text", "text": "Asking."},
			map[string]any{"type": "tool_use", "id": "toolu_q1", "name": "mcp__agent__q", "input": map[string]any{"prompt": "a"}},
			map[string]any{"type": "tool_use", "id": "toolu_q2", "name": "mcp__agent__q", "input": map[string]any{"prompt": "b"}}}},
		user([]any{
			map[string]any{"type": "tool_result", "tool_use_id": "toolu_q1", "content": `{"finalText":"A"}`},
			map[string]any{"type": "tool_result", "tool_use_id": "toolu_q2", "is_error": true, "content": []any{
				map[string]any{"type": "text", "text": "failed"}}}}),
	}
}

func TestEntrypointAndVersion(t *testing.T) {
	srv := startServer(t)
	send(t, srv, hostUA, cliBody(hostSystem, []string{"Bash"}, user("hi")))
	send(t, srv, "claude-cli/2.1.330 (external, claude-agent-mcp, agent-sdk/0.9.1)", cliBody(childSystem, nil, user("hi")))
	// Without a CLI User-Agent, the billing header tells.
	send(t, srv, "Go-http-client/1.1", cliBody(childSystem, nil, user("hi")))
	send(t, srv, "", cliBody([]any{sysText("plain")}, nil, user("hi")))
	want := []struct{ entrypoint, version string }{
		{"cli", "2.1.330"}, {"claude-agent-mcp", "2.1.330"}, {"claude-agent-mcp", "2.1.330"}, {"", ""},
	}
	reqs := srv.Requests()
	for i, w := range want {
		if got := reqs[i].Entrypoint(); got != w.entrypoint {
			t.Errorf("request %d: Entrypoint() = %q, want %q", i, got, w.entrypoint)
		}
		if got := reqs[i].CLIVersion(); got != w.version {
			t.Errorf("request %d: CLIVersion() = %q, want %q", i, got, w.version)
		}
	}
	if s := reqs[0].SystemText(); !strings.HasPrefix(s, "x-anthropic-billing-header") || !strings.Contains(s, "\nYou are Claude Code") {
		t.Errorf("SystemText() = %q", s)
	}
}

func TestIsMainConversation(t *testing.T) {
	srv := startServer(t)
	send(t, srv, hostUA, cliBody(hostSystem, []string{"Bash", "ToolSearch"}, user("hi")))
	send(t, srv, childUA, cliBody(childSystem, nil, user("hi")))
	send(t, srv, hostUA, cliBody(titleSystem, nil, user("hi")))
	send(t, srv, hostUA, cliBody(nil, nil, user("quota")))
	resp := post(t, context.Background(), srv.URL()+PathCountTokens, cliBody(hostSystem, []string{"Bash"}, user("hi")))
	resp.Body.Close()
	var got []bool
	for _, r := range srv.Requests() {
		got = append(got, r.IsMainConversation())
	}
	if want := []bool{true, true, false, false, false}; !reflect.DeepEqual(got, want) {
		t.Errorf("IsMainConversation = %v, want %v (host, child, title, quota probe, count_tokens)", got, want)
	}
}

func TestConversationHelpers(t *testing.T) {
	srv := startServer(t)
	send(t, srv, hostUA, cliBody(hostSystem, []string{"Bash", "mcp__agent__q"}, conversation()...))
	r := srv.Requests()[0]
	if got := r.ToolNames(); !reflect.DeepEqual(got, []string{"Bash", "mcp__agent__q"}) {
		t.Errorf("ToolNames() = %v", got)
	}
	if !r.HasTool("mcp__agent__q") || r.HasTool("mcp__agent__other") {
		t.Errorf("HasTool is wrong")
	}
	var uses []string
	for _, u := range r.ToolUses() {
		uses = append(uses, u.ID+" "+u.Name+" "+string(u.Input))
	}
	if want := []string{
		`toolu_s1 ToolSearch {"query":"select:mcp__agent__q"}`,
		`toolu_q1 mcp__agent__q {"prompt":"a"}`,
		`toolu_q2 mcp__agent__q {"prompt":"b"}`,
	}; !reflect.DeepEqual(uses, want) {
		t.Errorf("ToolUses() = %q", uses)
	}
	if got := r.ToolResults(); len(got) != 3 || got[0].ToolUseID != "toolu_s1" || got[0].Content != "" {
		t.Errorf("ToolResults() = %+v", got)
	}
	if tr, ok := r.ToolResult("toolu_q1"); !ok || tr.Content != `{"finalText":"A"}` || tr.IsError {
		t.Errorf("ToolResult(q1) = %+v, %v", tr, ok)
	}
	if tr, ok := r.ToolResult("toolu_q2"); !ok || tr.Content != "failed" || !tr.IsError {
		t.Errorf("ToolResult(q2) = %+v, %v", tr, ok)
	}
	if _, ok := r.ToolResult("toolu_none"); ok {
		t.Errorf("ToolResult of an unknown id found")
	}
	if got := r.ToolReferences("toolu_s1"); !reflect.DeepEqual(got, []string{"mcp__agent__q"}) {
		t.Errorf("ToolReferences(s1) = %v", got)
	}
	if got := r.ToolReferences("toolu_q1"); got != nil {
		t.Errorf("ToolReferences(q1) = %v", got)
	}
}

func TestToolUseReplyFanOut(t *testing.T) {
	srv := startServer(t)
	srv.SetHandler(func(*Request) *Reply {
		return ToolUseReply("Asking two.",
			ToolUse("toolu_a", "mcp__agent__claude_direct_query", map[string]any{"prompt": "SLOW4 a"}),
			ToolUse("", "mcp__agent__claude_chat_query", json.RawMessage(`{"sessionId":"s","prompt":"b"}`)))
	})
	evs := stream(t, srv, user("go"))
	var starts []map[string]any
	for _, e := range evs {
		if e.Name == "content_block_start" {
			starts = append(starts, e.Data["content_block"].(map[string]any))
		}
	}
	if len(starts) != 3 || starts[0]["type"] != "text" || starts[1]["id"] != "toolu_a" || starts[2]["id"] != "toolu_fake_1" ||
		starts[2]["name"] != "mcp__agent__claude_chat_query" {
		t.Fatalf("blocks = %v", starts)
	}
	if got := blockText(evs, 1, "partial_json"); got != `{"prompt":"SLOW4 a"}` {
		t.Errorf("first input = %s", got)
	}
	if got := blockText(evs, 2, "partial_json"); got != `{"sessionId":"s","prompt":"b"}` {
		t.Errorf("second input = %s", got)
	}
	if d := evs[len(evs)-2].delta(); d["stop_reason"] != "tool_use" {
		t.Errorf("stop_reason = %v", d)
	}
	if r := ToolUseReply("", ToolUse("x", "T", nil)); len(r.Blocks) != 1 {
		t.Errorf("ToolUseReply without text has %d blocks", len(r.Blocks))
	}
}

func TestSetScript(t *testing.T) {
	srv := startServer(t)
	var mainSeen, sideSeen []string
	srv.SetScript(Script{
		EntrypointCLI: {
			Main: Turns(
				func(r *Request) *Reply {
					mainSeen = append(mainSeen, r.LastUserText())
					return ToolUseReply("", ToolUse("toolu_h1", "mcp__agent__q", map[string]any{"prompt": "SLOW2"}))
				},
				nil, // the keyword behaviour
			),
		},
		"other": {
			Main: func(*Request) *Reply { return TextReply("other main") },
			Side: func(r *Request) *Reply { sideSeen = append(sideSeen, r.LastUserText()); return nil },
		},
	})
	// The host's main conversation follows its turns.
	if evs := send(t, srv, hostUA, cliBody(hostSystem, []string{"Bash"}, user("first"))); blockText(evs, 0, "partial_json") != `{"prompt":"SLOW2"}` {
		t.Errorf("host turn 1: %s", names(evs))
	}
	if got := blockText(send(t, srv, hostUA, cliBody(hostSystem, []string{"Bash"}, user("ECHO second"))), 0, "text"); got != "ECHO second" {
		t.Errorf("host turn 2 (nil: keywords) = %q", got)
	}
	if got := blockText(send(t, srv, hostUA, cliBody(hostSystem, []string{"Bash"}, user("ECHO third"))), 0, "text"); got != "ECHO third" {
		t.Errorf("host turn 3 (past the end: keywords) = %q", got)
	}
	// A side call of the host gets SideReply, whatever its text says:
	// keywords copied from the conversation must not make it slow.
	if got := blockText(send(t, srv, hostUA, cliBody(titleSystem, nil, user("SLOW20 title"))), 0, "text"); got != SideText {
		t.Errorf("host side call = %q", got)
	}
	// Children are not in the script: keywords, main or side.
	if got := blockText(send(t, srv, childUA, cliBody(childSystem, []string{"Bash"}, user("ECHO child"))), 0, "text"); got != "ECHO child" {
		t.Errorf("child = %q", got)
	}
	if got := blockText(send(t, srv, childUA, cliBody(nil, nil, user("ECHO child side"))), 0, "text"); got != "ECHO child side" {
		t.Errorf("child side call = %q", got)
	}
	// A caller's Side returning nil falls back to the keywords.
	ua := "claude-cli/2.1.330 (external, other)"
	if got := blockText(send(t, srv, ua, cliBody(nil, nil, user("ECHO other side"))), 0, "text"); got != "ECHO other side" {
		t.Errorf("other side = %q", got)
	}
	if got := blockText(send(t, srv, ua, cliBody(childSystem, nil, user("x"))), 0, "text"); got != "other main" {
		t.Errorf("other main = %q", got)
	}
	if !reflect.DeepEqual(mainSeen, []string{"first"}) || !reflect.DeepEqual(sideSeen, []string{"ECHO other side"}) {
		t.Errorf("main saw %q, side saw %q", mainSeen, sideSeen)
	}
	if n := len(srv.Filter(From(EntrypointCLI))); n != 3 {
		t.Errorf("Filter(From(cli)) = %d requests, want the 3 main ones", n)
	}
}

func TestWaitFor(t *testing.T) {
	srv := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := make(chan Request, 1)
	errc := make(chan error, 1)
	go func() {
		r, err := srv.WaitFor(ctx, WithToolResult(EntrypointCLI, "toolu_q1"))
		errc <- err
		got <- r
	}()
	// Neither a child's request nor a host request without the result
	// satisfies it.
	send(t, srv, childUA, cliBody(childSystem, nil, conversation()...))
	send(t, srv, hostUA, cliBody(hostSystem, []string{"Bash"}, user("no result yet")))
	select {
	case err := <-errc:
		t.Fatalf("WaitFor returned early: %v", err)
	default:
	}
	send(t, srv, hostUA, cliBody(hostSystem, []string{"Bash"}, conversation()...))
	send(t, srv, hostUA, cliBody(hostSystem, []string{"Bash"}, append(conversation(), user("later"))...))
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if r := <-got; r.Entrypoint() != EntrypointCLI || r.ConversationLen() != 5 {
		t.Errorf("WaitFor returned %d messages from %q, want the first match (5 from cli)", r.ConversationLen(), r.Entrypoint())
	}
	// Already there: at once.
	if r, err := srv.WaitFor(ctx, From(childEntrypoint)); err != nil || r.Entrypoint() != childEntrypoint {
		t.Errorf("WaitFor(child) = %q, %v", r.Entrypoint(), err)
	}

	short, cancelShort := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancelShort()
	if _, err := srv.WaitFor(short, From("nobody")); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitFor with an ended context: %v", err)
	}
	go srv.Close()
	if _, err := srv.WaitFor(ctx, From("nobody")); !errors.Is(err, ErrClosed) {
		t.Errorf("WaitFor on a closed server: %v", err)
	}
}

// childEntrypoint is what the CLIs claude-agent-mcp starts report.
const childEntrypoint = "claude-agent-mcp"

package claudeagent

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakeapi"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/textcut"
)

// Turns of a Process against the fake CLI: initialize, plain and queued
// turns, tools, thinking, the results of errors, a session id.

func TestFakeInitialize(t *testing.T) {
	t.Parallel()
	p := startFake(t, fakeOptions(t))
	resp := initialize(t, p)
	if len(resp.Models) == 0 {
		t.Fatalf("no models in %s", textcut.Cut(string(resp.Raw), 300))
	}
	if id, ok := ResolveModel(resp.Models, "sonnet"); !ok || id != "claude-sonnet-5" {
		t.Errorf("ResolveModel(sonnet) = %q, %v; want claude-sonnet-5 as recorded", id, ok)
	}
	if id, ok := ResolveModel(resp.Models, "default"); !ok || !strings.HasPrefix(id, "claude-") {
		t.Errorf("ResolveModel(default) = %q, %v", id, ok)
	}
	if _, ok := ResolveModel(resp.Models, "no-such-alias"); ok {
		t.Error("ResolveModel found an unknown alias")
	}
	if len(resp.Commands) == 0 || resp.Commands[0].Name == "" {
		t.Errorf("commands = %v", resp.Commands)
	}
	if resp.PID != p.PID() {
		t.Errorf("initialize pid = %d, process pid = %d", resp.PID, p.PID())
	}
	if !json.Valid(resp.Raw) || !bytes.Contains(resp.Raw, []byte(`"available_output_styles"`)) {
		t.Errorf("Raw is not the whole payload: %s", textcut.Cut(string(resp.Raw), 200))
	}
}

func TestFakePlainTurn(t *testing.T) {
	t.Parallel()
	opts := fakeOptions(t)
	p := startFake(t, opts)
	initialize(t, p)
	msgs, res := turn(t, p, "hi")
	if got := types(msgs); got != "system/init,assistant,result" {
		t.Fatalf("message order = %s", got)
	}
	init := msgs[0].(*SystemMessage)
	if init.SessionID == "" || init.SessionID != res.SessionID {
		t.Errorf("session ids: init %q, result %q", init.SessionID, res.SessionID)
	}
	if init.CWD != opts.Cwd {
		t.Errorf("init cwd = %q, want %q (the CLI's working directory)", init.CWD, opts.Cwd)
	}
	if init.ClaudeCodeVersion != "2.1.197" || len(init.Tools) == 0 {
		t.Errorf("init: version %q, %d tools", init.ClaudeCodeVersion, len(init.Tools))
	}
	a := msgs[1].(*AssistantMessage)
	if len(a.Message.Content) != 1 || a.Message.Content[0].Text != "Hello from fake API (n_messages=1)" {
		t.Errorf("assistant content = %+v", a.Message.Content)
	}
	if a.SessionID != init.SessionID || a.Message.ID == "" {
		t.Errorf("assistant session %q id %q", a.SessionID, a.Message.ID)
	}
	if res.IsError || res.Subtype != "success" || res.Result != "Hello from fake API (n_messages=1)" || res.NumTurns != 1 {
		t.Errorf("result = %+v", res)
	}
	if res.ErrorText() != "" {
		t.Errorf("ErrorText of a success = %q", res.ErrorText())
	}
	if res.TotalCostUSD <= 0 || res.Usage == nil || len(res.ModelUsage) == 0 {
		t.Errorf("result cost %v usage %v modelUsage %v", res.TotalCostUSD, res.Usage, res.ModelUsage)
	}
	if err := closeAndWait(t, p); err != nil {
		t.Errorf("exit after a good turn: %v", err)
	}
}

func TestFakeTwoTurns(t *testing.T) {
	t.Parallel()
	t.Run("sequential", func(t *testing.T) {
		t.Parallel()
		p := startFake(t, fakeOptions(t))
		initialize(t, p)
		_, r1 := turn(t, p, "hi")
		_, r2 := turn(t, p, "again")
		checkTwo(t, r1, r2)
	})
	t.Run("queued", func(t *testing.T) {
		t.Parallel()
		p := startFake(t, fakeOptions(t))
		initialize(t, p)
		for _, text := range []string{"hi", "again"} {
			if err := p.SendUser(text); err != nil {
				t.Fatal(err)
			}
		}
		m1, r1 := untilResult(t, p)
		m2, r2 := untilResult(t, p)
		if types(m1) != "system/init,assistant,result" || types(m2) != "system/init,assistant,result" {
			t.Errorf("turns: %s | %s", types(m1), types(m2))
		}
		checkTwo(t, r1, r2)
	})
}

func checkTwo(t *testing.T, r1, r2 *ResultMessage) {
	t.Helper()
	if r1.SessionID == "" || r1.SessionID != r2.SessionID {
		t.Errorf("session ids %q, %q", r1.SessionID, r2.SessionID)
	}
	if r1.UUID == r2.UUID {
		t.Errorf("both results have uuid %q", r1.UUID)
	}
	// total_cost_usd is a running total per process.
	if r1.TotalCostUSD <= 0 || !near(r2.TotalCostUSD, 2*r1.TotalCostUSD) {
		t.Errorf("total_cost_usd %v then %v; want the second to be twice the first", r1.TotalCostUSD, r2.TotalCostUSD)
	}
}

func near(a, b float64) bool { return a-b < 1e-12 && b-a < 1e-12 }

func TestFakeToolUse(t *testing.T) {
	t.Parallel()
	opts := fakeOptions(t)
	opts.PermissionMode = "bypassPermissions"
	p := startFake(t, opts)
	initialize(t, p)
	msgs, res := turn(t, p, "TOOL_BASH[echo hi]")
	if got := types(msgs); got != "system/init,assistant,assistant,user,assistant,result" {
		t.Errorf("order = %s", got)
	}
	var use *ContentBlock
	for _, a := range filter[*AssistantMessage](msgs) {
		for i, b := range a.Message.Content {
			if b.Type == "tool_use" {
				use = &a.Message.Content[i]
			}
		}
	}
	if use == nil || use.Name != "Bash" || use.ID == "" {
		t.Fatalf("no Bash tool_use in %s", types(msgs))
	}
	var in struct{ Command string }
	if err := json.Unmarshal(use.Input, &in); err != nil || in.Command != "echo hi" {
		t.Errorf("tool_use input %s (%v)", use.Input, err)
	}
	trs := toolResults(msgs)
	if len(trs) != 1 || trs[0].ToolUseID != use.ID || trs[0].IsError || trs[0].ResultText() != "hi" {
		t.Errorf("tool results %+v, want one pairing %s with text hi", trs, use.ID)
	}
	if res.Result != "Tool said: hi" || res.NumTurns != 2 || res.IsError {
		t.Errorf("result %q num_turns %d is_error %v", res.Result, res.NumTurns, res.IsError)
	}
}

func TestFakeThinking(t *testing.T) {
	t.Parallel()
	p := startFake(t, fakeOptions(t))
	initialize(t, p)
	msgs, res := turn(t, p, "THINK about it")
	var thinking, text []ContentBlock
	for _, a := range filter[*AssistantMessage](msgs) {
		for _, b := range a.Message.Content {
			switch b.Type {
			case "thinking":
				thinking = append(thinking, b)
			case "text":
				text = append(text, b)
			}
		}
	}
	if len(thinking) != 1 || thinking[0].Thinking != fakeapi.ThinkingText || thinking[0].Signature == "" {
		t.Errorf("thinking blocks %+v", thinking)
	}
	if len(text) != 1 || res.IsError {
		t.Errorf("text blocks %+v, result %+v", text, res)
	}
	// 2.1.197 emits system/thinking_tokens even without partial messages.
	var tokens int
	for _, s := range filter[*SystemMessage](msgs) {
		if s.Subtype == "thinking_tokens" {
			tokens++
		}
	}
	if tokens == 0 {
		t.Errorf("no system/thinking_tokens in %s", types(msgs))
	}
}

func TestFakeAPIError(t *testing.T) {
	t.Parallel()
	p := startFake(t, fakeOptions(t))
	initialize(t, p)
	msgs, res := turn(t, p, "ERR400 ALWAYS")
	a := filter[*AssistantMessage](msgs)
	if len(a) != 1 || a[0].Message.Model != "<synthetic>" || a[0].Error != "unknown" {
		t.Errorf("synthetic assistant: %+v", a)
	}
	if res.Subtype != "success" || !res.IsError || res.APIErrorStatus == nil || *res.APIErrorStatus != 400 {
		t.Errorf("result %+v", res)
	}
	if got := res.ErrorText(); got != "API Error: 400 fake 400 error" {
		t.Errorf("ErrorText = %q", got)
	}
	// Like the CLI, the fake exits 1 when the last result was an error.
	var ee *ExitError
	if err := closeAndWait(t, p); !errors.As(err, &ee) || ee.Code != 1 {
		t.Errorf("exit after an error result: %v", err)
	}
}

func TestFakeMaxTurns(t *testing.T) {
	t.Parallel()
	opts := fakeOptions(t)
	opts.PermissionMode = "bypassPermissions"
	opts.MaxTurns = 1
	p := startFake(t, opts)
	_, res := turn(t, p, "TOOL_BASH[echo hi]")
	if res.Subtype != "error_max_turns" || !res.IsError || res.TerminalReason != "max_turns" {
		t.Errorf("result %q is_error %v terminal %q", res.Subtype, res.IsError, res.TerminalReason)
	}
	if got := res.ErrorText(); got != "Reached maximum number of turns (1)" {
		t.Errorf("ErrorText = %q", got)
	}
}

func TestFakeSessionID(t *testing.T) {
	t.Parallel()
	const id = "11111111-2222-4333-8444-555555555555"
	opts := fakeOptions(t)
	opts.SessionID = id
	p := startFake(t, opts)
	msgs, res := turn(t, p, "hi") // no initialize: optional
	for _, m := range msgs {
		var s struct {
			SessionID string `json:"session_id"`
		}
		_ = json.Unmarshal(m.Raw(), &s)
		if s.SessionID != id {
			t.Errorf("%s has session_id %q", m.Type(), s.SessionID)
		}
	}
	if res.SessionID != id {
		t.Errorf("result session %q", res.SessionID)
	}
}

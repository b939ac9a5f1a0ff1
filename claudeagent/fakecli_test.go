package claudeagent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakeapi"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakecli"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/textcut"
)

// Tests against the fake CLI (internal/testkit/fakecli), which replays captures of
// the real CLI 2.1.197 (testdata/streams). The real CLI itself is covered
// by the end-to-end tests elsewhere.

const waitLimit = 15 * time.Second // generous bound for any single wait (slow -race CI)

// fakeOptions returns Options that run the fake CLI in a fresh directory;
// env is key, value, key, value… added to the fake's environment.
func fakeOptions(t testing.TB, env ...string) Options {
	t.Helper()
	path, fenv := fakecli.Command(t)
	for i := 0; i+1 < len(env); i += 2 {
		fenv[env[i]] = env[i+1]
	}
	return Options{Path: path, Cwd: t.TempDir(), Env: fenv, CloseTimeout: 3 * time.Second}
}

// startFake starts the fake CLI; it is closed when the test ends.
func startFake(t testing.TB, opts Options) *Process {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	p, err := Start(ctx, opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return p
}

// initialize sends initialize and checks it succeeded.
func initialize(t testing.TB, p *Process) *InitializeResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	resp, err := p.Initialize(ctx, InitializeRequest{})
	if err != nil {
		t.Fatalf("Initialize: %v (stderr: %s)", err, p.StderrTail())
	}
	return resp
}

// untilResult returns the messages up to and including the next result.
func untilResult(t testing.TB, p *Process) ([]Message, *ResultMessage) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	var msgs []Message
	for {
		m, err := p.Next(ctx)
		if err != nil {
			t.Fatalf("Next after %d messages (%s): %v; stderr: %s", len(msgs), types(msgs), err, p.StderrTail())
		}
		msgs = append(msgs, m)
		if r, ok := m.(*ResultMessage); ok {
			return msgs, r
		}
	}
}

// turn sends a user message and returns its messages and result.
func turn(t testing.TB, p *Process, text string) ([]Message, *ResultMessage) {
	t.Helper()
	if err := p.SendUser(text); err != nil {
		t.Fatalf("SendUser(%q): %v", text, err)
	}
	return untilResult(t, p)
}

// nextOf waits for the next message of type T, skipping others.
func nextOf[T Message](t testing.TB, p *Process) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	for {
		m, err := p.Next(ctx)
		if err != nil {
			var zero T
			t.Fatalf("Next while waiting for %T: %v", zero, err)
		}
		if v, ok := m.(T); ok {
			return v
		}
	}
}

// closeAndWait closes p and returns how it exited.
func closeAndWait(t testing.TB, p *Process) error {
	t.Helper()
	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return p.Wait()
}

func types(msgs []Message) string {
	var s []string
	for _, m := range msgs {
		t := m.Type()
		switch v := m.(type) {
		case *SystemMessage:
			t += "/" + v.Subtype
		case *RawMessage:
			t = "raw:" + t
		}
		s = append(s, t)
	}
	return strings.Join(s, ",")
}

func filter[T Message](msgs []Message) []T {
	var out []T
	for _, m := range msgs {
		if v, ok := m.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

// toolResults returns the tool_result blocks of the user messages.
func toolResults(msgs []Message) []ContentBlock {
	var out []ContentBlock
	for _, u := range filter[*UserMessage](msgs) {
		for _, b := range u.Blocks() {
			if b.Type == "tool_result" {
				out = append(out, b)
			}
		}
	}
	return out
}

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

func TestFakeInterrupt(t *testing.T) {
	t.Parallel()
	p := startFake(t, fakeOptions(t))
	initialize(t, p)
	if err := p.SendUser("SLOW"); err != nil {
		t.Fatal(err)
	}
	nextOf[*SystemMessage](t, p) // the turn is running
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	start := time.Now()
	if err := p.Interrupt(ctx); err != nil {
		t.Fatalf("Interrupt: %v", err)
	}
	msgs, res := untilResult(t, p)
	// Without the interrupt SLOW streams for 10 s.
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the interrupted turn ended %s after the interrupt", d)
	}
	if res.Subtype != "error_during_execution" || !res.IsError || res.TerminalReason != "aborted_streaming" {
		t.Errorf("result subtype %q is_error %v terminal %q", res.Subtype, res.IsError, res.TerminalReason)
	}
	if res.ErrorText() == "" {
		t.Error("ErrorText is empty for an interrupted turn")
	}
	if got := types(msgs); got != "assistant,user,result" {
		t.Errorf("after the interrupt: %s", got)
	}
	if a := filter[*AssistantMessage](msgs); len(a) != 1 || !strings.HasPrefix(a[0].Message.Content[0].Text, "chunk0 ") {
		t.Errorf("partial assistant: %+v", a)
	}
	if u := filter[*UserMessage](msgs); len(u) != 1 || u[0].Blocks()[0].Text != "[Request interrupted by user]" {
		t.Errorf("interrupt marker: %+v", u)
	}
	// The process stays usable.
	if _, res := turn(t, p, "hi"); res.IsError {
		t.Errorf("turn after interrupt: %+v", res)
	}
	// Interrupting an idle CLI is a no-op.
	if err := p.Interrupt(ctx); err != nil {
		t.Errorf("idle Interrupt: %v", err)
	}
}

func TestFakeSetModel(t *testing.T) {
	t.Parallel()
	p := startFake(t, fakeOptions(t))
	initialize(t, p)
	msgs, _ := turn(t, p, "hi")
	before := msgs[0].(*SystemMessage).Model
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := p.SetModel(ctx, "opus"); err != nil {
		t.Fatalf("SetModel: %v", err)
	}
	// The CLI echoes the /model command's output right away.
	replay := nextOf[*UserMessage](t, p)
	if !replay.IsReplay || !strings.Contains(string(replay.Message.Content), "Set model to opus") {
		t.Errorf("set_model replay line: %s", replay.Raw())
	}
	msgs, res := turn(t, p, "hi")
	after := msgs[0].(*SystemMessage).Model
	if before != "claude-opus-4-8[1m]" || after != "claude-opus-4-8" {
		t.Errorf("init model %q before and %q after set_model opus, as recorded: claude-opus-4-8[1m] → claude-opus-4-8", before, after)
	}
	if res.IsError {
		t.Errorf("result %+v", res)
	}
}

func TestFakeSetPermissionMode(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	p := startFake(t, fakeOptions(t))
	initialize(t, p)
	if err := p.SetPermissionMode(ctx, "acceptEdits"); err != nil {
		t.Fatalf("SetPermissionMode: %v", err)
	}
	if st := nextOf[*SystemMessage](t, p); st.Subtype != "status" || st.PermissionMode != "acceptEdits" || st.Status != nil {
		t.Errorf("status line %s", st.Raw())
	}
	msgs, _ := turn(t, p, "hi")
	if init := msgs[0].(*SystemMessage); init.PermissionMode != "acceptEdits" {
		t.Errorf("init permissionMode %q", init.PermissionMode)
	}
	err := p.SetPermissionMode(ctx, "bypassPermissions")
	var ce *ControlError
	if !errors.As(err, &ce) || ce.Subtype != "set_permission_mode" || !strings.Contains(ce.Message, "dangerously-skip-permissions") {
		t.Errorf("bypassPermissions without the flag: %v", err)
	}

	opts := fakeOptions(t)
	opts.AllowDangerouslySkipPermissions = true
	p2 := startFake(t, opts)
	if err := p2.SetPermissionMode(ctx, "bypassPermissions"); err != nil {
		t.Errorf("bypassPermissions with --allow-dangerously-skip-permissions: %v", err)
	}
}

// permissionTurn runs TOOL_BASH with can_use_tool routed to handler and
// returns the turn's messages.
func permissionTurn(t *testing.T, handler ControlHandler) ([]Message, *ResultMessage) {
	t.Helper()
	opts := fakeOptions(t)
	opts.PermissionMode = "default"
	opts.PermissionPromptStdio = true
	opts.OnControlRequest = handler
	p := startFake(t, opts)
	initialize(t, p)
	return turn(t, p, "TOOL_BASH[touch made_by_tool.txt && echo hi]")
}

func TestFakeCanUseTool(t *testing.T) {
	t.Parallel()
	t.Run("allow", func(t *testing.T) {
		t.Parallel()
		var (
			mu   sync.Mutex
			seen []*CanUseToolRequest
		)
		msgs, res := permissionTurn(t, func(ctx context.Context, req *ControlRequest) (any, error) {
			c, err := req.CanUseTool()
			if err != nil {
				return nil, err
			}
			if req.RequestID == "" {
				return nil, errors.New("no request id")
			}
			mu.Lock()
			seen = append(seen, c)
			mu.Unlock()
			return Allow(c.Input), nil
		})
		mu.Lock()
		defer mu.Unlock()
		if len(seen) != 1 {
			t.Fatalf("handler called %d times", len(seen))
		}
		c := seen[0]
		var in struct{ Command string }
		_ = json.Unmarshal(c.Input, &in)
		if c.ToolName != "Bash" || c.ToolUseID == "" || in.Command != "touch made_by_tool.txt && echo hi" {
			t.Errorf("request %+v input %s", c, c.Input)
		}
		if len(c.PermissionSuggestions) != 3 || c.PermissionSuggestions[0].Type != "addRules" || len(c.PermissionSuggestions[0].Raw) == 0 {
			t.Errorf("suggestions %+v", c.PermissionSuggestions)
		}
		if !strings.HasSuffix(c.BlockedPath, "made_by_tool.txt") {
			t.Errorf("blocked_path %q", c.BlockedPath)
		}
		// The fake rejects an allow without updatedInput, as the CLI does.
		trs := toolResults(msgs)
		if len(trs) != 1 || trs[0].IsError || trs[0].ResultText() != "hi" {
			t.Errorf("tool results %+v", trs)
		}
		if res.IsError || res.Result != "Tool said: hi" {
			t.Errorf("result %+v", res)
		}
	})
	t.Run("allow_changed_input", func(t *testing.T) {
		t.Parallel()
		msgs, _ := permissionTurn(t, func(ctx context.Context, req *ControlRequest) (any, error) {
			return Allow(json.RawMessage(`{"command":"echo changed-by-host","description":"x"}`)), nil
		})
		trs := toolResults(msgs)
		if len(trs) != 1 || !strings.Contains(trs[0].ResultText(), `"command":"echo changed-by-host"`) {
			t.Errorf("the CLI did not get the updated input: %+v", trs)
		}
	})
	t.Run("allow_without_updated_input", func(t *testing.T) {
		t.Parallel()
		msgs, _ := permissionTurn(t, func(ctx context.Context, req *ControlRequest) (any, error) {
			return &PermissionResult{Behavior: "allow"}, nil
		})
		if trs := toolResults(msgs); len(trs) != 1 || !trs[0].IsError || !strings.Contains(trs[0].ResultText(), "updatedInput") {
			t.Errorf("tool results %+v", trs)
		}
	})
	t.Run("deny", func(t *testing.T) {
		t.Parallel()
		msgs, res := permissionTurn(t, func(ctx context.Context, req *ControlRequest) (any, error) {
			return Deny("Host says no"), nil
		})
		trs := toolResults(msgs)
		if len(trs) != 1 || !trs[0].IsError || trs[0].ResultText() != "Host says no" {
			t.Errorf("tool results %+v", trs)
		}
		if res.IsError {
			t.Errorf("a deny ends the turn normally: %+v", res)
		}
	})
	t.Run("no_handler", func(t *testing.T) {
		t.Parallel()
		msgs, _ := permissionTurn(t, nil)
		trs := toolResults(msgs)
		if len(trs) != 1 || !trs[0].IsError || !strings.Contains(trs[0].ResultText(), "Unsupported control request subtype: can_use_tool") {
			t.Errorf("tool results %+v", trs)
		}
	})
	t.Run("handler_unsupported", func(t *testing.T) {
		t.Parallel()
		msgs, _ := permissionTurn(t, func(ctx context.Context, req *ControlRequest) (any, error) {
			return nil, ErrUnsupportedControl
		})
		trs := toolResults(msgs)
		if len(trs) != 1 || !strings.Contains(trs[0].ResultText(), "Unsupported control request subtype: can_use_tool") {
			t.Errorf("tool results %+v", trs)
		}
	})
	t.Run("handler_panics", func(t *testing.T) {
		t.Parallel()
		msgs, _ := permissionTurn(t, func(ctx context.Context, req *ControlRequest) (any, error) {
			panic("boom")
		})
		trs := toolResults(msgs)
		if len(trs) != 1 || !trs[0].IsError || !strings.Contains(trs[0].ResultText(), "panicked: boom") {
			t.Errorf("tool results %+v", trs)
		}
	})
}

// TestFakeControlCancel: an interrupt while can_use_tool waits makes the CLI
// send control_cancel_request, which must cancel the handler's context.
func TestFakeControlCancel(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	cancelled := make(chan error, 1)
	opts := fakeOptions(t)
	opts.PermissionPromptStdio = true
	opts.OnControlRequest = func(ctx context.Context, req *ControlRequest) (any, error) {
		close(started)
		<-ctx.Done()
		cancelled <- ctx.Err()
		return Deny("too late"), nil
	}
	p := startFake(t, opts)
	initialize(t, p)
	if err := p.SendUser("TOOL_BASH[touch x]"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(waitLimit):
		t.Fatal("the handler was never called")
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := p.Interrupt(ctx); err != nil {
		t.Fatalf("Interrupt: %v", err)
	}
	select {
	case err := <-cancelled:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("handler ctx ended with %v", err)
		}
	case <-time.After(waitLimit):
		t.Fatal("control_cancel_request did not cancel the handler's context")
	}
	_, res := untilResult(t, p)
	if res.Subtype != "error_during_execution" || res.TerminalReason != "aborted_tools" {
		t.Errorf("result %q / %q", res.Subtype, res.TerminalReason)
	}
	select {
	case <-p.Exited():
		t.Fatal("the CLI exited; the cancel must not have come from the process ending")
	default:
	}
	if _, res := turn(t, p, "hi"); res.IsError {
		t.Errorf("next turn %+v", res)
	}
	// The handler returned an answer after the cancel; it must not be sent.
	// (Checked after a full round trip, by which time it would have arrived.)
	if tail := p.StderrTail(); strings.Contains(tail, "cancelled control request") {
		t.Errorf("the host answered a cancelled request: %s", tail)
	}
}

func TestFakeUnsupportedControlFromHost(t *testing.T) {
	t.Parallel()
	p := startFake(t, fakeOptions(t))
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	_, err := p.Control(ctx, "frobnicate", map[string]any{"x": 1})
	var ce *ControlError
	if !errors.As(err, &ce) || ce.Subtype != "frobnicate" || ce.Message != "Unsupported control request subtype: frobnicate" {
		t.Fatalf("Control(frobnicate) = %v", err)
	}
	if _, err := p.Control(ctx, "frobnicate", "not an object"); err == nil || errors.As(err, &ce) {
		t.Errorf("a non-object body was sent: %v", err)
	}
	// Many concurrent requests: the writes must not interleave (a broken
	// line makes the CLI exit) and each answer must reach its caller.
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sub := fmt.Sprintf("unknown_%d", i)
			_, err := p.Control(ctx, sub, map[string]any{"pad": strings.Repeat("x", 10_000)})
			if !errors.As(err, new(*ControlError)) || !strings.HasSuffix(err.Error(), sub) {
				errs <- fmt.Errorf("%s: %v", sub, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
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

func TestFakeBigLine(t *testing.T) {
	t.Parallel()
	p := startFake(t, fakeOptions(t))
	initialize(t, p)
	msgs, res := turn(t, p, "BIGTEXT")
	a := filter[*AssistantMessage](msgs)
	if len(a) != 1 || len(a[0].Message.Content) != 1 {
		t.Fatalf("assistant messages %s", types(msgs))
	}
	if n := len(a[0].Message.Content[0].Text); n != fakeapi.BigTextSize {
		t.Errorf("assistant text is %d bytes, want %d", n, fakeapi.BigTextSize)
	}
	if len(res.Result) != fakeapi.BigTextSize || len(res.Raw()) < fakeapi.BigTextSize {
		t.Errorf("result text %d bytes, line %d bytes", len(res.Result), len(res.Raw()))
	}
}

func TestFakeLineCap(t *testing.T) {
	t.Parallel()
	var logs testkit.Buffer
	opts := fakeOptions(t)
	opts.MaxLineBytes = 1 << 20
	opts.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	p := startFake(t, opts)
	for _, text := range []string{"BIGTEXT", "hi"} {
		if err := p.SendUser(text); err != nil {
			t.Fatal(err)
		}
	}
	// BIGTEXT's 2 MB assistant and result lines are over the cap: skipped,
	// and the next turn is read normally.
	msgs, res := untilResult(t, p)
	if got := types(msgs); got != "system/init,system/init,assistant,result" {
		t.Errorf("messages %s", got)
	}
	if res.Result != "Hello from fake API (n_messages=1)" {
		t.Errorf("result %q", textcut.Cut(res.Result, 100))
	}
	if n := strings.Count(logs.String(), "skipping a stdout line longer than the cap"); n != 2 {
		t.Errorf("%d skip warnings, want 2; logs:\n%s", n, logs.String())
	}
}

func TestFakeNoise(t *testing.T) {
	t.Parallel()
	var logs testkit.Buffer
	opts := fakeOptions(t, "FAKE_CLAUDE_NOISE", "1")
	opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	p := startFake(t, opts)
	initialize(t, p)
	msgs, res := turn(t, p, "hi")
	if got := types(msgs); got != "raw:frobnicate,system/fake_unknown_subtype,system/init,assistant,result" {
		t.Errorf("messages %s", got)
	}
	raw := filter[*RawMessage](msgs)
	if len(raw) != 1 || raw[0].MsgType != "frobnicate" || string(raw[0].Raw()) != `{"type":"frobnicate","x":1}` {
		t.Errorf("raw messages %+v", raw)
	}
	if res.IsError {
		t.Errorf("result %+v", res)
	}
	if !strings.Contains(logs.String(), "not json at all") {
		t.Errorf("the non-JSON line was not logged as skipped:\n%s", logs.String())
	}
	// A second turn gets the noise again and still completes.
	if msgs, _ := turn(t, p, "again"); len(filter[*RawMessage](msgs)) != 1 {
		t.Errorf("second turn %s", types(msgs))
	}
}

func TestFakeExitEarly(t *testing.T) {
	t.Parallel()
	p := startFake(t, fakeOptions(t, "FAKE_CLAUDE_EXIT_EARLY", "3:Error: simulated startup failure"))
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if _, err := p.Initialize(ctx, InitializeRequest{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Initialize on a dead CLI: %v", err)
	}
	if m, err := p.Next(ctx); err != io.EOF {
		t.Errorf("Next = %v, %v; want io.EOF", m, err)
	}
	err := p.Wait()
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != 3 || ee.Signal != "" {
		t.Fatalf("Wait = %#v", err)
	}
	if ee.StderrTail != "Error: simulated startup failure" {
		t.Errorf("stderr tail %q", ee.StderrTail)
	}
	if msg := err.Error(); !strings.Contains(msg, "code 3") || !strings.Contains(msg, "simulated startup failure") {
		t.Errorf("Error() = %q", msg)
	}
	// Writes after the exit fail with ErrClosed.
	if err := p.SendUser("hi"); !errors.Is(err, ErrClosed) {
		t.Errorf("SendUser after exit: %v", err)
	}
	if err := p.Interrupt(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("Interrupt after exit: %v", err)
	}
}

func TestFakeDiesMidTurn(t *testing.T) {
	t.Parallel()
	p := startFake(t, fakeOptions(t, "FAKE_CLAUDE_DIE_AFTER_MS", "300"))
	initialize(t, p)
	if err := p.SendUser("SLOW"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	var msgs []Message
	for {
		m, err := p.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		msgs = append(msgs, m)
	}
	if len(filter[*ResultMessage](msgs)) != 0 {
		t.Errorf("a crashed turn produced a result: %s", types(msgs))
	}
	var ee *ExitError
	if err := p.Wait(); !errors.As(err, &ee) || ee.Code != 1 || !strings.Contains(ee.StderrTail, "fatal: simulated crash") {
		t.Errorf("Wait = %v", err)
	}
	if err := p.Interrupt(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("Interrupt after crash: %v", err)
	}
}

func TestFakeStderrFlood(t *testing.T) {
	t.Parallel()
	// 30,000 lines (~1.3 MB) fill the stderr pipe many times over: the
	// fake blocks unless the host drains stderr.
	p := startFake(t, fakeOptions(t, "FAKE_CLAUDE_STDERR_FLOOD", "30000"))
	initialize(t, p)
	turn(t, p, "hi")
	tail := strings.Split(p.StderrTail(), "\n")
	if len(tail) != 40 || tail[39] != "fake claude stderr flood line 30000 of 30000" {
		t.Errorf("stderr tail has %d lines, last %q", len(tail), tail[len(tail)-1])
	}
}

func TestFakeSIGTERMOnHang(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGTERM on Windows")
	}
	t.Parallel()
	opts := fakeOptions(t, "FAKE_CLAUDE_HANG_ON_EOF", "1")
	opts.CloseTimeout = 300 * time.Millisecond
	p := startFake(t, opts)
	turn(t, p, "hi")
	start := time.Now()
	err := closeAndWait(t, p)
	d := time.Since(start)
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Signal != "SIGTERM" || ee.Code != -1 || ee.Error() != "claude was killed by SIGTERM" {
		t.Errorf("exit = %#v, want killed by SIGTERM", err)
	}
	if d < 300*time.Millisecond || d > 300*time.Millisecond+3*time.Second {
		t.Errorf("Close took %s, want the 300ms stdin stage then SIGTERM", d)
	}
}

func TestFakeSIGKILLWhenSIGTERMIgnored(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGTERM on Windows")
	}
	t.Parallel()
	opts := fakeOptions(t, "FAKE_CLAUDE_HANG_ON_EOF", "1", "FAKE_CLAUDE_IGNORE_SIGTERM", "1")
	opts.CloseTimeout = 300 * time.Millisecond
	p := startFake(t, opts)
	turn(t, p, "hi")
	start := time.Now()
	err := closeAndWait(t, p)
	d := time.Since(start)
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Signal != "SIGKILL" {
		t.Errorf("exit = %#v, want killed by SIGKILL", err)
	}
	if d < 600*time.Millisecond || d > 600*time.Millisecond+3*time.Second {
		t.Errorf("Close took %s, want two 300ms stages then SIGKILL", d)
	}
}

func TestFakeCloseIdempotentConcurrent(t *testing.T) {
	t.Parallel()
	p := startFake(t, fakeOptions(t))
	initialize(t, p)
	var wg sync.WaitGroup
	errs := make([]error, 16)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = p.Close()
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Close #%d: %v", i, err)
		}
	}
	select {
	case <-p.Done():
	default:
		t.Fatal("Done is not closed after Close returned")
	}
	if err := p.Close(); err != nil {
		t.Errorf("Close again: %v", err)
	}
	if err := p.Wait(); err != nil {
		t.Errorf("an idle CLI closed by EOF exits 0: %v", err)
	}
	if err := p.SendUser("hi"); !errors.Is(err, ErrClosed) {
		t.Errorf("SendUser after Close: %v", err)
	}
	if err := p.Send(map[string]any{"type": "keep_alive"}); !errors.Is(err, ErrClosed) {
		t.Errorf("Send after Close: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if _, err := p.Control(ctx, "interrupt", nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Control after Close: %v", err)
	}
	if _, err := p.Next(ctx); err != io.EOF {
		t.Errorf("Next after Close: %v", err)
	}
	// Kill after the end is harmless.
	p.Kill()
}

func TestFakeCloseMidTurnFinishesTurn(t *testing.T) {
	t.Parallel()
	p := startFake(t, fakeOptions(t, "FAKE_CLAUDE_SPEED", "4"))
	initialize(t, p)
	if err := p.SendUser("SLOW4"); err != nil {
		t.Fatal(err)
	}
	nextOf[*SystemMessage](t, p)
	// Closing stdin lets the running turn finish (the CLI does the same).
	p.CloseInput()
	msgs, res := untilResult(t, p)
	if res.IsError || res.Result != "chunk0 chunk1 chunk2 chunk3 " {
		t.Errorf("result %q is_error %v after %s", res.Result, res.IsError, types(msgs))
	}
	if err := p.Wait(); err != nil {
		t.Errorf("Wait: %v", err)
	}
}

func TestFakeControlTimeout(t *testing.T) {
	t.Parallel()
	opts := fakeOptions(t, "FAKE_CLAUDE_IGNORE_CONTROL", "set_model")
	opts.ControlTimeout = 300 * time.Millisecond
	p := startFake(t, opts)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	start := time.Now()
	err := p.SetModel(ctx, "opus")
	d := time.Since(start)
	if !errors.Is(err, ErrControlTimeout) {
		t.Fatalf("SetModel = %v, want ErrControlTimeout", err)
	}
	if d < 300*time.Millisecond || d > 3*time.Second {
		t.Errorf("timed out after %s, want ~300ms", d)
	}
	// ctx bounds the wait too.
	short, cancelShort := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancelShort()
	if err := p.SetModel(short, "opus"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("SetModel with a 50ms ctx = %v", err)
	}
	// Other requests still work.
	if err := p.Interrupt(ctx); err != nil {
		t.Errorf("Interrupt: %v", err)
	}
}

// TestFakeCLIAuthStatus: CLIAuthStatus reads `auth status` logged in, not
// logged in (exit 1, the status still printed), and fails on a CLI that
// prints no status.
func TestFakeCLIAuthStatus(t *testing.T) {
	t.Parallel()
	path, env := fakecli.Command(t)
	ctx := context.Background()
	st, err := CLIAuthStatus(ctx, path, env)
	if err != nil || st != (AuthStatus{LoggedIn: true, AuthMethod: "api_key", APIProvider: "firstParty"}) {
		t.Errorf("logged in: %+v, %v", st, err)
	}
	env[fakecli.EnvNotLoggedIn] = "1"
	st, err = CLIAuthStatus(ctx, path, env)
	if err != nil || st != (AuthStatus{LoggedIn: false, AuthMethod: "none", APIProvider: "firstParty"}) {
		t.Errorf("not logged in: %+v, %v", st, err)
	}
	if runtime.GOOS == "windows" {
		return
	}
	script := filepath.Join(t.TempDir(), "claude")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho '2.1.330 (Claude Code)'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if st, err := CLIAuthStatus(ctx, script, nil); err == nil || !strings.Contains(err.Error(), "auth status") || !strings.Contains(err.Error(), "2.1.330 (Claude Code)") {
		t.Errorf("no status: %+v, %v; want an error naming the command and what it printed", st, err)
	}
	// A CLI that never answers is killed when ctx ends.
	hang := filepath.Join(t.TempDir(), "claude")
	if err := os.WriteFile(hang, []byte("#!/bin/sh\nexec sleep 90\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if st, err := CLIAuthStatus(short, hang, nil); err == nil {
		t.Errorf("a hanging CLI: %+v", st)
	}
	if d := time.Since(start); d > time.Minute { // the CLI sleeps 90 s
		t.Errorf("a hanging CLI held CLIAuthStatus for %s after its context ended", d)
	}
}

func TestFakeCLIVersion(t *testing.T) {
	t.Parallel()
	path, env := fakecli.Command(t)
	ctx := context.Background()
	v, err := CLIVersionEnv(ctx, path, env)
	if err != nil || v != "2.1.197" {
		t.Fatalf("CLIVersionEnv = %q, %v", v, err)
	}

	env["FAKE_CLAUDE_VERSION"] = "1.0.0"
	v, err = CLIVersionEnv(ctx, path, env)
	if err == nil || v != "1.0.0" {
		t.Fatalf("old CLI: %q, %v", v, err)
	}
	for _, want := range []string{path, "1.0.0", MinVersion, "npm install -g @anthropic-ai/claude-code"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}

	env["FAKE_CLAUDE_VERSION"] = "unknown"
	if _, err := CLIVersionEnv(ctx, path, env); err == nil || !strings.Contains(err.Error(), "no version") {
		t.Errorf("no version: %v", err)
	}

	env["FAKE_CLAUDE_VERSION"] = ""
	env["FAKE_CLAUDE_EXIT_EARLY"] = "1:boom"
	if _, err := CLIVersionEnv(ctx, path, env); err != nil {
		t.Errorf("--version is answered before the fault injection: %v", err)
	}
	if _, err := CLIVersionEnv(ctx, filepath.Join(t.TempDir(), "missing"), env); err == nil ||
		!strings.Contains(err.Error(), "npm install -g @anthropic-ai/claude-code") {
		t.Errorf("missing binary: %v", err)
	}
}

// TestCLIVersionEnvAllowList: CLIVersion runs the binary with the
// allow-list of the server's environment alone: a variable outside it
// (the fake's version) does not reach it, one given by CLIVersionEnv does.
func TestCLIVersionEnvAllowList(t *testing.T) {
	path, env := fakecli.Command(t)
	t.Setenv("FAKE_CLAUDE_VERSION", "1.9.9")
	if v, err := CLIVersionEnv(context.Background(), path, env); v != fakecli.DefaultVersion || err != nil {
		t.Errorf("CLIVersionEnv = %q, %v; want the fake's default %s: FAKE_CLAUDE_VERSION is no variable a CLI inherits", v, err, fakecli.DefaultVersion)
	}
	env["FAKE_CLAUDE_VERSION"] = "1.9.9"
	if v, err := CLIVersionEnv(context.Background(), path, env); v != "1.9.9" || err == nil {
		t.Errorf("CLIVersionEnv = %q, %v; want 1.9.9 and a too-old error", v, err)
	}
}

func TestParseAndCompareVersions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		out  string
		want string
		ok   bool
	}{
		{"2.1.197 (Claude Code)", "2.1.197", true},
		{"claude 10.20.30\n", "10.20.30", true},
		{"1.2", "", false},
		{"", "", false},
	} {
		got, ok := ParseVersion(tc.out)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseVersion(%q) = %q, %v", tc.out, got, ok)
		}
	}
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"2.1.197", "2.0.0", 1}, {"2.0.0", "2.0.0", 0}, {"1.99.99", "2.0.0", -1},
		{"2.10.0", "2.9.0", 1}, {"2.1.9", "2.1.10", -1},
	} {
		if got := CompareVersions(tc.a, tc.b); got != tc.want {
			t.Errorf("CompareVersions(%s, %s) = %d", tc.a, tc.b, got)
		}
	}
}

func TestOptionsArgs(t *testing.T) {
	t.Parallel()
	base := []string{"--output-format", "stream-json", "--input-format", "stream-json", "--verbose"}
	for _, tc := range []struct {
		name string
		opts Options
		want []string
	}{
		{"zero", Options{}, nil},
		{"model", Options{SessionOptions: SessionOptions{Model: "sonnet"}}, []string{"--model=sonnet"}},
		{"permission_mode", Options{SessionOptions: SessionOptions{PermissionMode: "plan"}}, []string{"--permission-mode=plan"}},
		// Text goes by initialize, never on the command line.
		{"system_prompt", Options{SessionOptions: SessionOptions{SystemPrompt: "be brief"}}, nil},
		{"append_system_prompt", Options{SessionOptions: SessionOptions{AppendSystemPrompt: "and kind"}}, nil},
		{"allowed_tools", Options{SessionOptions: SessionOptions{AllowedTools: []string{"Read", "Bash(git:*)"}}}, []string{"--allowedTools=Read,Bash(git:*)"}},
		{"disallowed_tools", Options{SessionOptions: SessionOptions{DisallowedTools: []string{"Write"}}}, []string{"--disallowedTools=Write"}},
		{"max_turns", Options{SessionOptions: SessionOptions{MaxTurns: 3}}, []string{"--max-turns=3"}},
		{"max_turns_negative", Options{SessionOptions: SessionOptions{MaxTurns: -1}}, nil},
		{"resume", Options{Resume: "-abc"}, []string{"--resume=-abc"}},
		{"fork", Options{Resume: "abc", ForkSession: true}, []string{"--resume=abc", "--fork-session"}},
		{"session_id", Options{SessionID: "u-1"}, []string{"--session-id=u-1"}},
		// A document is a file of the process's private directory (its
		// name alone before the start).
		{"mcp_config", Options{MCPConfig: `{"mcpServers":{}}`, StrictMCPConfig: true}, []string{"--mcp-config=mcp-config.json", "--strict-mcp-config"}},
		{"mcp_config_file", Options{MCPConfig: "/etc/mcp.json"}, []string{"--mcp-config=/etc/mcp.json"}},
		{"add_dirs", Options{SessionOptions: SessionOptions{AddDirs: []string{"/a", "/b"}}}, []string{"--add-dir=/a", "--add-dir=/b"}},
		{"tools", Options{SessionOptions: SessionOptions{Tools: []string{"Read", "Grep"}}}, []string{"--tools=Read,Grep"}},
		{"no_tools", Options{SessionOptions: SessionOptions{Tools: []string{}}}, []string{"--tools="}},
		{"effort", Options{SessionOptions: SessionOptions{Effort: "high"}}, []string{"--effort=high"}},
		{"json_schema", Options{SessionOptions: SessionOptions{JSONSchema: json.RawMessage(`{ "type": "object" }`)}}, nil},
		{"budget", Options{SessionOptions: SessionOptions{MaxBudgetUSD: 0.25}}, []string{"--max-budget-usd=0.25"}},
		{"agents", Options{SessionOptions: SessionOptions{Agents: json.RawMessage(`{"r":{"description":"d","prompt":"p"}}`)}}, nil},
		{"settings_object", Options{SessionOptions: SessionOptions{Settings: json.RawMessage(`{"model": "x"}`)}}, []string{"--settings=settings.json"}},
		{"settings_file", Options{SessionOptions: SessionOptions{SettingsFile: "/etc/s.json"}}, []string{"--settings=/etc/s.json"}},
		{"settings_file_persisted", Options{SessionOptions: SessionOptions{Settings: json.RawMessage(`"/etc/s.json"`)}}, []string{"--settings=/etc/s.json"}},
		{"setting_sources", Options{SessionOptions: SessionOptions{SettingSources: []string{"user", "project"}}}, []string{"--setting-sources=user,project"}},
		{"no_setting_sources", Options{SessionOptions: SessionOptions{SettingSources: []string{}}}, []string{"--setting-sources="}},
		{"fallback", Options{SessionOptions: SessionOptions{FallbackModel: "haiku"}}, []string{"--fallback-model=haiku"}},
		{"agent", Options{SessionOptions: SessionOptions{Agent: "reviewer"}}, []string{"--agent=reviewer"}},
		{"name", Options{SessionOptions: SessionOptions{Name: "-reviewer"}}, []string{"--name=-reviewer"}},
		{"partial", Options{IncludePartialMessages: true}, []string{"--include-partial-messages"}},
		{"stdio", Options{PermissionPromptStdio: true}, []string{"--permission-prompt-tool", "stdio"}},
		{"allow_bypass", Options{AllowDangerouslySkipPermissions: true}, []string{"--allow-dangerously-skip-permissions"}},
		{"extra", Options{ExtraArgs: []string{"--effort=high"}}, []string{"--effort=high"}},
		{"not_flags", Options{Path: "/x", Cwd: "/y", Env: map[string]string{"A": "b"}, MaxLineBytes: 5,
			ControlTimeout: time.Second, CloseTimeout: time.Second, StderrLines: 3}, nil},
		{"order", Options{SessionOptions: SessionOptions{Model: "m", MaxTurns: 1}, PermissionPromptStdio: true, ExtraArgs: []string{"--x"}},
			[]string{"--model=m", "--max-turns=1", "--permission-prompt-tool", "stdio", "--x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.opts.Args()
			want := append(append([]string(nil), base...), tc.want...)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Args() =\n %q\nwant\n %q", got, want)
			}
		})
	}
}

// TestOptionsEnviron: a CLI gets an allow-list of the server's
// environment (what it needs: paths, locale, its credentials and
// settings), never a variable of the server's own (CLAUDE_AGENT_MCP_*,
// its token among them), not even through Env; CLAUDECODE is dropped;
// CLAUDE_CODE_ENTRYPOINT and PWD are set; Env wins over the rest.
func TestOptionsEnviron(t *testing.T) {
	t.Setenv("CLAUDECODE", "1")
	t.Setenv("CLAUDE_CODE_ENTRYPOINT", "sdk-py")
	t.Setenv("PWD", "/somewhere/else")
	t.Setenv("LANG", "kept")
	t.Setenv("ANTHROPIC_API_KEY", "kept")
	t.Setenv("CLAUDE_CODE_USE_BEDROCK", "kept")
	t.Setenv("CLAUDE_AGENT_MCP_TOKEN", "secret")
	t.Setenv("CLAUDE_AGENT_MCP_STORE", "postgres://agent:secret@db/agent")
	t.Setenv("DATABASE_URL", "postgres://agent:secret@db/agent")
	t.Setenv("SSH_AUTH_SOCK", "/run/agent.sock")
	t.Setenv("GITHUB_TOKEN", "secret")

	parse := func(env []string) map[string]string {
		t.Helper()
		m := map[string]string{}
		for _, kv := range env {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				t.Errorf("malformed entry %q", kv)
			}
			if _, dup := m[k]; dup {
				t.Errorf("duplicate key %s", k)
			}
			m[k] = v
		}
		return m
	}
	o := Options{Env: map[string]string{"LANG": "new", "EXTRA": "x", "CLAUDE_AGENT_MCP_TOKEN": "smuggled"}}
	env := parse(o.Environ("/work/dir"))
	for _, k := range []string{"CLAUDECODE", "CLAUDE_AGENT_MCP_TOKEN", "CLAUDE_AGENT_MCP_STORE", "DATABASE_URL", "SSH_AUTH_SOCK", "GITHUB_TOKEN"} {
		if v, ok := env[k]; ok {
			t.Errorf("%s=%s reached the CLI", k, v)
		}
	}
	for k, want := range map[string]string{
		"CLAUDE_CODE_ENTRYPOINT":  Entrypoint,
		"PWD":                     "/work/dir",
		"ANTHROPIC_API_KEY":       "kept",
		"CLAUDE_CODE_USE_BEDROCK": "kept",
		"LANG":                    "new",
		"EXTRA":                   "x",
	} {
		if env[k] != want {
			t.Errorf("%s = %q, want %q", k, env[k], want)
		}
	}
	for k := range env {
		if strings.HasPrefix(k, "CLAUDE_AGENT_MCP_") {
			t.Errorf("%s reached the CLI", k)
		}
	}
	if Entrypoint != "claude-agent-mcp" {
		t.Errorf("Entrypoint = %q", Entrypoint)
	}
	// Env wins over the defaults too.
	o = Options{Env: map[string]string{"CLAUDE_CODE_ENTRYPOINT": "mine", "PWD": "/p"}}
	if env := parse(o.Environ("/work/dir")); env["CLAUDE_CODE_ENTRYPOINT"] != "mine" || env["PWD"] != "/p" {
		t.Errorf("Env did not win: %v %v", env["CLAUDE_CODE_ENTRYPOINT"], env["PWD"])
	}
	// No cwd: no PWD (the server's is not the CLI's).
	if env := parse((&Options{}).Environ("")); env["PWD"] != "" {
		t.Errorf("PWD = %q", env["PWD"])
	}
}

func TestFindCLI(t *testing.T) {
	const hint = "npm install -g @anthropic-ai/claude-code"
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope", "claude")
	_, err := FindCLI(missing)
	if !errors.Is(err, ErrCLINotFound) || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), hint) {
		t.Errorf("FindCLI(missing) = %v", err)
	}
	_, err = FindCLI(dir)
	if !errors.Is(err, ErrCLINotFound) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "directory") {
		t.Errorf("FindCLI(dir) = %v", err)
	}
	t.Setenv("PATH", dir)
	_, err = FindCLI("")
	if !errors.Is(err, ErrCLINotFound) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), hint) {
		t.Errorf("FindCLI(\"\") with an empty PATH = %v", err)
	}
	_, err = FindCLI("claude-custom-name")
	if !errors.Is(err, ErrCLINotFound) || !strings.Contains(err.Error(), "claude-custom-name") || !strings.Contains(err.Error(), hint) {
		t.Errorf("FindCLI(name) = %v", err)
	}
	if runtime.GOOS == "windows" {
		return
	}
	bin := filepath.Join(dir, "claude")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := FindCLI(""); err != nil || got != bin {
		t.Errorf("FindCLI on PATH = %q, %v", got, err)
	}
	if got, err := FindCLI(bin); err != nil || got != bin {
		t.Errorf("FindCLI(path) = %q, %v", got, err)
	}
	if _, err := Start(context.Background(), Options{Path: missing}); !errors.Is(err, ErrCLINotFound) {
		t.Errorf("Start with a missing CLI: %v", err)
	}
}

func TestFakeRejectsBadFlags(t *testing.T) {
	t.Parallel()
	// The fake checks the stream-json flags like the CLI does, so a broken
	// Args() shows up as an exit; sanity-check that with a direct call.
	path, env := fakecli.Command(t)
	opts := Options{Path: path, Cwd: t.TempDir(), Env: env, ExtraArgs: []string{"--output-format", "json"}}
	p := startFake(t, opts)
	var ee *ExitError
	if err := p.Wait(); !errors.As(err, &ee) || ee.Code != 1 {
		t.Errorf("Wait = %v", err)
	}
}

package claudeagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// Control requests of a Process against the fake CLI: from the host
// (set_model, set_permission_mode, unknown subtypes, their timeout) and
// from the CLI (can_use_tool, and its cancel).

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

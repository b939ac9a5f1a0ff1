package claudeagent

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakeapi"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakecli"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/textcut"
)

// A fake CLI that misbehaves: lines over the cap, noise, an early exit, a
// crash mid-turn, a stderr flood, flags it rejects.

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

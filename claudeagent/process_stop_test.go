package claudeagent

import (
	"context"
	"errors"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// Stopping a Process against the fake CLI: interrupting a turn, closing
// (concurrently, mid-turn), and the SIGTERM and SIGKILL stages of Close.

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

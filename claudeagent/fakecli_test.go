package claudeagent

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakecli"
)

// The plumbing of the tests against the fake CLI (internal/testkit/fakecli),
// which replays captures of the real CLI 2.1.197 (testdata/streams): a
// Process on it, its turns and messages. The tests are beside it, named
// for what they test (process_turn, process_control, process_stop,
// process_faults, find, options). The real CLI itself is covered by the
// end-to-end tests elsewhere.

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

package fakecli

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// fakeRun is the fake serving one stream-json session on pipes.
type fakeRun struct {
	stdin io.WriteCloser
	lines *bufio.Scanner
	code  chan int
}

func startFake(t *testing.T, extra ...string) *fakeRun {
	t.Setenv(EnvSpeed, "4")
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	args := append([]string{"-p", "--output-format", "stream-json", "--input-format", "stream-json", "--verbose"}, extra...)
	r := &fakeRun{stdin: inW, lines: bufio.NewScanner(outR), code: make(chan int, 1)}
	r.lines.Buffer(nil, 4<<20)
	go func() {
		r.code <- run(args, inR, outW, io.Discard)
		outW.Close()
	}()
	t.Cleanup(func() {
		inW.Close()
		go func() { _, _ = io.Copy(io.Discard, outR) }()
		<-r.code
	})
	return r
}

func (r *fakeRun) send(t *testing.T, text string) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": text}, "parent_tool_use_id": nil, "session_id": ""})
	if _, err := r.stdin.Write(append(b, '\n')); err != nil {
		t.Fatal(err)
	}
}

// until reads lines until one satisfies ok, counting results and deltas
// on the way; it fails at the end of stdout.
func (r *fakeRun) until(t *testing.T, ok func(typ, line string) bool) (results, deltas int) {
	t.Helper()
	for r.lines.Scan() {
		line := r.lines.Text()
		var head struct{ Type string }
		_ = json.Unmarshal([]byte(line), &head)
		switch {
		case head.Type == "result":
			results++
		case head.Type == "stream_event" && strings.Contains(line, `"text_delta"`):
			deltas++
		}
		if ok(head.Type, line) {
			return results, deltas
		}
	}
	t.Fatalf("stdout ended (%d results, %d deltas so far)", results, deltas)
	return
}

// rest closes stdin and counts the results and deltas still written.
func (r *fakeRun) rest(t *testing.T) (results, deltas int) {
	t.Helper()
	r.stdin.Close()
	for r.lines.Scan() {
		line := r.lines.Text()
		switch {
		case strings.HasPrefix(line, `{"type":"result"`):
			results++
		case strings.HasPrefix(line, `{"type":"stream_event"`) && strings.Contains(line, `"text_delta"`):
			deltas++
		}
	}
	return results, deltas
}

// TestSteerFolded: a message sent while the turn's tool call runs is
// folded into that turn: one result, no turn of its own.
func TestSteerFolded(t *testing.T) {
	r := startFake(t, "--permission-mode", "bypassPermissions")
	r.send(t, "TOOL_BASH[sleep 1; echo slept]")
	r.until(t, func(typ, line string) bool { return typ == "assistant" && strings.Contains(line, `"tool_use"`) })
	r.send(t, "STEERED also say hi")
	results, _ := r.until(t, func(typ, _ string) bool { return typ == "result" })
	more, _ := r.rest(t)
	if results+more != 1 {
		t.Errorf("%d results, want 1: the message was not folded into the turn", results+more)
	}
}

// TestSteerFollowUp: a message sent while the final answer streams gets a
// turn of its own after the running one (two results); with
// --include-partial-messages the answer streams as text deltas, and
// without it none are written.
func TestSteerFollowUp(t *testing.T) {
	r := startFake(t, "--include-partial-messages")
	r.send(t, "SLOW4")
	r.until(t, func(typ, line string) bool { return typ == "stream_event" && strings.Contains(line, `"chunk0 "`) })
	r.send(t, "STEERED also say hi")
	results, deltas := r.until(t, func(typ, _ string) bool { return typ == "result" })
	more, _ := r.rest(t)
	if results+more != 2 {
		t.Errorf("%d results, want 2: the message did not get a turn of its own", results+more)
	}
	if deltas != 3 {
		t.Errorf("%d text deltas after chunk0 before the first result, want 3 (one per chunk)", deltas)
	}

	r = startFake(t)
	r.send(t, "SLOW3")
	_, deltas = r.until(t, func(typ, _ string) bool { return typ == "result" })
	if deltas != 0 {
		t.Errorf("%d text deltas without --include-partial-messages", deltas)
	}
}

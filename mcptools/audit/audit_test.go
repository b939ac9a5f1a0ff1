package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestStartedFinish: a call's started line hashes its prompt (text only
// with prompts on), and its outcome line cuts the call's string arguments
// out of the error.
func TestStartedFinish(t *testing.T) {
	for _, prompts := range []bool{false, true} {
		var buf bytes.Buffer
		a := New(&buf, "audit.log", Options{Prompts: prompts})
		args := json.RawMessage(`{"sessionId":"s1","prompt":"the secret plan","systemPrompt":"hidden words"}`)
		start := time.Now()
		e, err := a.Started("alice", "claude_chat_query", args, start)
		if err != nil {
			t.Fatal(err)
		}
		e.Outcome, e.Error = "tool_error", `bad: "the secret plan" and hidden words`
		a.Finish(e, args, start)
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		if len(lines) != 2 {
			t.Fatalf("%d lines: %s", len(lines), buf.String())
		}
		var first, last Entry
		_ = json.Unmarshal([]byte(lines[0]), &first)
		_ = json.Unmarshal([]byte(lines[1]), &last)
		if first.Outcome != "started" || first.User != "alice" || first.Session != "s1" || first.PromptBytes != 15 || len(first.PromptSHA256) != 64 {
			t.Errorf("started: %+v", first)
		}
		if (first.Prompt != "") != prompts {
			t.Errorf("prompts %v: the prompt's text is %q", prompts, first.Prompt)
		}
		if strings.Contains(last.Error, "secret") || strings.Contains(last.Error, "hidden") || !strings.Contains(last.Error, "[redacted]") {
			t.Errorf("the error keeps the arguments: %q", last.Error)
		}
	}
}

type failing struct{}

func (failing) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// TestFailsClosed: a line that cannot be written is an error naming the
// log; a nil log audits nothing.
func TestFailsClosed(t *testing.T) {
	a := New(failing{}, "/var/log/x.audit", Options{})
	if _, err := a.Started("u", "t", nil, time.Now()); err == nil || !strings.Contains(err.Error(), "--audit-log /var/log/x.audit") {
		t.Errorf("a failed write = %v", err)
	}
	var none *Log
	if _, err := none.Started("u", "t", nil, time.Now()); err != nil {
		t.Errorf("a nil log: %v", err)
	}
	if New(nil, "x", Options{}) != nil {
		t.Error("New(nil) is a log")
	}
}

package turn

import (
	"slices"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
)

// TestTurnSkipsForeignResults: the result of a turn the CLI started by
// itself (a background task finished), or of another user message, does
// not end the query's turn.
func TestTurnSkipsForeignResults(t *testing.T) {
	t.Parallel()
	tr := New(nil, nil)
	decode := func(line string) claudeagent.Message {
		m, err := claudeagent.DecodeMessage([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	if tr.Handle(decode(`{"type":"result","subtype":"success","result":"from a task","origin":{"kind":"task-notification"}}`)) {
		t.Error("a task notification's result ended the turn")
	}
	if tr.Handle(decode(`{"type":"result","subtype":"success","result":"another","user_message_uuids":["someone-else"]}`)) {
		t.Error("another message's result ended the turn")
	}
	if !tr.Handle(decode(`{"type":"result","subtype":"success","result":"mine","user_message_uuids":["` + tr.uuid + `"]}`)) {
		t.Fatal("the turn's own result did not end it")
	}
	if r := tr.Snapshot(0, WithoutThinking); r.FinalText != "mine" {
		t.Errorf("FinalText = %q", r.FinalText)
	}
}

// TestUnanswered: which steered messages a turn's result left for a turn
// of their own. CLI 2.1.330 names the messages a result answers; 2.1.197
// names none, and a message counts as folded in when a tool result came
// after it. A follow-up turn is ended by a result naming any message it
// answers (or by any result, from 2.1.197).
func TestUnanswered(t *testing.T) {
	msg := func(line string) claudeagent.Message {
		m, err := claudeagent.DecodeMessage([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	toolResult := msg(`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}}`)
	for _, tc := range []struct {
		name   string
		before bool   // the message was steered before the tool result
		result string // the result line
		want   []string
	}{
		{"2.1.197, during a tool call", true, `{"type":"result","subtype":"success"}`, nil},
		{"2.1.197, while the answer streamed", false, `{"type":"result","subtype":"success"}`, []string{"m2"}},
		{"2.1.330, named", false, `{"type":"result","user_message_uuids":["m1","m2"]}`, nil},
		{"2.1.330, not named", true, `{"type":"result","user_message_uuids":["m1"],"user_message_uuid":"m1"}`, []string{"m2"}},
	} {
		tr := New(nil, nil)
		tr.uuid = "m1"
		if tc.before {
			tr.AddSteer("m2", "also this")
			tr.Handle(toolResult)
		} else {
			tr.Handle(toolResult)
			tr.AddSteer("m2", "also this")
		}
		if ids, _ := tr.Unanswered(); ids != nil {
			t.Errorf("%s: unanswered %v before the result", tc.name, ids)
		}
		if !tr.Handle(msg(tc.result)) {
			t.Fatalf("%s: the result did not end the turn", tc.name)
		}
		if ids, texts := tr.Unanswered(); !slices.Equal(ids, tc.want) || len(texts) != len(ids) {
			t.Errorf("%s: unanswered %v %q, want %v", tc.name, ids, texts, tc.want)
		}
	}

	f := NewFollowUp([]string{"m2", "m3"}, nil, nil)
	if f.Handle(msg(`{"type":"result","user_message_uuids":["m1"]}`)) {
		t.Error("a follow-up ended by the result of another message")
	}
	if !f.Handle(msg(`{"type":"result","user_message_uuids":["m2","m3"]}`)) {
		t.Error("a follow-up not ended by the result naming its messages")
	}
	if f = NewFollowUp([]string{"m2"}, nil, nil); !f.Handle(msg(`{"type":"result","subtype":"success"}`)) {
		t.Error("a follow-up not ended by an unnamed result (2.1.197)")
	}
}

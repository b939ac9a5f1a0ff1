package turn

import (
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

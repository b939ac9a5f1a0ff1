package claudeagent

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestDecodeMessageForms: the type is read from the front of a line as the
// CLI writes it, and from the whole line in any other form; a block of a
// type ContentBlock does not hold keeps its JSON in Raw, the others do not
// carry a second copy.
func TestDecodeMessageForms(t *testing.T) {
	for _, line := range []string{
		`{"type":"assistant","message":{"id":"m","content":[{"type":"text","text":"hi"}]},"session_id":"s"}`,
		`{ "type" : "assistant", "message":{"id":"m","content":[{"type":"text","text":"hi"}]},"session_id":"s"}`,
		`{"session_id":"s","message":{"id":"m","content":[{"type":"text","text":"hi"}]},"type":"assistant"}`,
		`{"type":"assist\u0061nt","message":{"id":"m","content":[{"type":"text","text":"hi"}]},"session_id":"s"}`,
	} {
		m, err := DecodeMessage([]byte(line))
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		a, ok := m.(*AssistantMessage)
		if !ok || len(a.Message.Content) != 1 || a.Message.Content[0].Text != "hi" || a.SessionID != "s" {
			t.Errorf("%s decoded to %#v", line, m)
			continue
		}
		if a.Message.Content[0].Raw != nil {
			t.Errorf("%s: a text block carries its raw JSON", line)
		}
		if !bytes.Equal(a.Raw(), []byte(line)) {
			t.Errorf("Raw() = %s", a.Raw())
		}
	}
	line := `{"type":"assistant","message":{"id":"m","content":[{"type":"text","text":"a"},{"type":"server_tool_use","id":"x","name":"web_search","input":{"q":1}}]}}`
	m, err := DecodeMessage([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	blocks := m.(*AssistantMessage).Message.Content
	if len(blocks) != 2 || blocks[1].Raw == nil || !json.Valid(blocks[1].Raw) || !bytes.Contains(blocks[1].Raw, []byte(`"web_search"`)) {
		t.Errorf("an unknown block's Raw = %s", blocks[1].Raw)
	}
	u, err := DecodeMessage([]byte(`{"type":"user","message":{"role":"user","content":[{"type":"image","source":{"type":"base64"}},{"type":"tool_result","tool_use_id":"t","content":"ok"}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	ub := u.(*UserMessage).Blocks()
	if len(ub) != 2 || !bytes.Contains(ub[0].Raw, []byte(`"base64"`)) || ub[1].Raw != nil || ub[1].ResultText() != "ok" {
		t.Errorf("user blocks %+v", ub)
	}
	// A type not read from the front still decodes; an unknown type is a
	// RawMessage with its subtype.
	r, err := DecodeMessage([]byte(`{"subtype":"x","type":"novel"}`))
	if err != nil || r.Type() != "novel" || r.(*RawMessage).Subtype != "x" {
		t.Errorf("an unknown type: %#v, %v", r, err)
	}
	// The line given is not kept: a caller may reuse its buffer.
	buf := []byte(`{"type":"result","subtype":"success","result":"done"}`)
	res, err := DecodeMessage(buf)
	if err != nil {
		t.Fatal(err)
	}
	copy(buf, bytes.Repeat([]byte("x"), len(buf)))
	if !json.Valid(res.Raw()) {
		t.Errorf("the message kept the caller's buffer: %s", res.Raw())
	}
}

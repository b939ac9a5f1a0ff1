package claudeagent

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestTextDeltaFastPath: a text delta decoded on the fast path is what the
// full decode gives — its text (escapes and all), type, ids and event —
// and a line of any other shape is left to the full decode.
func TestTextDeltaFastPath(t *testing.T) {
	full := func(line string) *StreamEvent {
		v := &StreamEvent{}
		if err := json.Unmarshal([]byte(line), v); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		var ev envelope
		_ = json.Unmarshal(v.Event, &ev)
		v.EventType = ev.Type
		return v
	}
	for _, line := range []string{
		`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"chunk1 "}},"session_id":"s1","parent_tool_use_id":null,"uuid":"u1"}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","index":12,"delta":{"type":"text_delta","text":"say \"hi\" \\ é\n\u00e9 }},"}},"session_id":"s1","parent_tool_use_id":"toolu_1","uuid":"u2"}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":""}},"session_id":"s1","parent_tool_use_id":null,"uuid":"u3","extra":1}`,
	} {
		raw := rawLine{raw: json.RawMessage(line)}
		fast, ok := decodeTextDelta([]byte(line), raw)
		if !ok {
			t.Errorf("not on the fast path: %s", line)
			continue
		}
		slow := full(line)
		text, thinking, ok := fast.TextDelta()
		wantText, _, _ := slow.TextDelta()
		if !ok || thinking || text != wantText || fast.EventType != slow.EventType || fast.SessionID != slow.SessionID ||
			fast.UUID != slow.UUID || !reflect.DeepEqual(fast.ParentToolUseID, slow.ParentToolUseID) {
			t.Errorf("fast %+v (text %q), full %+v (text %q)", fast, text, slow, wantText)
		}
		var a, b any
		if json.Unmarshal(fast.Event, &a) != nil || json.Unmarshal(slow.Event, &b) != nil || !reflect.DeepEqual(a, b) {
			t.Errorf("event %s, want %s", fast.Event, slow.Event)
		}
	}
	for _, line := range []string{
		`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}},"session_id":"s"}`,
		`{"type":"stream_event","event":{"type":"message_stop"},"session_id":"s"}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"unterminated}},"session_id":"s"}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}},"session_id":"s","event":{}}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","index":,"delta":{"type":"text_delta","text":"x"}},"session_id":"s"}`,
	} {
		if _, ok := decodeTextDelta([]byte(line), rawLine{}); ok {
			t.Errorf("on the fast path: %s", line)
		}
	}
}

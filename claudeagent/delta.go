package claudeagent

import (
	"bytes"
	"encoding/json"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/jsonstr"
)

// A text delta, as the CLI writes it, in one pass over its text: the
// prefix is a literal, the text one JSON string (jsonstr.Unquote: four
// times as fast as encoding/json on prose, whose newlines are escapes,
// fifteen on plain ASCII), the tail a few small fields. A line of any
// other shape (another event, a newer CLI's field order) is decoded in
// full instead.
//
//	{"type":"stream_event","event":{"type":"content_block_delta","index":0,
//	 "delta":{"type":"text_delta","text":"…"}},"session_id":"…",
//	 "parent_tool_use_id":null,"uuid":"…"}
var (
	deltaHead = []byte(`{"type":"stream_event","event":{"type":"content_block_delta","index":`)
	deltaText = []byte(`,"delta":{"type":"text_delta","text":"`)
)

// decodeTextDelta decodes line as a text delta; ok is false when it does
// not have that shape.
func decodeTextDelta(line []byte, raw rawLine) (*StreamEvent, bool) {
	if !bytes.HasPrefix(line, deltaHead) {
		return nil, false
	}
	i := len(deltaHead)
	for i < len(line) && line[i] >= '0' && line[i] <= '9' {
		i++
	}
	if i == len(deltaHead) || !bytes.HasPrefix(line[i:], deltaText) {
		return nil, false
	}
	start := i + len(deltaText) - 1 // the string's opening quote
	text, end, ok := jsonstr.Unquote(line[start:])
	end += start
	if !ok || !bytes.HasPrefix(line[end+1:], []byte(`}},`)) || line[len(line)-1] != '}' {
		return nil, false
	}
	v := &StreamEvent{rawLine: raw, EventType: "content_block_delta", delta: &deltaOf{text: text}}
	tail := append([]byte{'{'}, line[end+4:]...) // the fields after the event
	if json.Unmarshal(tail, v) != nil || v.Event != nil {
		return nil, false
	}
	v.Event = json.RawMessage(line[len(`{"type":"stream_event","event":`) : end+3])
	return v, true
}

// deltaOf is a text delta decoded on the fast path.
type deltaOf struct{ text string }

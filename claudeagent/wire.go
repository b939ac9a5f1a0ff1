package claudeagent

import (
	"errors"

	json "github.com/segmentio/encoding/json"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/jsonstr"
)

// The lines that carry an answer's text (an assistant line's text and
// thinking blocks, the result line's result) are decoded into these
// mirrors of their messages: the text fields are a jsonText, decoded by
// jsonstr. segmentio's decoder, fast on a plain ASCII string, unquotes a
// string with escapes at about 90 MB/s: 18–22 ms for an assistant line
// of 2 MB of prose (a newline every line), against about 8 ms this way
// (BENCHMARKS.md). Each mirror embeds its message, whose field of the
// same name it hides.

// jsonText is a string decoded by jsonstr.Unquote; null leaves it as it
// is, as encoding/json leaves a string.
type jsonText string

var errNotString = errors.New("json: cannot unmarshal a non-string into a text field")

// UnmarshalJSON implements json.Unmarshaler.
func (t *jsonText) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	s, end, ok := jsonstr.Unquote(b)
	if !ok || end != len(b)-1 {
		return errNotString
	}
	*t = jsonText(s)
	return nil
}

type blockWire struct {
	ContentBlock
	Text     jsonText `json:"text,omitempty"`
	Thinking jsonText `json:"thinking,omitempty"`
}

type assistantWire struct {
	AssistantMessage
	Message struct {
		APIMessage
		Content []blockWire `json:"content"`
	} `json:"message"`
}

type resultWire struct {
	ResultMessage
	Result jsonText `json:"result"`
}

// decodeAssistant decodes an assistant line into v (its raw line set).
func decodeAssistant(line []byte, v *AssistantMessage) error {
	w := assistantWire{AssistantMessage: *v}
	if err := json.Unmarshal(line, &w); err != nil {
		return err
	}
	*v = w.AssistantMessage
	v.Message = w.Message.APIMessage
	if w.Message.Content != nil {
		v.Message.Content = make([]ContentBlock, len(w.Message.Content))
		for i, b := range w.Message.Content {
			v.Message.Content[i] = b.ContentBlock
			v.Message.Content[i].Text, v.Message.Content[i].Thinking = string(b.Text), string(b.Thinking)
		}
	}
	return nil
}

// decodeResult decodes a result line into v (its raw line set).
func decodeResult(line []byte, v *ResultMessage) error {
	w := resultWire{ResultMessage: *v}
	if err := json.Unmarshal(line, &w); err != nil {
		return err
	}
	*v = w.ResultMessage
	v.Result = string(w.Result)
	return nil
}

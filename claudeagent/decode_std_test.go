package claudeagent

import (
	"bytes"
	stdjson "encoding/json"
	"reflect"
	"testing"
)

// The typed decode uses github.com/segmentio/encoding/json (already in the
// binary through the go-sdk), three times as fast on a 2 MB line as
// encoding/json, which validates a line in a pass of its own before it
// decodes it. FuzzDecodeMatchesStdlib holds it to encoding/json's results:
// every line either both refuse, or both decode to the same message.

// stdDecode is decodeOwned's typed decode done by encoding/json.
func stdDecode(line []byte, typ string) (Message, error) {
	raw := rawLine{raw: stdjson.RawMessage(bytes.TrimSpace(line))}
	var v Message
	switch typ {
	case "system":
		v = &SystemMessage{rawLine: raw}
	case "assistant":
		v = &AssistantMessage{rawLine: raw}
	case "user":
		v = &UserMessage{rawLine: raw}
	case "result":
		v = &ResultMessage{rawLine: raw}
	case "stream_event":
		v = &StreamEvent{rawLine: raw}
	case "rate_limit_event":
		v = &RateLimitEvent{rawLine: raw}
	default:
		return nil, nil
	}
	err := stdjson.Unmarshal(line, v)
	if se, ok := v.(*StreamEvent); ok && err == nil {
		var ev struct {
			Type string `json:"type"`
		}
		_ = stdjson.Unmarshal(se.Event, &ev)
		se.EventType = ev.Type
	}
	return v, err
}

func FuzzDecodeMatchesStdlib(f *testing.F) {
	for _, s := range streamSeeds(f) {
		f.Add(s)
	}
	for _, s := range junkSeeds {
		f.Add([]byte(s))
	}
	for _, s := range []string{
		`{"type":"assistant","message":{"content":[{"type":"text","text":"caf\u00e9 \ud83d\ude00 \"q\" \\ \/"}]}}`,
		"{\"type\":\"result\",\"result\":\"bad \xff utf-8\",\"total_cost_usd\":1e-3}",
		`{"type":"result","RESULT":"case","Total_Cost_USD":2,"num_turns":3.0}`,
		`{"type":"result","num_turns":"3"}`, `{"type":"result","num_turns":1.5}`,
		// The text fields read by jsonstr (wire.go): null, not a string,
		// another case, twice, a lone surrogate, a thinking block.
		`{"type":"assistant","message":{"content":[{"type":"text","text":null},{"type":"text","Text":"a\nb","text":"c\u00e9"}]}}`,
		`{"type":"assistant","message":{"content":[{"type":"thinking","thinking":"\ud83d x","signature":"s"},{"type":"text","text":5}]}}`,
		`{"type":"assistant","message":{"id":"m","content":null,"usage":{"output_tokens":1}},"message":{"content":[]}}`,
		`{"type":"result","result":null,"is_error":true}`, `{"type":"result","result":["x"]}`,
		`{"type":"result","result":"a\tb","Result":"\u0041\ud83d\ude00\/"}`,
		`{"type":"user","message":{"content":"plain"},"parent_tool_use_id":null}`,
		`{"type":"system","subtype":"init","tools":["a",null],"mcp_servers":[{"name":"x","status":"ok"}]}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","delta":{"type":"text_delta","text":"x"}}}`,
		// The CLI's own order: decoded on the fast path.
		`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"caf\u00e9 \"q\" }},"}},"session_id":"s","parent_tool_use_id":null,"uuid":"u"}`,
		`{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1795620428,"rateLimitType":"five_hour"}}`,
		`{"type":"rate_limit_event","rate_limit_info":{"status":"allowed","resetsAt":null,"utilization":"x"}}`,
		`{"type":"result","usage":{"input_tokens":12345678901234}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		got, err := decodeOwned(bytes.Clone(line))
		typ, _ := sniffType(bytes.TrimSpace(line))
		if got != nil {
			typ = got.Type()
		}
		want, werr := stdDecode(bytes.Clone(line), typ)
		if want == nil {
			return // not a typed message: the envelope decides, as before
		}
		if (err != nil) != (werr != nil) {
			// encoding/json refuses a few forms the faster decoder takes
			// (and the other way round) only where the line is not valid
			// JSON at all; a valid line must decode alike.
			if stdjson.Valid(bytes.TrimSpace(line)) {
				t.Fatalf("valid line %q: decodeOwned error %v, encoding/json error %v", line, err, werr)
			}
			return
		}
		if err != nil {
			return
		}
		if a, ok := got.(*AssistantMessage); ok {
			for i := range a.Message.Content {
				a.Message.Content[i].Raw = nil // kept for block types ContentBlock does not hold; stdDecode keeps none
			}
		}
		if se, ok := got.(*StreamEvent); ok {
			// A text delta decoded on the fast path (delta.go) carries its
			// text: the same as decoding the event in full gives.
			gt, gth, gok := se.TextDelta()
			wt, wth, wok := want.(*StreamEvent).TextDelta()
			if gt != wt || gth != wth || gok != wok {
				t.Fatalf("line %q: TextDelta %q %v %v, encoding/json's %q %v %v", line, gt, gth, gok, wt, wth, wok)
			}
			se.delta = nil
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("line %q:\n decodeOwned  %+v\n encoding/json %+v", line, got, want)
		}
	})
}

package claudeagent

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
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

// TestDecodeUsageLimit: the lines of a turn refused by the account's usage
// limit, as 2.1.330 prints them (2.1.197's lack api_error and
// api_error_params): the rate_limit_event with its reset, the synthetic
// assistant message's typed error, the result's api_error; and a warning.
func TestDecodeUsageLimit(t *testing.T) {
	lines := []string{
		`{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1795620428,"rateLimitType":"five_hour","isUsingOverage":false},"uuid":"u1","session_id":"s"}`,
		`{"type":"assistant","message":{"id":"89b6e103","model":"<synthetic>","role":"assistant","stop_reason":"stop_sequence","type":"message","content":[{"type":"text","text":"You've hit your 5-hour limit · resets 3:27pm (UTC)"}]},"parent_tool_use_id":null,"session_id":"s","uuid":"u2","error":"rate_limit","is_api_error_message":true,"api_error_status":429,"api_error":"usage_limit_reached","api_error_params":{"rate_limit_info":{"status":"rejected","resetsAt":1795620428,"rateLimitType":"five_hour","isUsingOverage":false}},"api_error_type":"rate_limit_error"}`,
		`{"stop_reason":"stop_sequence","session_id":"s","total_cost_usd":0,"is_error":true,"num_turns":1,"subtype":"success","api_error_status":429,"api_error_type":"rate_limit_error","api_error":"usage_limit_reached","result":"You've hit your 5-hour limit · resets 3:27pm (UTC)","type":"result","uuid":"u3"}`,
		`{"type":"rate_limit_event","rate_limit_info":{"status":"allowed_warning","resetsAt":1795623524,"rateLimitType":"five_hour","utilization":0.9,"isUsingOverage":false,"surpassedThreshold":0.9,"unifiedWindows":{"five_hour":{"utilization":0.9}}},"uuid":"u4","session_id":"s"}`,
	}
	var ms []Message
	for _, l := range lines {
		m, err := DecodeMessage([]byte(l))
		if err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		ms = append(ms, m)
	}
	ev, ok := ms[0].(*RateLimitEvent)
	if !ok || ev.Type() != "rate_limit_event" || ev.Info.Status != RateLimitRejected || ev.Info.RateLimitType != "five_hour" ||
		!ev.Info.Resets().Equal(time.Unix(1795620428, 0)) || ev.SessionID != "s" {
		t.Errorf("rejected: %#v", ms[0])
	}
	a := ms[1].(*AssistantMessage)
	if a.Error != "rate_limit" || a.APIError != UsageLimitReached || a.APIErrorParams == nil || a.APIErrorParams.RateLimitInfo == nil ||
		a.APIErrorParams.RateLimitInfo.Resets().Unix() != 1795620428 {
		t.Errorf("assistant: %#v", a)
	}
	r := ms[2].(*ResultMessage)
	if !r.IsError || r.APIError != UsageLimitReached || r.APIErrorStatus == nil || *r.APIErrorStatus != 429 {
		t.Errorf("result: %#v", r)
	}
	w := ms[3].(*RateLimitEvent)
	if w.Info.Status != RateLimitWarning || w.Info.Utilization != 0.9 || w.Info.SurpassedThreshold != 0.9 {
		t.Errorf("warning: %#v", w.Info)
	}
	var none *RateLimitInfo
	if !none.Resets().IsZero() || !(&RateLimitInfo{}).Resets().IsZero() {
		t.Error("no reset must be the zero time")
	}
}

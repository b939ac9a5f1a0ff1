package claudeagent

import (
	"encoding/json"
	"math"
	"time"
)

// Usage limits as the CLI reports them. A CLI logged in with a
// subscription (claude.ai, or an OAuth token) reads the API's
// anthropic-ratelimit-unified-* headers and says what changed in a
// "rate_limit_event" line; with an API key it says nothing of them.
//
// What 2.1.197 and 2.1.330 print when the API refuses a request over the
// limit (a 429 with anthropic-ratelimit-unified-status "rejected" and the
// reset; see internal/testkit/fakeapi's LIMIT[n]):
//
//	{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1795620428,
//	  "rateLimitType":"five_hour","isUsingOverage":false},…}
//	{"type":"assistant","message":{"model":"<synthetic>","content":[{"type":"text",
//	  "text":"You've hit your 5-hour limit · resets 3:27pm (UTC)"}],…},"error":"rate_limit",
//	  "api_error":"usage_limit_reached","api_error_params":{"rate_limit_info":{…}},…}   (api_error… 2.1.330 only)
//	{"type":"result","subtype":"success","is_error":true,"api_error_status":429,
//	  "api_error":"usage_limit_reached","result":"You've hit your 5-hour limit · resets 3:27pm (UTC)",…}
//
// The prompt stays in the conversation: the next turn's request carries
// it, followed by whatever is sent next. A limit nearly reached is a
// rate_limit_event with status "allowed_warning" (utilization,
// surpassedThreshold); "allowed" says all is well again.

// Statuses of [RateLimitInfo].
const (
	RateLimitAllowed  = "allowed"
	RateLimitWarning  = "allowed_warning"
	RateLimitRejected = "rejected"
)

// RateLimitInfo is what the CLI says of the account's usage limit.
type RateLimitInfo struct {
	Status string `json:"status"` // allowed, allowed_warning or rejected
	// ResetsAt is when the limit resets, in unix seconds; 0 when not said.
	ResetsAt float64 `json:"resetsAt"`
	// RateLimitType names the limit: five_hour, seven_day,
	// seven_day_opus, seven_day_sonnet, overage, …
	RateLimitType      string  `json:"rateLimitType"`
	Utilization        float64 `json:"utilization"` // 0..1, with a warning
	SurpassedThreshold float64 `json:"surpassedThreshold"`
	IsUsingOverage     bool    `json:"isUsingOverage"`
}

// Resets is ResetsAt as a time; zero when the CLI did not say.
func (i *RateLimitInfo) Resets() time.Time {
	if i == nil || i.ResetsAt <= 0 || math.IsInf(i.ResetsAt, 0) || i.ResetsAt > 1e12 {
		return time.Time{}
	}
	sec, frac := math.Modf(i.ResetsAt)
	return time.Unix(int64(sec), int64(frac*1e9))
}

// RateLimitEvent is a "rate_limit_event" line: the account's usage limit
// changed (see the comment above [RateLimitInfo]).
type RateLimitEvent struct {
	rawLine
	Info      RateLimitInfo `json:"rate_limit_info"`
	SessionID string        `json:"session_id"`
	UUID      string        `json:"uuid"`
}

// Type implements [Message].
func (*RateLimitEvent) Type() string { return "rate_limit_event" }

// APIErrorParams are the details of a synthetic assistant message's
// api_error (2.1.330): for usage_limit_reached, the limit.
type APIErrorParams struct {
	RateLimitInfo *RateLimitInfo `json:"rate_limit_info"`
}

// UsageLimitReached is the api_error of a request refused by the
// account's usage limit (2.1.330; 2.1.197 says only api_error_status 429).
const UsageLimitReached = "usage_limit_reached"

func decodeRateLimitEvent(line []byte, raw rawLine) (Message, error) {
	v := &RateLimitEvent{rawLine: raw}
	return v, json.Unmarshal(line, v)
}

package fakeapi

import (
	"context"
	"strconv"
	"testing"
	"time"
)

// TestUsageLimitKeyword: LIMIT[n] refuses every request naming it with the
// headers of a subscription's usage limit, all with the reset that the
// first one fixed, until that reset has passed; LIMITWARN answers with the
// headers of a limit nearly reached.
func TestUsageLimitKeyword(t *testing.T) {
	srv := startServer(t)
	ctx := context.Background()
	url := srv.URL() + "/v1/messages?beta=true"
	before := time.Now()
	var resets []string
	for _, prompt := range []string{"LIMIT[60] hi", "LIMIT[60] hi\n\ncontinue"} {
		resp := post(t, ctx, url, body("m", true, user(prompt)))
		h := resp.Header
		if status, typ, _ := errorOf(t, resp); status != 429 || typ != "rate_limit_error" {
			t.Fatalf("%q: %d %s, want 429 rate_limit_error", prompt, status, typ)
		}
		if h.Get("anthropic-ratelimit-unified-status") != "rejected" || h.Get("x-should-retry") != "false" ||
			h.Get("anthropic-ratelimit-unified-representative-claim") != "five_hour" {
			t.Errorf("%q: headers %v", prompt, h)
		}
		resets = append(resets, h.Get("anthropic-ratelimit-unified-reset"))
	}
	reset, err := strconv.ParseInt(resets[0], 10, 64)
	if err != nil || resets[1] != resets[0] {
		t.Fatalf("resets %q: the second request must carry the first one's", resets)
	}
	if at := time.Unix(reset, 0); at.Before(before.Add(60*time.Second)) || at.After(time.Now().Add(61*time.Second)) {
		t.Errorf("reset %s, want a whole second 60 s from the first request (%s)", at, before)
	}

	// Once the reset has passed, the same prompt is answered.
	srv.mu.Lock()
	srv.limits["LIMIT[60]"] = time.Now().Add(-time.Millisecond)
	srv.mu.Unlock()
	evs := stream(t, srv, user("LIMIT[60] hi"))
	if got := blockText(evs, 0, "text"); got != "Hello from fake API (n_messages=1)" {
		t.Errorf("after the reset: %q", got)
	}

	resp := post(t, ctx, url, body("m", true, user("LIMITWARN hi")))
	h := resp.Header
	if status, _, _ := errorOf(t, resp); status != 200 {
		t.Fatalf("LIMITWARN: status %d", status)
	}
	if h.Get("anthropic-ratelimit-unified-status") != "allowed" || h.Get("anthropic-ratelimit-unified-5h-surpassed-threshold") != "0.9" ||
		h.Get("anthropic-ratelimit-unified-5h-reset") == "" {
		t.Errorf("LIMITWARN headers %v", h)
	}
	if r := DefaultReply(&Request{Messages: []Message{{Role: "user", Content: []byte(`"LIMIT[5] x"`)}}}); r.Status != 429 {
		t.Errorf("DefaultReply of LIMIT[5]: %+v", r)
	}
}

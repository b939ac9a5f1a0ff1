package main

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestE2EShare: two server processes share the state directory (the
// session registry) and the CLI's config directory (the transcripts), as
// instances behind a proxy do. A session the first made dormant resumes on
// the second with its conversation; while one runs it the other refuses to;
// closed on one, it is closed for both and for a later server; the cost
// totals count every turn of both once.
func TestE2EShare(t *testing.T) {
	t.Parallel()
	a := startE2E(t, e2eOptions{args: []string{"--max-live", "1"}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var spent float64
	cost := func(out map[string]any) {
		md, _ := out["metadata"].(map[string]any)
		c, _ := md["totalCostUsd"].(float64)
		spent += c
	}

	sid, _ := a.create(t, ctx, nil)
	res, out := a.query(t, ctx, sid, "remember the word PELICAN")
	if res.IsError {
		t.Fatalf("query on A: %s", text(res))
	}
	cost(out)
	csid, _ := out["claudeSessionId"].(string)

	b := startE2E(t, e2eOptions{home: a.home})
	res, _ = b.query(t, ctx, sid, "refused while A runs it")
	if !res.IsError || !strings.Contains(text(res), "runs on another claude-agent-mcp instance") {
		t.Errorf("query on B while A runs the session: isError=%v %s", res.IsError, text(res))
	}
	if n := len(b.api.MessageRequests()); n != 0 {
		t.Errorf("B reached the API %d time(s) for a session A runs", n)
	}

	// With --max-live 1, a second session on A makes the first dormant.
	sid2, _ := a.create(t, ctx, nil)
	if st := a.info(t, ctx, sid)["state"]; st != "dormant" {
		t.Fatalf("the first session on A is %v, want dormant", st)
	}
	res, out = b.query(t, ctx, sid, "which word did I ask you to remember?")
	if res.IsError {
		t.Fatalf("query on B after A made the session dormant: %s", text(res))
	}
	cost(out)
	if out["claudeSessionId"] != csid {
		t.Errorf("claudeSessionId on B = %v, want %s", out["claudeSessionId"], csid)
	}
	req := requestFor(t, b.api, "which word")
	remembered := false
	for _, m := range req.Messages {
		if m.Role == "user" && strings.Contains(m.Text(), "remember the word PELICAN") {
			remembered = true
		}
	}
	if !remembered || req.ConversationLen() < 3 {
		t.Errorf("B's request lacks the conversation held on A (%d messages)", req.ConversationLen())
	}
	_, out = b.call(t, ctx, "claude_session_history", map[string]any{"sessionId": sid}, nil)
	var prompts []string
	for _, e := range out["entries"].([]any) {
		if e := e.(map[string]any); e["kind"] == "prompt" {
			prompts = append(prompts, e["text"].(string))
		}
	}
	if strings.Join(prompts, "|") != "remember the word PELICAN|which word did I ask you to remember?" {
		t.Errorf("history on B: prompts %q", prompts)
	}

	// B runs it now: A refuses, and starts nothing.
	requestsA := len(a.api.MessageRequests())
	res, _ = a.query(t, ctx, sid, "refused while B runs it")
	if !res.IsError || !strings.Contains(text(res), "runs on another claude-agent-mcp instance") {
		t.Errorf("query on A while B runs the session: isError=%v %s", res.IsError, text(res))
	}
	if n := len(a.api.MessageRequests()); n != requestsA {
		t.Errorf("A reached the API for a session B runs")
	}
	if st := a.info(t, ctx, sid2)["state"]; st != "idle" {
		t.Errorf("A's second session is %v, want idle (the refused query must not take its process)", st)
	}

	// Closed on B: closed on A too, and not brought back by a later server.
	if res, _ := b.call(t, ctx, "claude_session_close", map[string]any{"sessionId": sid}, nil); res.IsError {
		t.Fatalf("close on B: %s", text(res))
	}
	res, _ = a.query(t, ctx, sid, "after the close")
	if !res.IsError || !strings.Contains(text(res), "closed on another") {
		t.Errorf("query on A after B closed the session: isError=%v %s", res.IsError, text(res))
	}
	res, out = a.query(t, ctx, sid2, "hello")
	if res.IsError {
		t.Fatalf("query on A's second session: %s", text(res))
	}
	cost(out)

	for name, e := range map[string]*e2e{"A": a, "B": b} {
		e.stdin.Close()
		select {
		case <-e.exited:
		case <-time.After(20 * time.Second):
			t.Fatalf("server %s did not exit after stdin closed", name)
		}
	}
	data, err := os.ReadFile(filepath.Join(a.home, "state", "sessions.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		SpentUSD float64                    `json:"spentUsd"`
		Live     map[string]json.RawMessage `json:"live"`
		Closed   map[string]string          `json:"closed"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	if spent <= 0 || math.Abs(f.SpentUSD-spent) > 1e-9 {
		t.Errorf("the registry counts %v spent, want %v (every turn of both servers once)", f.SpentUSD, spent)
	}
	if len(f.Live) != 0 {
		t.Errorf("claims left after both servers stopped: %v", f.Live)
	}
	if _, ok := f.Closed[sid]; !ok {
		t.Errorf("no tombstone for the closed session:\n%s", data)
	}

	c := startE2E(t, e2eOptions{home: a.home})
	_, out = c.call(t, ctx, "claude_session_list", map[string]any{}, nil)
	ss, _ := out["sessions"].([]any)
	if len(ss) != 1 || ss[0].(map[string]any)["sessionId"] != sid2 {
		t.Errorf("a later server lists %v, want only %s", ss, sid2)
	}
}

package mcptools

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/textcut"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store/sqlite"
)

// TestWaitSecondsAndChatWait: a slow turn with waitSeconds returns status
// running with the progress so far; claude_chat_wait returns running again
// with what is new, then the final result exactly once.
func TestWaitSecondsAndChatWait(t *testing.T) {
	f := newFakeServer(t, "2025-11-25", sessions.Config{}, Options{})
	_, out := f.call(t, "claude_session_create", map[string]any{"cwd": t.TempDir()}, nil)
	sid := out["sessionId"].(string)

	// SLOW8: 8 chunks 0.5 s apart, about 4 s.
	res, out := f.call(t, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "SLOW8", "waitSeconds": 1}, nil)
	if res.IsError || out["status"] != "running" {
		t.Fatalf("first call: status=%v isError=%v %s", out["status"], res.IsError, resText(res))
	}
	if !strings.Contains(resText(res), "claude_chat_wait") || !strings.Contains(resText(res), sid) {
		t.Errorf("running text does not say how to continue: %s", resText(res))
	}
	// Busy while it runs in the background.
	_, err := f.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "claude_chat_query", Arguments: map[string]any{"sessionId": sid, "prompt": "x"}})
	if err == nil || !strings.Contains(err.Error(), "already running") {
		t.Errorf("query while running in the background: %v", err)
	}
	res, out = f.call(t, "claude_chat_wait", map[string]any{"sessionId": sid, "waitSeconds": 1}, nil)
	if out["status"] != "running" {
		t.Fatalf("second call should still be running: %v %s", out["status"], resText(res))
	}
	res, out = f.call(t, "claude_chat_wait", map[string]any{"sessionId": sid}, mcp.Meta{"progressToken": "w"})
	if res.IsError || out["status"] != "completed" || !strings.Contains(out["finalText"].(string), "chunk7") {
		t.Fatalf("final wait: %v %s", out, resText(res))
	}
	f.waitEvents(t, "progress:done") // the waiting call gets the completion notice
	// Exactly once.
	res, _ = f.call(t, "claude_chat_wait", map[string]any{"sessionId": sid}, nil)
	if !res.IsError || !strings.Contains(resText(res), "no query to wait for") {
		t.Errorf("second collection: isError=%v %s", res.IsError, resText(res))
	}
	// The session goes on normally.
	res, out = f.call(t, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "hi"}, nil)
	if res.IsError || out["status"] != "completed" {
		t.Errorf("query after wait: %s", resText(res))
	}
}

// TestDirectQueryRunningKeepsSession: a direct query that returned running
// keeps its temporary session until the result is collected.
func TestDirectQueryRunningKeepsSession(t *testing.T) {
	f := newFakeServer(t, "2025-11-25", sessions.Config{}, Options{})
	res, out := f.call(t, "claude_direct_query", map[string]any{"cwd": t.TempDir(), "prompt": "SLOW4", "waitSeconds": 1}, nil)
	if out["status"] != "running" {
		t.Fatalf("direct: %v %s", out["status"], resText(res))
	}
	sid := out["sessionId"].(string)
	if f.mgr.Count() != 1 {
		t.Fatalf("the temporary session is gone while running")
	}
	res, out = f.call(t, "claude_chat_wait", map[string]any{"sessionId": sid}, nil)
	if res.IsError || out["status"] != "completed" {
		t.Fatalf("collect: %s", resText(res))
	}
	if n := f.mgr.Count(); n != 0 {
		t.Errorf("%d sessions left after collecting the direct query", n)
	}
}

// TestHeartbeat: a running query sends progress at least every interval.
func TestHeartbeat(t *testing.T) {
	f := newFakeServer(t, "2025-11-25", sessions.Config{}, Options{HeartbeatInterval: 300 * time.Millisecond})
	_, out := f.call(t, "claude_session_create", map[string]any{"cwd": t.TempDir()}, nil)
	sid := out["sessionId"].(string)
	start := time.Now()
	f.call(t, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "SLOW6"}, mcp.Meta{"progressToken": 7})
	elapsed := time.Since(start)
	n := 0
	for _, e := range f.rec.Events() {
		if strings.HasPrefix(e, "progress:running for") {
			n++
		}
	}
	if want := int(elapsed/(300*time.Millisecond)) - 2; n < want || n == 0 {
		t.Errorf("%d heartbeats in %s, want ≥ %d", n, elapsed, want)
	}
}

// TestHistory pages through a conversation, newest last.
func TestHistory(t *testing.T) {
	f := newFakeServer(t, "2025-11-25", sessions.Config{}, Options{})
	_, out := f.call(t, "claude_session_create", map[string]any{"cwd": t.TempDir()}, nil)
	sid := out["sessionId"].(string)
	f.call(t, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "hi"}, nil)
	f.call(t, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "TOOL_BASH[echo hi]"}, nil)
	res, out := f.call(t, "claude_session_history", map[string]any{"sessionId": sid}, nil)
	if res.IsError {
		t.Fatal(resText(res))
	}
	entries := out["entries"].([]any)
	kinds := []string{}
	for _, e := range entries {
		kinds = append(kinds, e.(map[string]any)["kind"].(string))
	}
	got := strings.Join(kinds, ",")
	if !strings.HasPrefix(got, "prompt,text,prompt,") || !strings.Contains(got, "tool") {
		t.Errorf("entry kinds = %s", got)
	}
	if entries[0].(map[string]any)["text"] != "hi" {
		t.Errorf("first entry = %v", entries[0])
	}
	total := int(out["total"].(float64))
	_, out = f.call(t, "claude_session_history", map[string]any{"sessionId": sid, "limit": 2}, nil)
	page := out["entries"].([]any)
	if len(page) != 2 || out["olderCursor"] == nil || out["cursor"] != strconv.Itoa(total-2) {
		t.Fatalf("last page = %v", out)
	}
	_, out = f.call(t, "claude_session_history", map[string]any{"sessionId": sid, "limit": 2, "cursor": out["olderCursor"]}, nil)
	if out["newerCursor"] != strconv.Itoa(total-2) {
		t.Errorf("older page = %v", out)
	}
	res, _ = f.call(t, "claude_session_history", map[string]any{"sessionId": sid, "cursor": "x"}, nil)
	if !res.IsError || !strings.Contains(resText(res), "invalid cursor") {
		t.Errorf("bad cursor: %s", resText(res))
	}
}

// TestLateWaitHeartbeatCounts: a claude_chat_wait that attaches to a turn
// already waiting on a permission question (so no events arrive while it
// waits) reports the turn's counts so far in its heartbeats, not zeros.
func TestLateWaitHeartbeatCounts(t *testing.T) {
	release := make(chan struct{})
	asked := make(chan struct{}, 1)
	f := newFakeServerWith(t, "2025-11-25", sessions.Config{}, Options{HeartbeatInterval: 100 * time.Millisecond},
		func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "deny", "reason": "test"}}, nil
		})
	_, out := f.call(t, "claude_session_create", map[string]any{"cwd": t.TempDir()}, nil)
	sid := out["sessionId"].(string)
	res, out := f.call(t, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "TOOL_BASH[echo hi]", "waitSeconds": 1}, nil)
	if out["status"] != "running" {
		t.Fatalf("first call: %v %s", out["status"], resText(res))
	}
	select {
	case <-asked:
	case <-time.After(10 * time.Second):
		t.Fatal("the permission question never came")
	}
	f.rec.Reset()
	res, out = f.call(t, "claude_chat_wait", map[string]any{"sessionId": sid, "waitSeconds": 1}, mcp.Meta{"progressToken": "late"})
	if out["status"] != "running" {
		t.Fatalf("wait: %v %s", out["status"], resText(res))
	}
	if !strings.Contains(resText(res), "(1 tool call(s) so far)") {
		t.Errorf("running text does not count the tool call: %s", resText(res))
	}
	var beats []string
	for _, e := range f.rec.Events() {
		if strings.HasPrefix(e, "progress:running for") {
			beats = append(beats, e)
		}
	}
	if len(beats) == 0 {
		t.Fatal("no heartbeat while waiting")
	}
	for _, b := range beats {
		if !strings.Contains(b, "1 API turn(s), 1 tool call(s)") {
			t.Errorf("heartbeat %q, want the turn's counts so far (1 API turn, 1 tool call)", b)
		}
	}
	close(release)
	res, out = f.call(t, "claude_chat_wait", map[string]any{"sessionId": sid}, nil)
	if res.IsError || out["status"] != "completed" {
		t.Errorf("collect: %s", resText(res))
	}
}

// TestQueuedQuery: beyond --max-live a query waits its turn; the call hears
// it is queued (progress) and claude_session_list shows it.
func TestQueuedQuery(t *testing.T) {
	f := newFakeServer(t, "2025-11-25", sessions.Config{MaxLive: 1}, Options{})
	_, out := f.call(t, "claude_session_create", map[string]any{"cwd": t.TempDir()}, nil)
	a := out["sessionId"].(string)
	done := make(chan error, 1)
	go func() {
		_, err := f.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "claude_chat_query", Arguments: map[string]any{"sessionId": a, "prompt": "SLOW4"}})
		done <- err
	}()
	testkit.Until(t, 10*time.Second, "A running", func() bool { s, _ := f.mgr.Get(a); return s.Info().State == state.Running })
	res, out := f.call(t, "claude_session_create", map[string]any{"cwd": t.TempDir()}, nil)
	b := out["sessionId"].(string)
	if out["active"] != false || !strings.Contains(resText(res), "starts with its first query") {
		t.Errorf("create while every process is busy: %v %s", out, resText(res))
	}
	queried := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := f.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "claude_chat_query", Arguments: map[string]any{"sessionId": b, "prompt": "hi"},
			Meta: mcp.Meta{"progressToken": "q"}})
		if err != nil {
			t.Errorf("the queued query: %v", err)
		}
		queried <- res
	}()
	testkit.Until(t, 10*time.Second, "B queued", func() bool { s, _ := f.mgr.Get(b); return s.Info().State == state.Queued })
	_, list := f.call(t, "claude_session_list", map[string]any{"sessionId": b}, nil)
	if info := list["sessions"].([]any)[0].(map[string]any); info["state"] != "queued" || info["queuePosition"] != float64(1) || list["queued"] != float64(1) {
		t.Errorf("list while queued: %v", list)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-queried:
		if res == nil || !strings.Contains(resText(res), "Hello from fake API (n_messages=1)") {
			t.Errorf("the queued query: %v", res)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the queued query did not get its turn after the running one ended")
	}
	f.waitEvents(t, "progress:queued for a live claude process (--max-live 1): position 1")
}

// TestHistoryCapped: history pages stay within --max-result-chars, each cut
// text naming the transcript that holds it all.
func TestHistoryCapped(t *testing.T) {
	f := newFakeServer(t, "2025-11-25", sessions.Config{}, Options{MaxResultChars: 2000})
	_, out := f.call(t, "claude_session_create", map[string]any{"cwd": t.TempDir()}, nil)
	sid := out["sessionId"].(string)
	f.call(t, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "BIGTEXT"}, nil)
	res, out := f.call(t, "claude_session_history", map[string]any{"sessionId": sid}, nil)
	if res.IsError {
		t.Fatal(resText(res))
	}
	b, _ := json.Marshal(out)
	if len(b) > 8000 {
		t.Errorf("history of a 2 MB answer is %d bytes with --max-result-chars 2000", len(b))
	}
	var cut bool
	for _, e := range out["entries"].([]any) {
		text, _ := e.(map[string]any)["text"].(string)
		if strings.Contains(text, "truncated") && strings.Contains(text, ".jsonl") && strings.Contains(text, "of 2000000 characters") {
			cut = true
		}
	}
	if !cut {
		t.Errorf("no entry says it was cut and where the rest is: %s", textcut.Cut(string(b), 600))
	}
}

// failingStore is a session store whose writes fail.
type failingStore struct{ store.Store }

func (failingStore) Create(context.Context, store.Record, store.Quota) error {
	return errors.New("disk full")
}

func (failingStore) Put(context.Context, store.Record, store.Lease, float64) error {
	return errors.New("disk full")
}

func openStore(t *testing.T) store.Store {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "sessions.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestPersistedFalse: a store that cannot be written makes create and
// query results say persisted: false.
func TestPersistedFalse(t *testing.T) {
	f := newFakeServer(t, "2025-11-25", sessions.Config{Store: failingStore{openStore(t)}}, Options{})
	_, out := f.call(t, "claude_session_create", map[string]any{"cwd": t.TempDir()}, nil)
	if out["persisted"] != false {
		t.Errorf("create with an unwritable store: persisted = %v", out["persisted"])
	}
	_, out = f.call(t, "claude_chat_query", map[string]any{"sessionId": out["sessionId"], "prompt": "hi"}, nil)
	if out["persisted"] != false {
		t.Errorf("query with an unwritable store: persisted = %v", out["persisted"])
	}
	good := newFakeServer(t, "2025-11-25", sessions.Config{Store: openStore(t)}, Options{})
	if _, out := good.call(t, "claude_session_create", map[string]any{"cwd": t.TempDir()}, nil); out["persisted"] != nil {
		t.Errorf("create with a good store: persisted = %v, want it left out", out["persisted"])
	}
}

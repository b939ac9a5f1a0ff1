package e2e_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// alertReceiver is a local webhook that keeps the alerts posted to it.
type alertReceiver struct {
	*httptest.Server
	mu   sync.Mutex
	got  []map[string]any
	came chan map[string]any
}

func newAlertReceiver(t *testing.T) *alertReceiver {
	r := &alertReceiver{came: make(chan map[string]any, 16)}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var e map[string]any
		if err := json.NewDecoder(req.Body).Decode(&e); err != nil {
			t.Errorf("an alert that is not JSON: %v", err)
		}
		r.mu.Lock()
		r.got = append(r.got, e)
		r.mu.Unlock()
		r.came <- e
	}))
	t.Cleanup(r.Close)
	return r
}

// next waits for the next alert.
func (r *alertReceiver) next(t *testing.T, ctx context.Context) map[string]any {
	t.Helper()
	select {
	case e := <-r.came:
		return e
	case <-ctx.Done():
		t.Fatal("no alert came")
		return nil
	}
}

// TestE2EAlerts: with --notify, a local receiver gets an alert when a turn
// finishes (with the answer), when one fails, and while one waits for a
// permission answer (before it is answered); a second receiver that never
// answers delays none of it. (On stdio the user is "".)
func TestE2EAlerts(t *testing.T) {
	t.Parallel()
	good := newAlertReceiver(t)
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		select { // held until the test ends
		case <-release:
		case <-req.Context().Done():
		}
	}))
	defer hang.Close()
	defer close(release)
	waiting := make(chan map[string]any, 1)
	elicit := func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		// The question is answered only once its alert came.
		select {
		case e := <-good.came:
			waiting <- e
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	e := startE2E(t, e2eOptions{protocol: "2025-11-25", elicit: elicit, args: []string{"--notify", good.URL, "--notify", hang.URL + "/hook"}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, out := e.call(t, ctx, "claude_session_create", map[string]any{"cwd": e.cwd, "name": "alerted"}, nil)
	sid := out["sessionId"].(string)

	check := func(a map[string]any, event string) {
		t.Helper()
		if a["event"] != event || a["sessionId"] != sid || a["name"] != "alerted" || a["user"] != "" || a["state"] == nil || a["time"] == nil {
			t.Errorf("alert %v, want a %s alert of session %s", a, event, sid)
		}
	}
	start := time.Now()
	if res, _ := e.call(t, ctx, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "hi"}, nil); res.IsError {
		t.Fatalf("query: %s", text(res))
	}
	a := good.next(t, ctx)
	check(a, "finished")
	if answer, _ := a["answer"].(string); !strings.HasPrefix(answer, "Hello from fake API") {
		t.Errorf("the finished alert's answer %q", answer)
	}
	if res, _ := e.call(t, ctx, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "TOOL_BASH[touch asked.txt && echo asked]"}, nil); res.IsError {
		t.Fatalf("query: %s", text(res))
	}
	var w map[string]any
	select {
	case w = <-waiting:
	case <-ctx.Done():
		t.Fatal("the permission question was not asked")
	}
	check(w, "waiting")
	if w["tool"] != "Bash" {
		t.Errorf("the waiting alert names %v, want Bash", w["tool"])
	}
	check(good.next(t, ctx), "finished") // the turn, its question declined
	// Last: the CLI keeps a failed prompt, and the next request carries it.
	if res, _ := e.call(t, ctx, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "ERR400 ALWAYS"}, nil); !res.IsError {
		t.Errorf("the failing query did not fail: %s", text(res))
	}
	check(good.next(t, ctx), "failed")
	if d := time.Since(start); d > time.Minute {
		t.Errorf("three short turns took %s beside a receiver that hangs", d)
	}
}

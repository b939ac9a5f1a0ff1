package httpserve_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/mcptest"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/httpserve"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// Tests of failed authentication over HTTP and of revocation.

// authEvents records OnAuthEvent.
type authEvents struct {
	mu  sync.Mutex
	evs []httpserve.AuthEvent
}

func (a *authEvents) add(ev httpserve.AuthEvent) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.evs = append(a.evs, ev)
}

func (a *authEvents) all() []httpserve.AuthEvent {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.evs)
}

func (a *authEvents) find(kind, user string) (httpserve.AuthEvent, bool) {
	for _, ev := range a.all() {
		if ev.Kind == kind && ev.User == user {
			return ev, true
		}
	}
	return httpserve.AuthEvent{}, false
}

type callResult struct {
	res *mcp.CallToolResult
	err error
}

// connectRec connects a recording client as user (token "<user>-secret").
func (h *httpServer) connectRec(t *testing.T, ctx context.Context, user, protocol string) (*mcp.ClientSession, *mcptest.Recorder) {
	t.Helper()
	rec := mcptest.NewRecorder(user, nil)
	cs, err := rec.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: h.url + "/mcp", HTTPClient: mcptest.Bearer(user + "-secret")}, protocol)
	if err != nil {
		t.Fatalf("connecting %s: %v", user, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, rec
}

// createSession opens a session in a new temporary directory.
var createSession = mcptest.CreateSession

// queryAsync calls claude_chat_query (with a progress token) on a
// goroutine.
func queryAsync(ctx context.Context, cs *mcp.ClientSession, args map[string]any) <-chan callResult {
	done := make(chan callResult, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "claude_chat_query", Arguments: args, Meta: mcp.Meta{"progressToken": "p"}})
		done <- callResult{res, err}
	}()
	return done
}

func waitEvent(t *testing.T, ctx context.Context, rec *mcptest.Recorder, want string) {
	t.Helper()
	if events, err := rec.WaitEvents(ctx, want); err != nil {
		t.Fatalf("waiting for %q: %v %v", want, err, events)
	}
}

// endsWithError waits up to 20 s for a call that must end with an error
// (its request cut, or a JSON-RPC error).
func endsWithError(t *testing.T, name string, c <-chan callResult) {
	t.Helper()
	select {
	case r := <-c:
		if r.err == nil {
			t.Errorf("%s ended without an error: %s", name, resText(r.res))
		}
	case <-time.After(20 * time.Second):
		t.Errorf("%s still runs 20 s after the revocation", name)
	}
}

// TestHTTPAuthFailuresLogged: a request with no token or a wrong one is
// logged at WARN with its remote address and the reason, never the token,
// at most a line a second per remote host, and reported to OnAuthEvent (the
// audit log) as often, with the count of those not reported: nobody without
// a token can flood the audit log's disk.
func TestHTTPAuthFailuresLogged(t *testing.T) {
	logs := &testkit.Buffer{}
	events := &authEvents{}
	h := newHTTPServerWith(t, sessions.Config{}, mcptools.Options{}, httpserve.HTTPOptions{Logger: slog.New(slog.NewTextHandler(logs, nil)), OnAuthEvent: events.add})
	const n = 30
	start := time.Now()
	for i := range n {
		token := fmt.Sprintf("wrong-token-%d", i)
		if i%3 == 0 {
			token = ""
		}
		if status, _, _ := rawDo(t, http.MethodPost, h.url+"/mcp", token, nil, strings.NewReader(`{}`)); status != http.StatusUnauthorized {
			t.Fatalf("token %q: %d", token, status)
		}
	}
	elapsed := time.Since(start)
	log := logs.String()
	lines := strings.Count(log, "HTTP authentication failed")
	if lines == 0 {
		t.Fatalf("no failed authentication logged:\n%s", log)
	}
	if most := 1 + int(elapsed/time.Second); lines > most {
		t.Errorf("%d lines for %d failures in %v: not one a second", lines, n, elapsed)
	}
	if !strings.Contains(log, "level=WARN") || !strings.Contains(log, "remote=127.0.0.1:") || !strings.Contains(log, "reason=") {
		t.Errorf("the log line lacks its level, remote or reason:\n%s", log)
	}
	evs := events.all()
	if len(evs) != lines {
		t.Errorf("%d auth events for %d log lines", len(evs), lines)
	}
	reasons := map[string]int{}
	for _, ev := range evs {
		reasons[strings.SplitN(ev.Reason, " (", 2)[0]]++
		if ev.Kind != httpserve.AuthFailed || ev.User != "" || !strings.HasPrefix(ev.Remote, "127.0.0.1:") {
			t.Errorf("event %+v", ev)
		}
		if strings.Contains(fmt.Sprint(ev), "wrong-token") {
			t.Errorf("an event holds the token: %+v", ev)
		}
	}
	if reasons["no bearer token"] == 0 || len(reasons) > 2 {
		t.Errorf("reasons %v", reasons)
	}
	if strings.Contains(log, "wrong-token") {
		t.Errorf("the log holds a token:\n%s", log)
	}
}

// TestHTTPReload: a tokens file that fails to parse keeps the tokens
// (logged, reported); an empty one is no user: everyone gets 401, with a
// warning, until a reload names them again.
func TestHTTPReload(t *testing.T) {
	logs := &testkit.Buffer{}
	events := &authEvents{}
	h := newHTTPServerWith(t, sessions.Config{}, mcptools.Options{}, httpserve.HTTPOptions{Logger: slog.New(slog.NewTextHandler(logs, nil)), OnAuthEvent: events.add})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bob := h.connect(t, "bob-secret", "")
	if err := os.WriteFile(h.tokens, []byte("bob:"+testkit.TokenHash("bob-secret")+"\nnot a token line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := h.h.ReloadTokens(ctx); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("reloading a broken file: %v", err)
	}
	if res, _ := callJSON(t, bob, "claude_session_list", map[string]any{}); res.IsError {
		t.Errorf("bob after a failed reload: %s", resText(res))
	}
	if ev, ok := events.find(httpserve.TokensReloadFailed, ""); !ok || !strings.Contains(ev.Reason, "line 2") {
		t.Errorf("no tokens_reload_failed event: %+v", events.all())
	}
	if !strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("the failed reload is not logged as an error:\n%s", logs)
	}

	if err := os.WriteFile(h.tokens, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := h.h.ReloadTokens(ctx); err != nil {
		t.Fatalf("reloading an empty file: %v", err)
	}
	for _, token := range []string{"alice-secret", "bob-secret"} {
		if status, _, _ := rawDo(t, http.MethodPost, h.url+"/mcp", token, nil, strings.NewReader(initializeBody)); status != http.StatusUnauthorized {
			t.Errorf("%s with no users: %d", token, status)
		}
	}
	if !strings.Contains(logs.String(), "no user has a token") {
		t.Errorf("no warning about a file without users:\n%s", logs)
	}
	for _, u := range []string{"alice", "bob"} {
		if _, ok := events.find(httpserve.Revoked, u); !ok {
			t.Errorf("%s not revoked: %+v", u, events.all())
		}
	}
	testkit.WriteTokens(t, h.tokens, "bob")
	if err := h.h.ReloadTokens(ctx); err != nil {
		t.Fatal(err)
	}
	bob = h.connect(t, "bob-secret", "")
	if res, _ := callJSON(t, bob, "claude_session_list", map[string]any{}); res.IsError {
		t.Errorf("bob back: %s", resText(res))
	}
}

// TestHTTPRevoke: a reload that removes alice revokes her: her calls in
// progress end with an error (on both protocol eras), the running turns of
// her sessions are interrupted (also one no call waits on), her stateful
// MCP sessions are closed (their ids are unknown after), her requests get
// 401; bob, still in the file, is untouched, his running call included.
func TestHTTPRevoke(t *testing.T) {
	events := &authEvents{}
	h := newHTTPServerWith(t, sessions.Config{}, mcptools.Options{}, httpserve.HTTPOptions{OnAuthEvent: events.add})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	connect := func(user, protocol string) (*mcp.ClientSession, *mcptest.Recorder) {
		return h.connectRec(t, ctx, user, protocol)
	}
	create := func(cs *mcp.ClientSession) string { return createSession(t, cs) }
	query := func(cs *mcp.ClientSession, args map[string]any) <-chan callResult { return queryAsync(ctx, cs, args) }
	started := func(rec *mcptest.Recorder) { waitEvent(t, ctx, rec, "progress:turn started") }

	aliceOld, recOld := connect("alice", "2025-11-25") // stateful
	aliceNew, recNew := connect("alice", "")           // stateless, 2026-07-28
	aliceBg, recBg := connect("alice", "2025-11-25")
	bob, recBob := connect("bob", "2025-11-25")
	s1, s2, s3, b1 := create(aliceOld), create(aliceNew), create(aliceBg), create(bob)
	c1 := query(aliceOld, map[string]any{"sessionId": s1, "prompt": "SLOW100"})
	c2 := query(aliceNew, map[string]any{"sessionId": s2, "prompt": "SLOW100"})
	// s3's turn runs with no call waiting on it.
	c3 := query(aliceBg, map[string]any{"sessionId": s3, "prompt": "SLOW100", "waitSeconds": 2})
	cb := query(bob, map[string]any{"sessionId": b1, "prompt": "SLOW6"})
	for _, rec := range []*mcptest.Recorder{recOld, recNew, recBg, recBob} {
		started(rec)
	}
	if r := <-c3; r.err != nil || r.res.IsError || !strings.Contains(fmt.Sprint(r.res.StructuredContent), "status:running") {
		t.Fatalf("s3's query with waitSeconds: %v %v", r.err, r.res)
	}

	testkit.WriteTokens(t, h.tokens, "bob")
	if err := h.h.ReloadTokens(ctx); err != nil {
		t.Fatal(err)
	}
	endsWithError(t, "alice's call on 2025-11-25", c1)
	endsWithError(t, "alice's call on 2026-07-28", c2)
	// The turns were interrupted: a query waits for the end of an
	// interrupted turn, where a running one refuses it as busy.
	for _, sid := range []string{s1, s2, s3} {
		s, err := h.mgr.Get(sid)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Query(ctx, "hi", sessions.QueryOptions{}); err != nil {
			t.Errorf("session %s after the revocation: %v", sid, err)
		}
	}
	// Her stateful MCP sessions are closed: unknown (404) for bob, not
	// another user's (403); her token gets 401.
	for _, cs := range []*mcp.ClientSession{aliceOld, aliceBg} {
		hdr := map[string]string{"Mcp-Session-Id": cs.ID()}
		list := `{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{}}`
		if status, _, text := rawDo(t, http.MethodPost, h.url+"/mcp", "bob-secret", hdr, strings.NewReader(list)); status != http.StatusNotFound {
			t.Errorf("alice's MCP session after the revocation, with bob's token: %d %s", status, text)
		}
		if status, _, _ := rawDo(t, http.MethodPost, h.url+"/mcp", "alice-secret", hdr, strings.NewReader(list)); status != http.StatusUnauthorized {
			t.Errorf("alice's MCP session after the revocation, with her token: %d", status)
		}
	}
	if _, err := aliceNew.ListTools(ctx, nil); err == nil {
		t.Errorf("alice's stateless client still lists tools")
	}
	select {
	case r := <-cb:
		if r.err != nil || r.res.IsError || !strings.Contains(resText(r.res), "chunk5") {
			t.Errorf("bob's call: %v %v", r.err, r.res)
		}
	case <-ctx.Done():
		t.Fatal("bob's call did not end")
	}
	if res, _ := callJSON(t, bob, "claude_session_list", map[string]any{}); res.IsError || !strings.Contains(resText(res), b1) {
		t.Errorf("bob's list: %s", resText(res))
	}
	ev, ok := events.find(httpserve.Revoked, "alice")
	if !ok || !strings.Contains(ev.Reason, "2 MCP sessions closed") || strings.Contains(ev.Reason, " 0 turns interrupted") {
		t.Errorf("revoked event %+v (all: %+v)", ev, events.all())
	}
	if _, ok := events.find(httpserve.Revoked, "bob"); ok {
		t.Errorf("bob revoked: %+v", events.all())
	}
	if _, ok := events.find(httpserve.TokensReloaded, ""); !ok {
		t.Errorf("no tokens_reloaded event: %+v", events.all())
	}
}

// TestHTTPRevokeQueued: a revoked user's query that waits for a live
// process (--max-live) has no turn to interrupt: it is cancelled with its
// call, and never runs.
func TestHTTPRevokeQueued(t *testing.T) {
	h := newHTTPServerWith(t, sessions.Config{MaxLive: 1}, mcptools.Options{}, httpserve.HTTPOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	alice, recAlice := h.connectRec(t, ctx, "alice", "2025-11-25")
	bob, recBob := h.connectRec(t, ctx, "bob", "2025-11-25")
	sa := createSession(t, alice)
	sb := createSession(t, bob)
	cb := queryAsync(ctx, bob, map[string]any{"sessionId": sb, "prompt": "SLOW4"})
	waitEvent(t, ctx, recBob, "progress:turn started")
	ca := queryAsync(ctx, alice, map[string]any{"sessionId": sa, "prompt": "hi"})
	waitEvent(t, ctx, recAlice, "progress:queued for a live claude process")

	testkit.WriteTokens(t, h.tokens, "bob")
	rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
	defer rcancel()
	if err := h.h.ReloadTokens(rctx); err != nil {
		t.Fatal(err)
	}
	if n := h.mgr.Queued(); n != 0 {
		t.Errorf("%d queries still queued after the revocation", n)
	}
	// (Revoke waits for her MCP session to close, which waits for its
	// calls: had hers not been cancelled, it would have run by now.)
	if s, err := h.mgr.Get(sa); err != nil || s.Info().Queries != 0 {
		t.Errorf("alice's queued query ran after the revocation (%v)", err)
	}
	endsWithError(t, "alice's queued call", ca)
	if r := <-cb; r.err != nil || r.res.IsError {
		t.Errorf("bob's call: %v %v", r.err, r.res)
	}
}

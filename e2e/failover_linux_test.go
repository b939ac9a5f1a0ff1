//go:build linux

package e2e_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakeapi"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/pgtest"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store/postgres"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store/sqlite"
)

// killPoint is a moment of a turn at which the serving instance is killed.
type killPoint string

const (
	beforeFirstToken killPoint = "before the first token"
	midStream        killPoint = "mid-stream"
	afterResult      killPoint = "after the result, before the answer"
	afterAnswer      killPoint = "after the answer reached the caller"
)

// The prompts of the failover tests: the first turn, which the caller sees
// answered before anything is killed; the second, during which (or after
// which) A is killed; the question B answers.
const (
	failFirst    = "remember the word PELICAN"
	failSecond   = "ECHO remember also the number 4711"
	failQuestion = "which word and number did I ask you to remember?"
)

// TestE2EFailoverPoints: two instances share a store — PostgreSQL, or one
// SQLite file — each with its own HOME and CLI config directory. A serves
// a session's first turn, then is killed (SIGKILL) at one point of the
// second: before the API sent its first token, mid-stream, after the CLI's
// result but before the answer reached the caller (the store is held
// locked so that A cannot answer), or right after the caller has the
// answer. A query sent to B at once is refused, naming when it can be
// served; once A's lease lapses B serves the session with everything the
// caller saw: the first turn always, the second when its answer reached
// the caller — in the API request B's CLI sends, and in the session's
// history (issue 44).
func TestE2EFailoverPoints(t *testing.T) {
	t.Parallel()
	for _, store := range []string{"postgres", "sqlite"} {
		for _, point := range []killPoint{beforeFirstToken, midStream, afterResult, afterAnswer} {
			t.Run(store+"/"+string(point), func(t *testing.T) {
				t.Parallel()
				failover(t, store, point)
			})
		}
	}
}

func failover(t *testing.T, store string, point killPoint) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	target, lock := failoverStore(t, store)
	lease := fleetLease
	if point == afterResult {
		// The store is held locked for seconds, and SQLite's lock holds
		// back A's renewals too: a longer lease outlasts it.
		lease = 10 * time.Second
	}
	env := map[string]string{"CLAUDE_AGENT_MCP_LEASE": lease.String()}
	a := startE2E(t, e2eOptions{args: []string{"--store", target}, env: env})
	b := startE2E(t, e2eOptions{args: []string{"--store", target}, env: env})
	markerA := serverMarker(t, a.cmd.Process.Pid)
	w := watchProcs(t, map[string]string{"A": markerA, "B": serverMarker(t, b.cmd.Process.Pid)})

	sid, _ := a.create(t, ctx, nil)
	if res, _ := a.query(t, ctx, sid, failFirst); res.IsError {
		t.Fatalf("the first turn on A: %s", text(res))
	}

	// The API holds the second turn's request until the test lets it go.
	hold := make(chan struct{})
	held := func() { close(hold) }
	t.Cleanup(func() { // before the fake API closes: it waits for its handlers
		select {
		case <-hold:
		default:
			close(hold)
		}
	})
	second := failSecond
	if point == midStream {
		second = "SLOW " + failSecond // 20 deltas, 0.5 s apart
	}
	a.api.SetHandler(func(r *fakeapi.Request) *fakeapi.Reply {
		if point != afterAnswer && point != midStream && strings.Contains(r.LastUserText(), second) {
			<-hold
		}
		return nil
	})
	answered := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, _, err := a.callErr(ctx, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": second}, nil)
		if err != nil {
			res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
		}
		answered <- res
	}()
	testkit.Until(t, 60*time.Second, "the second turn's request to reach A's API", func() bool { return len(requestsFor(a.api, second)) > 0 })
	sawAnswer := false
	unlock := func() {}
	switch point {
	case beforeFirstToken:
		// The request is held: not a token was sent.
	case midStream:
		time.Sleep(3 * fakeapi.SlowDelay) // a few deltas streamed, the most still to come
	case afterResult:
		unlock = lock(ctx)
		held()
		// The CLI reads the answer and writes its result; A cannot store
		// the turn, and so cannot answer the caller.
		select {
		case res := <-answered:
			t.Fatalf("A answered while the store was locked: %s", text(res))
		case <-time.After(3 * time.Second):
		}
	case afterAnswer:
		res := <-answered
		if res.IsError {
			t.Fatalf("the second turn on A: %s", text(res))
		}
		sawAnswer = true
	}
	killed := time.Now()
	if err := syscall.Kill(a.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	unlock() // B needs the store
	if !testkit.Within(5*time.Second, func() bool { return len(markedAlive(markerA)) == 0 }) {
		t.Errorf("A's processes alive 5 s after A was killed: %v", markedAlive(markerA))
	}
	failoverServe(t, ctx, b, sid, killed, lease, point, sawAnswer)
	w.check(t)
}

// failoverStore makes the store two instances share and a function that
// locks it against writers until the function it returns is called.
func failoverStore(t *testing.T, store string) (target string, lock func(context.Context) (unlock func())) {
	var db *sql.DB
	var stmt string
	if store == "postgres" {
		target = pgtest.New(t)
		s, err := postgres.Open(context.Background(), target, postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		db, stmt = s.SQL, `LOCK TABLE history, records, chunks IN EXCLUSIVE MODE`
	} else {
		target = filepath.Join(t.TempDir(), "sessions.db")
		s, err := sqlite.Open(context.Background(), target, sqlite.Options{BackupEvery: -1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		db = s.SQL
	}
	return target, func(ctx context.Context) func() {
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		begin := "BEGIN IMMEDIATE" // every writer waits
		if stmt != "" {
			begin = "BEGIN"
		}
		if _, err := conn.ExecContext(ctx, begin); err != nil {
			t.Fatal(err)
		}
		if stmt != "" {
			if _, err := conn.ExecContext(ctx, stmt); err != nil {
				t.Fatal(err)
			}
		}
		return func() {
			if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
				t.Error(err)
			}
			conn.Close()
		}
	}
}

// leaseUntil is the time a refusal of a session held elsewhere names.
var leaseUntil = regexp.MustCompile(`its lease runs until (\S+) \(in ([0-9.]+m?s)\)`)

// failoverServe queries the session on B from the moment A was killed
// until B serves it, and checks what B's CLI was sent and B's history.
func failoverServe(t *testing.T, ctx context.Context, b *e2e, sid string, killed time.Time, lease time.Duration, point killPoint, sawAnswer bool) {
	t.Helper()
	refused := 0
	var res *mcp.CallToolResult
	var out map[string]any
	for {
		sent := time.Now()
		res, out = b.query(t, ctx, sid, failQuestion)
		if !res.IsError {
			break
		}
		m := leaseUntil.FindStringSubmatch(text(res))
		if m == nil || time.Since(killed) > 30*time.Second {
			t.Fatalf("query on B %s after A was killed: %s", sent.Sub(killed), text(res))
		}
		until, err := time.Parse(time.RFC3339Nano, m[1])
		if err != nil || until.Before(sent.Add(-time.Second)) || until.After(killed.Add(lease+time.Second)) {
			t.Fatalf("B's refusal names the time %s (%v): want a moment within the lease (%s) of the kill at %s", m[1], err, lease, killed.UTC().Format(time.RFC3339Nano))
		}
		refused++
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(time.Until(until) + 50*time.Millisecond): // retry when the refusal says
		}
	}
	t.Logf("%s: B refused %d queries, served the session %s after the kill; claudeSessionId %v",
		point, refused, time.Since(killed).Round(time.Millisecond), out["claudeSessionId"])
	if refused == 0 {
		t.Error("B served at once: A's lease did not hold the session")
	}
	// B's CLI resumes the conversation (a transcript held the last turn
	// the store recorded) or replays the stored history into a fresh one
	// (none did: A's CLI had not written it when A was killed); either way
	// its request carries what the caller saw.
	req := requestFor(t, b.api, failQuestion)
	var said []string
	for _, m := range req.Messages {
		if m.Role == "user" || m.Role == "assistant" {
			said = append(said, m.Role+": "+m.Text())
		}
	}
	conversation := strings.Join(said, "\n")
	how := "resumed"
	if len(said) == 1 {
		how = "replayed"
	}
	t.Logf("%s: B's CLI %s the conversation (%d messages)", point, how, len(said))
	if !strings.Contains(conversation, failFirst) || !strings.Contains(conversation, "Hello from fake API (n_messages=1)") {
		t.Errorf("B's request lacks the first turn, which the caller saw answered:\n%s", conversation)
	}
	if sawAnswer && strings.Count(conversation, failSecond) < 2 { // asked, and echoed
		t.Errorf("B's request lacks the second turn, whose answer the caller saw:\n%s", conversation)
	}
	_, hist := b.call(t, ctx, "claude_session_history", map[string]any{"sessionId": sid}, nil)
	var prompts []string
	entries, _ := hist["entries"].([]any)
	for _, e := range entries {
		if e := e.(map[string]any); e["kind"] == "prompt" {
			prompts = append(prompts, fmt.Sprint(e["text"]))
		}
	}
	want := []string{failFirst}
	if sawAnswer {
		want = append(want, failSecond)
	}
	for _, p := range want {
		if !slices.Contains(prompts, p) {
			t.Errorf("history on B: prompts %q, want %q among them", prompts, p)
		}
	}
	if len(prompts) == 0 || prompts[len(prompts)-1] != failQuestion {
		t.Errorf("history on B: prompts %q, want B's question last", prompts)
	}
}

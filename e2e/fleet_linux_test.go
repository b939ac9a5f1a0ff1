//go:build linux

package e2e_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/pgtest"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store/backend"
)

// fleetLease is the lease of the fleet tests (CLAUDE_AGENT_MCP_LEASE, a
// testing knob): short, so that a takeover comes soon.
const fleetLease = 3 * time.Second

// TestE2EFleetFailover: two servers on one PostgreSQL database, each with
// its own HOME and CLI config directory. A runs a session's turn (a slow
// answer) and is killed (SIGKILL) in the middle of it: its claude processes
// die with it, and B serves the session's next query with its history,
// taking the session over within the lease plus one second of the kill.
// Throughout, a watch of /proc checks that no two claude processes of the
// two servers ever run one conversation.
func TestE2EFleetFailover(t *testing.T) {
	t.Parallel()
	url := pgtest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env := map[string]string{"CLAUDE_AGENT_MCP_LEASE": fleetLease.String()}
	a := startE2E(t, e2eOptions{args: []string{"--store", url}, env: env})
	b := startE2E(t, e2eOptions{args: []string{"--store", url}, env: env})
	markerA := serverMarker(t, a.cmd.Process.Pid)
	w := watchProcs(t, map[string]string{"A": markerA, "B": serverMarker(t, b.cmd.Process.Pid)})

	sid, _ := a.create(t, ctx, nil)
	res, out := a.query(t, ctx, sid, "remember the word PELICAN")
	if res.IsError {
		t.Fatalf("query on A: %s", text(res))
	}
	csid, _ := out["claudeSessionId"].(string)

	// A's second turn streams slowly (SLOW: 20 deltas 0.5 s apart); A is
	// killed while it runs: the session is running there and the API has
	// the turn's request.
	slow := make(chan error, 1)
	go func() {
		_, err := a.session.CallTool(ctx, &mcp.CallToolParams{Name: "claude_chat_query", Arguments: map[string]any{"sessionId": sid, "prompt": "SLOW answer"}})
		slow <- err
	}()
	testkit.Until(t, 30*time.Second, "A's slow turn to reach the API and stream", func() bool {
		res, out, err := a.callErr(ctx, "claude_session_list", map[string]any{"sessionId": sid}, nil)
		if err != nil || res.IsError {
			return false
		}
		ss, _ := out["sessions"].([]any)
		return len(ss) == 1 && ss[0].(map[string]any)["state"] == "running" && len(requestsFor(a.api, "SLOW answer")) > 0
	})
	procsA := w.sightings(csid)
	if len(procsA) != 1 || procsA[0].server != "A" {
		t.Fatalf("claude processes seen running the conversation while A runs its turn: %+v, want one of A's", procsA)
	}
	killed := time.Now()
	if err := syscall.Kill(a.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-slow:
		if err == nil {
			t.Fatal("A's slow query succeeded though A was killed in the middle of it")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("A's slow query did not end 30 s after A was killed")
	}
	// Nothing of A's survives: its claude processes die with it (Pdeathsig),
	// the watchdog kills the rest.
	if !testkit.Within(5*time.Second, func() bool { return len(markedAlive(markerA)) == 0 }) {
		t.Errorf("A's processes alive 5 s after A was killed: %v", markedAlive(markerA))
	}

	// B takes the session over once A's lease has lapsed: until then it
	// refuses the query as running elsewhere.
	refused := 0
	var first, sent time.Time
	for {
		sent = time.Now()
		if first.IsZero() {
			first = sent
		}
		res, out = b.query(t, ctx, sid, "which word did I ask you to remember?")
		if !res.IsError {
			break
		}
		if !strings.Contains(text(res), "runs on another claude-agent-mcp instance") || time.Since(killed) > 30*time.Second {
			t.Fatalf("query on B after A was killed (%s after the kill): %s", time.Since(killed), text(res))
		}
		refused++
		select { // the lease lapses on the clock: asking again is the way to see it
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	answered := time.Since(killed)
	procs := w.sightings(csid)
	if len(procs) != 2 || procs[1].server != "B" {
		t.Fatalf("claude processes seen running the conversation: %+v, want A's then B's", procs)
	}
	started := procs[1].first.Sub(killed)
	t.Logf("after the kill: B refused %d queries, took the one sent %s after the kill, started its claude process at %s, answered at %s (lease %s)",
		refused, sent.Sub(killed).Round(time.Millisecond), started.Round(time.Millisecond), answered.Round(time.Millisecond), fleetLease)
	// A renewed its lease at most a third of it before the kill: a query
	// sent within the other two thirds finds it held.
	if refused == 0 && first.Sub(killed) < fleetLease*2/3 {
		t.Errorf("B took the session over %s after the kill: A's lease did not hold it", first.Sub(killed))
	}
	if started > fleetLease+time.Second {
		t.Errorf("B started the session's claude process %s after A was killed, want at most the lease (%s) plus 1 s", started, fleetLease)
	}
	checkResumedOnB(t, b, out, csid)
	_, out = b.call(t, ctx, "claude_session_history", map[string]any{"sessionId": sid}, nil)
	var prompts []string
	entries, _ := out["entries"].([]any)
	for _, e := range entries {
		if e := e.(map[string]any); e["kind"] == "prompt" {
			prompts = append(prompts, e["text"].(string))
		}
	}
	t.Logf("history on B: prompts %q", prompts)
	if len(prompts) < 2 || prompts[0] != "remember the word PELICAN" || prompts[len(prompts)-1] != "which word did I ask you to remember?" {
		t.Errorf("history on B: prompts %q, want A's first and B's last", prompts)
	}
	if res, _ := b.query(t, ctx, sid, "ECHO still here"); res.IsError {
		t.Errorf("a further query on B: %s", text(res))
	}
	if procs := w.sightings(csid); len(procs) != 2 {
		t.Errorf("claude processes seen running the conversation: %+v, want A's then B's", procs)
	}
	w.check(t)
}

// TestE2EFleetQuota: --user-max-sessions is exact under concurrent creates
// on two servers sharing one PostgreSQL database: of 8 creates by one
// user, split across both, exactly 3 succeed, the others are refused with
// the quota's error, and the store counts 3 sessions for the user.
func TestE2EFleetQuota(t *testing.T) {
	t.Parallel()
	const limit, creates = 3, 8
	url := pgtest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := []string{"--store", url, "--user-max-sessions", "3"}
	servers := []*httpE2E{
		startHTTPE2E(t, httpE2EOptions{users: []string{"alice"}, args: args}),
		startHTTPE2E(t, httpE2EOptions{users: []string{"alice"}, args: args}),
	}
	w := watchProcs(t, map[string]string{"A": serverMarker(t, servers[0].cmd.Process.Pid), "B": serverMarker(t, servers[1].cmd.Process.Pid)})
	clients := []*mcp.ClientSession{servers[0].connect(t, "alice", ""), servers[1].connect(t, "alice", "")}

	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	results := make([]outcome, creates)
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i := range creates {
		wg.Go(func() {
			<-gate
			res, err := clients[i%2].CallTool(ctx, &mcp.CallToolParams{Name: "claude_session_create", Arguments: map[string]any{"cwd": servers[i%2].cwd}})
			results[i] = outcome{res, err}
		})
	}
	close(gate)
	wg.Wait()
	made := map[int]int{}
	for i, r := range results {
		switch {
		case r.err != nil:
			t.Errorf("create %d on server %d: %v", i, i%2, r.err)
		case !r.res.IsError:
			made[i%2]++
		case !strings.Contains(text(r.res), "--user-max-sessions"):
			t.Errorf("create %d on server %d refused, not by the quota: %s", i, i%2, text(r.res))
		}
	}
	t.Logf("sessions made: %d on the first server, %d on the second", made[0], made[1])
	if made[0]+made[1] != limit {
		t.Errorf("%d of %d concurrent creates succeeded, want exactly %d (--user-max-sessions)", made[0]+made[1], creates, limit)
	}

	st, err := backend.Open(ctx, url, "", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if n, err := st.Count(ctx, "alice"); err != nil || n != limit {
		t.Errorf("the store counts %d sessions of alice (%v), want %d", n, err, limit)
	}
	for i, c := range clients {
		_, out := httpCall(t, ctx, c, "claude_session_list", map[string]any{})
		if ss, _ := out["sessions"].([]any); len(ss) != limit {
			t.Errorf("server %d lists %d sessions of alice, want %d", i, len(ss), limit)
		}
	}
	w.check(t)
}

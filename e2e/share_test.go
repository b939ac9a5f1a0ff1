//go:build linux

package e2e_test

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store/sqlite"
)

// TestE2EShare: two server processes on one host share the session store
// (one SQLite file) and the CLI's config directory (the transcripts), as
// instances behind a proxy do. A session the first made dormant resumes on
// the second with its conversation; while one runs it the other refuses to;
// closed on one, it is gone from both at once and from a later server; the cost
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
	// A lists from the store, where the session is closed: it is gone
	// from A's list and its lookups at once.
	_, out = a.call(t, ctx, "claude_session_list", map[string]any{}, nil)
	for _, s := range out["sessions"].([]any) {
		if s.(map[string]any)["sessionId"] == sid {
			t.Errorf("A lists the session B closed: %v", s)
		}
	}
	// Gone, or, when the query comes before A's watch of the store (every
	// 100 ms) has dropped its copy, refused as closed by its lease.
	res, _ = a.query(t, ctx, sid, "after the close")
	if !res.IsError || !strings.Contains(text(res), "no open session has id") && !strings.Contains(text(res), "was closed on another claude-agent-mcp instance") {
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
	st, err := sqlite.Open(ctx, filepath.Join(a.home, "state", "sessions.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if got, err := st.SpentTotal(ctx); err != nil || spent <= 0 || math.Abs(got-spent) > 1e-9 {
		t.Errorf("the store counts %v spent (%v), want %v (every turn of both servers once)", got, err, spent)
	}
	var held int
	if err := st.SQL.QueryRow(`SELECT count(*) FROM leases WHERE holder <> ''`).Scan(&held); err != nil || held != 0 {
		t.Errorf("leases held after both servers stopped: %d (%v)", held, err)
	}
	if _, err := st.Get(ctx, sid); !errors.Is(err, store.ErrClosed) {
		t.Errorf("no tombstone for the closed session: %v", err)
	}

	c := startE2E(t, e2eOptions{home: a.home})
	_, out = c.call(t, ctx, "claude_session_list", map[string]any{}, nil)
	ss, _ := out["sessions"].([]any)
	if len(ss) != 1 || ss[0].(map[string]any)["sessionId"] != sid2 {
		t.Errorf("a later server lists %v, want only %s", ss, sid2)
	}
}

// TestE2EShareFencing: a server paused past its claim's lease (SIGSTOP, as
// a suspended laptop or a long stall would) while another server takes its
// session over does not drive its claude process again when it wakes up:
// its query is refused (the session runs elsewhere), its process is
// stopped without having reached the API, and one claude process runs the
// session. The lease is 3 s (CLAUDE_AGENT_MCP_LEASE, a testing knob).
func TestE2EShareFencing(t *testing.T) {
	t.Parallel()
	lease := map[string]string{"CLAUDE_AGENT_MCP_LEASE": "3s"}
	a := startE2E(t, e2eOptions{env: lease})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sid, _ := a.create(t, ctx, nil)
	res, out := a.query(t, ctx, sid, "hi")
	if res.IsError {
		t.Fatalf("query on A: %s", text(res))
	}
	csid, _ := out["claudeSessionId"].(string)
	pidA := pidOf(a.info(t, ctx, sid))
	if csid == "" || pidA == 0 {
		t.Fatalf("A's session: claudeSessionId %q, pid %d", csid, pidA)
	}
	b := startE2E(t, e2eOptions{home: a.home, env: lease})

	pauseOutsideLock(t, a.cmd.Process.Pid)
	t.Cleanup(func() { _ = syscall.Kill(a.cmd.Process.Pid, syscall.SIGCONT) })
	// B takes the session over once A's lease has run out.
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, _ = b.query(t, ctx, sid, "taken over by B")
		if !res.IsError {
			break
		}
		if !strings.Contains(text(res), "runs on another claude-agent-mcp instance") || time.Now().After(deadline) {
			t.Fatalf("query on B while A is paused: %s", text(res))
		}
		select { // the lease runs out on the clock: polling is the way to see it
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
	pidB := pidOf(b.info(t, ctx, sid))

	requestsA := len(a.api.MessageRequests())
	if err := syscall.Kill(a.cmd.Process.Pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	res, _ = a.query(t, ctx, sid, "from A after waking up")
	if !res.IsError || !strings.Contains(text(res), "another claude-agent-mcp instance") {
		t.Errorf("query on A after B took the session over: isError=%v %s", res.IsError, text(res))
	}
	if n := len(a.api.MessageRequests()); n != requestsA {
		t.Errorf("A's claude process reached the API %d time(s) after B took the session over", n-requestsA)
	}
	if left := waitGone([]int{pidA}, 10*time.Second); len(left) > 0 {
		t.Errorf("A's claude process %d for the session is alive 10 s after A woke up", pidA)
	}
	if procs := sessionProcesses(csid); !slices.Equal(procs, []int{pidB}) {
		t.Errorf("claude processes running the session: %v, want B's %d only", procs, pidB)
	}
	if res, _ := b.query(t, ctx, sid, "B goes on"); res.IsError {
		t.Errorf("query on B after A woke up: %s", text(res))
	}
}

// pauseOutsideLock stops the process pid (SIGSTOP) at a moment it holds no
// write lock: a server paused while it writes the store would make every
// other server wait for it.
func pauseOutsideLock(t *testing.T, pid int) {
	t.Helper()
	for range 50 {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		for st := procState(pid); st != "T"; st = procState(pid) { // a signal is delivered asynchronously: poll until it took effect
			if st == "" || st == "Z" {
				t.Fatalf("process %d is gone", pid)
			}
			time.Sleep(5 * time.Millisecond)
		}
		if !holdsFlock(pid) {
			return
		}
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatalf("process %d held a file lock at each of 50 pauses", pid)
}

// procState is a process's state letter, from /proc ("" when it is gone).
func procState(pid int) string {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(data)
	if f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]); len(f) > 0 {
		return f[0]
	}
	return ""
}

// holdsFlock reports whether pid holds a flock or a POSIX write lock
// (SQLite's, while it writes), from /proc/locks.
func holdsFlock(pid int) bool {
	data, _ := os.ReadFile("/proc/locks")
	for _, line := range strings.Split(string(data), "\n") {
		// "1: FLOCK  ADVISORY  WRITE 12345 fd:01:123 0 EOF"
		if f := strings.Fields(line); len(f) > 4 && f[4] == strconv.Itoa(pid) && (f[1] == "FLOCK" || f[1] == "POSIX" && f[3] == "WRITE") {
			return true
		}
	}
	return false
}

// sessionProcesses lists the processes started by a claude-agent-mcp server
// (they carry its marker) whose command line names the Claude session.
func sessionProcesses(claudeSessionID string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || procState(pid) == "Z" {
			continue
		}
		cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		environ, _ := os.ReadFile("/proc/" + e.Name() + "/environ")
		if strings.Contains(string(cmdline), claudeSessionID) && strings.Contains("\x00"+string(environ), "\x00"+serverMarkerEnv+"=") {
			out = append(out, pid)
		}
	}
	return out
}

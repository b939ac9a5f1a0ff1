//go:build linux

package e2e_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// End-to-end tests of the session lifecycle: idle dormancy, the live-process
// cap, query timeouts, the server's death and restart, and the registry.

// waitState polls claude_session_list until sid is in state want, for up to
// d, and returns its entry and how long it took.
func (e *e2e) waitState(t *testing.T, ctx context.Context, sid, want string, d time.Duration) (map[string]any, time.Duration) {
	t.Helper()
	start := time.Now()
	for {
		info := e.info(t, ctx, sid)
		if info["state"] == want {
			return info, time.Since(start)
		}
		if time.Since(start) > d {
			t.Fatalf("session %s is %v after %s, want %s", sid, info["state"], d, want)
		}
		select { // the idle timer is the server's; polling is the only way to see it fire
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func pidOf(info map[string]any) int {
	f, _ := info["pid"].(float64)
	return int(f)
}

func TestE2EIdleTimeout(t *testing.T) {
	t.Parallel()
	// No warm spare: it counts toward liveProcesses and stops on its own
	// idle timer, which this test does not follow (TestSpareGivesWay does).
	e := startE2E(t, e2eOptions{args: []string{"--idle-timeout", "2s", "--warm-spares", "0"}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sid, _ := e.create(t, ctx, nil)
	if res, _ := e.query(t, ctx, sid, "first"); res.IsError {
		t.Fatalf("first query: %s", text(res))
	}
	info := e.info(t, ctx, sid)
	pid := pidOf(info)
	if info["state"] != "idle" || pid == 0 {
		t.Fatalf("right after the query: %v", info)
	}
	info, took := e.waitState(t, ctx, sid, "dormant", 8*time.Second)
	t.Logf("dormant %s after the query", took.Round(100*time.Millisecond))
	if pidOf(info) != 0 {
		t.Errorf("a dormant session lists pid %v", info["pid"])
	}
	if left := waitGone([]int{pid}, 5*time.Second); len(left) > 0 {
		t.Errorf("the idle session's claude (pid %d) is still alive", pid)
	}
	_, out := e.call(t, ctx, "claude_session_list", map[string]any{}, nil)
	if n := out["liveProcesses"]; n != float64(0) {
		t.Errorf("liveProcesses = %v with the only session dormant", n)
	}

	res, out := e.query(t, ctx, sid, "after dormancy")
	if res.IsError {
		t.Fatalf("query after dormancy: %s", text(res))
	}
	if n := requestFor(t, e.api, "after dormancy").ConversationLen(); n < 3 {
		t.Errorf("the resumed session sent %d messages; the history did not survive dormancy (finalText %v)", n, out["finalText"])
	}
	if p := pidOf(e.info(t, ctx, sid)); p == 0 || p == pid {
		t.Errorf("after resuming, pid = %d (was %d)", p, pid)
	}
}

func TestE2EMaxLive(t *testing.T) {
	t.Parallel()
	e := startE2E(t, e2eOptions{args: []string{"--max-live", "1"}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a, _ := e.create(t, ctx, nil)
	if res, _ := e.query(t, ctx, a, "first in A"); res.IsError {
		t.Fatalf("A: %s", text(res))
	}
	pidA := pidOf(e.info(t, ctx, a))
	b, _ := e.create(t, ctx, nil)
	if res, _ := e.query(t, ctx, b, "first in B"); res.IsError {
		t.Fatalf("B: %s", text(res))
	}
	_, out := e.call(t, ctx, "claude_session_list", map[string]any{}, nil)
	if out["liveProcesses"] != float64(1) || out["maxLive"] != float64(1) {
		t.Errorf("list: liveProcesses=%v maxLive=%v", out["liveProcesses"], out["maxLive"])
	}
	if st := e.info(t, ctx, a)["state"]; st != "dormant" {
		t.Errorf("A is %v after B started, want dormant", st)
	}
	if left := waitGone([]int{pidA}, 5*time.Second); len(left) > 0 {
		t.Errorf("A's claude (pid %d) is still alive", pidA)
	}

	res, _ := e.query(t, ctx, a, "second in A")
	if res.IsError {
		t.Fatalf("A again: %s", text(res))
	}
	if n := requestFor(t, e.api, "second in A").ConversationLen(); n < 3 {
		t.Errorf("A resumed with %d messages; its history was lost", n)
	}
	if st := e.info(t, ctx, b)["state"]; st != "dormant" {
		t.Errorf("B is %v after A resumed, want dormant", st)
	}
	_, out = e.call(t, ctx, "claude_session_list", map[string]any{}, nil)
	if out["liveProcesses"] != float64(1) {
		t.Errorf("liveProcesses = %v, want 1", out["liveProcesses"])
	}
}

func TestE2EQueryTimeout(t *testing.T) {
	t.Parallel()
	e := startE2E(t, e2eOptions{args: []string{"--query-timeout", "3s"}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sid, _ := e.create(t, ctx, nil)
	// A first turn starts the process: the timeout counts from the query's
	// start, and one that ran out before the slow prompt reached the API
	// would leave it to the CLI to send with the next prompt.
	if res, _ := e.query(t, ctx, sid, "hi"); res.IsError {
		t.Fatalf("first query: %s", text(res))
	}
	start := time.Now()
	res, out := e.query(t, ctx, sid, "SLOW40") // 40 deltas 0.5 s apart: ~20 s
	took := time.Since(start)
	t.Logf("timed-out query returned after %s: %q", took.Round(100*time.Millisecond), text(res))
	if took > 12*time.Second {
		t.Errorf("the query returned %s after it started, want ~3 s (the timeout) plus the interrupt", took)
	}
	if !res.IsError && out["interrupted"] != true {
		t.Errorf("a timed-out query is neither isError nor interrupted: %v", out)
	}
	if !strings.Contains(text(res), "timed out") {
		t.Errorf("text does not mention the timeout: %q", text(res))
	}
	res, out = e.query(t, ctx, sid, "after the timeout")
	if res.IsError || out["interrupted"] != false {
		t.Errorf("query after the timeout: %s %v", text(res), out)
	}
}

// TestE2EServerKilled: when the server dies by SIGKILL (no chance to clean
// up) mid-turn, every process below it goes too: the claude processes
// (Pdeathsig), the MCP servers they run, and a running Bash tool's
// processes.
func TestE2EServerKilled(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		create  map[string]any
		prompt  string
		waitFor string // a process name to wait for before the kill
	}{
		{"streaming", map[string]any{}, "SLOW", ""},
		{"mcp_server", map[string]any{"strictMcpConfig": true, "mcpServers": "nested"}, "SLOW", ""},
		{"bash_tool", map[string]any{"permissionMode": "bypassPermissions"}, "TOOL_BASH[" + longCommand(47) + "]", "sleep"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := startE2E(t, e2eOptions{})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if tc.create["mcpServers"] == "nested" {
				tc.create["mcpServers"] = map[string]any{"nested": map[string]any{"command": serverBinary(t),
					"args": []string{"--persist=false", "--log-level", "off", "--claude-path", e.claude}}}
			}
			e.create(t, ctx, nil) // an idle session too
			sid, _ := e.create(t, ctx, tc.create)
			go e.session.CallTool(ctx, &mcp.CallToolParams{Name: "claude_chat_query", Arguments: map[string]any{"sessionId": sid, "prompt": tc.prompt}})
			if _, err := e.api.WaitMessageRequests(ctx, 1); err != nil {
				t.Fatal(err)
			}
			pid := e.cmd.Process.Pid
			kids := descendants(t, pid)
			if tc.waitFor != "" {
				kids = e.waitToolProcess(t, ctx, tc.waitFor)
			}
			if len(kids) < 2 {
				t.Fatalf("expected ≥2 processes under the server, found %v", kids)
			}
			serverSession := sessionOf(pid)
			sids := map[int]int{}
			var names []string
			for _, p := range kids {
				sids[p] = sessionOf(p)
				names = append(names, comm(p))
			}
			t.Logf("killing the server with %d processes below it: %v", len(kids), names)
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			// Everything must go: the claude processes die with the server
			// (Pdeathsig), and the watchdog kills what they started, also the
			// Bash commands the CLI runs in sessions of their own.
			left := waitGone(kids, 5*time.Second)
			var desc []string
			for _, p := range left {
				desc = append(desc, fmt.Sprintf("%d (%s, session %d; server session %d)", p, comm(p), sids[p], serverSession))
				_ = syscall.Kill(p, syscall.SIGKILL)
			}
			if len(desc) > 0 {
				t.Errorf("processes alive 5 s after the server was killed: %s", strings.Join(desc, ", "))
			}
		})
	}
}

// TestE2EStopDuringBashTool: closing a session, or stopping the server,
// while a Bash tool runs ends the tool's processes too. (The CLI runs them
// in their own session, so only its own handling of the interrupt reaches
// them, not signals to its process group.)
func TestE2EStopDuringBashTool(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"close", "eof"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			e := startE2E(t, e2eOptions{})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			sid, _ := e.create(t, ctx, map[string]any{"permissionMode": "bypassPermissions"})
			done := make(chan struct{})
			go func() {
				defer close(done)
				_, _ = e.session.CallTool(ctx, &mcp.CallToolParams{Name: "claude_chat_query", Arguments: map[string]any{"sessionId": sid, "prompt": "TOOL_BASH[" + longCommand(53) + "]"}})
			}()
			kids := withoutWatchdog(e.waitToolProcess(t, ctx, "sleep"))
			switch how {
			case "close":
				if res, _ := e.call(t, ctx, "claude_session_close", map[string]any{"sessionId": sid}, nil); res.IsError {
					t.Fatalf("close: %s", text(res))
				}
			case "eof":
				e.stdin.Close()
			}
			// A close ends the session's processes; the server's warm
			// spares stay. At EOF the server stops: everything goes.
			var left []int
			if how == "close" {
				left = e.waitGoneButSpares(t, kids, 10*time.Second)
			} else {
				left = waitGone(kids, 10*time.Second)
			}
			if len(left) > 0 {
				for _, p := range left {
					_ = syscall.Kill(p, syscall.SIGKILL)
				}
				t.Errorf("%s: processes alive 10 s later: %v", how, left)
			}
			<-done
		})
	}
}

// longCommand is a Bash command that runs a sleep process for the given
// seconds. It does not start with the sleep: CLI 2.1.330 refuses a command
// whose first part is "sleep N" with N ≥ 25 unless it runs in the
// background ("Blocked: standalone sleep N. To wait for a condition, use
// Monitor …", a tool_use_error), so the model waits with its Monitor tool.
func longCommand(seconds int) string {
	return fmt.Sprintf("echo started; sleep %d", seconds)
}

// waitToolProcess polls the processes under the server until one is named
// name and returns them all. It fails at once when a tool result reaches the
// fake API first: the tool was refused, or ended, before its process was
// seen.
func (e *e2e) waitToolProcess(t *testing.T, ctx context.Context, name string) []int {
	t.Helper()
	for {
		kids := descendants(t, e.cmd.Process.Pid)
		if hasComm(kids, name) {
			return kids
		}
		for _, r := range e.api.MessageRequests() {
			if trs := r.LastToolResults(); len(trs) > 0 {
				t.Fatalf("the tool ended before a %q process appeared under the server: %+v", name, trs)
			}
		}
		select { // the tool's process is only observable by polling /proc
		case <-ctx.Done():
			t.Fatalf("no %q process appeared under the server: %v", name, kids)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// withoutWatchdog drops the server's watchdog, which lives as long as the
// server, from pids.
func withoutWatchdog(pids []int) []int {
	var out []int
	for _, p := range pids {
		cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(p) + "/cmdline")
		if !strings.Contains(string(cmdline), watchdogArg) {
			out = append(out, p)
		}
	}
	return out
}

// sessionOf is a process's session id, from /proc (0 when it is gone).
func sessionOf(pid int) int {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 4 {
		return 0
	}
	n, _ := strconv.Atoi(f[3])
	return n
}

// comm is a process's command name, from /proc.
func comm(pid int) string {
	data, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	return strings.TrimSpace(string(data))
}

func hasComm(pids []int, name string) bool {
	for _, p := range pids {
		if comm(p) == name {
			return true
		}
	}
	return false
}

// TestE2ERestart: a second server with the same state file (and HOME, where
// the CLI keeps transcripts) lists the first one's session as dormant and
// resumes it with its history.
func TestE2ERestart(t *testing.T) {
	t.Parallel()
	a := startE2E(t, e2eOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sid, _ := a.create(t, ctx, nil)
	res, out := a.query(t, ctx, sid, "before restart")
	if res.IsError {
		t.Fatalf("query in A: %s", text(res))
	}
	csid, _ := out["claudeSessionId"].(string)
	a.stdin.Close()
	select {
	case <-a.exited:
	case <-time.After(20 * time.Second):
		t.Fatal("server A did not exit after stdin closed")
	}

	b := startE2E(t, e2eOptions{home: a.home})
	_, out = b.call(t, ctx, "claude_session_list", map[string]any{}, nil)
	ss, _ := out["sessions"].([]any)
	if len(ss) != 1 {
		t.Fatalf("server B lists %d sessions, want 1: %v", len(ss), out)
	}
	info := ss[0].(map[string]any)
	if info["sessionId"] != sid || info["claudeSessionId"] != csid || info["state"] != "dormant" || info["queries"] != float64(1) {
		t.Errorf("restored session = %v, want sessionId %s, claudeSessionId %s, dormant, 1 query", info, sid, csid)
	}
	res, out = b.query(t, ctx, sid, "after restart")
	if res.IsError {
		t.Fatalf("query in B: %s", text(res))
	}
	if n := requestFor(t, b.api, "after restart").ConversationLen(); n < 3 {
		t.Errorf("the restored session sent %d messages; its history was lost", n)
	}
	if out["claudeSessionId"] != csid {
		t.Errorf("claudeSessionId after the restart = %v, want %s", out["claudeSessionId"], csid)
	}
	// The history spans the restart: the earlier turn comes from the CLI's
	// transcript, the new one from this server.
	_, out = b.call(t, ctx, "claude_session_history", map[string]any{"sessionId": sid}, nil)
	var prompts []string
	for _, e := range out["entries"].([]any) {
		if e := e.(map[string]any); e["kind"] == "prompt" {
			prompts = append(prompts, e["text"].(string))
		}
	}
	if strings.Join(prompts, "|") != "before restart|after restart" {
		t.Errorf("history prompts after the restart = %q", prompts)
	}

	// A third server with a stricter policy lists the session as refused and
	// refuses its queries, naming the flag; it keeps the session.
	b.stdin.Close()
	<-b.exited
	c := startE2E(t, e2eOptions{home: a.home, args: []string{"--allowed-roots", t.TempDir()}})
	_, out = c.call(t, ctx, "claude_session_list", map[string]any{"sessionId": sid}, nil)
	info = out["sessions"].([]any)[0].(map[string]any)
	if info["state"] != "refused" || !strings.Contains(fmt.Sprint(info["failure"]), "--allowed-roots") {
		t.Errorf("session under a stricter policy = %v, want refused naming --allowed-roots", info)
	}
	res, _ = c.query(t, ctx, sid, "refused")
	if !res.IsError || !strings.Contains(text(res), "--allowed-roots") {
		t.Errorf("query under a stricter policy: isError=%v %s", res.IsError, text(res))
	}
	if n := len(c.api.MessageRequests()); n != 0 {
		t.Errorf("a refused session reached the API %d time(s)", n)
	}
}

// TestE2EStateFileMigration: at the first start, the old registry file
// (--state-file) is imported into the empty store, once, and its session
// resumes; a registry that does not parse is logged, and the server starts
// with an empty store.
func TestE2EStateFileMigration(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	t.Run("import", func(t *testing.T) {
		dir := t.TempDir()
		state := filepath.Join(dir, "sessions.json")
		cwd := t.TempDir()
		reg := fmt.Sprintf(`{"version":3,"sessions":[{"sessionId":"9b2f6a0e-1111-4c3e-8d6a-000000000001","claudeSessionId":"5d1e7c2a-aaaa-4b1f-9e3d-000000000001","resumable":false,`+
			`"created":"2026-11-20T09:30:00Z","lastUsed":"2026-11-20T10:30:00Z","queries":0,"costUsd":0.25,"usage":{},"options":{"cwd":%q,"name":"moved"}}],"spentUsd":0.25}`, cwd)
		if err := os.WriteFile(state, []byte(reg), 0o600); err != nil {
			t.Fatal(err)
		}
		e := startE2E(t, e2eOptions{args: []string{"--state-file", state}})
		res, out := e.call(t, ctx, "claude_session_list", map[string]any{}, nil)
		if ss, _ := out["sessions"].([]any); len(ss) != 1 || !strings.Contains(text(res), "moved") || !strings.Contains(text(res), "dormant") {
			t.Fatalf("the imported registry's session is not listed dormant:\n%s", text(res))
		}
		log, _ := os.ReadFile(e.logPath)
		if !strings.Contains(string(log), "imported the old session registry") {
			t.Errorf("the log does not report the import:\n%s", tail(string(log), 2000))
		}
		if _, out := e.call(t, ctx, "claude_chat_query", map[string]any{"sessionId": "9b2f6a0e-1111-4c3e-8d6a-000000000001", "prompt": "Reply with exactly: OK"}, nil); out["isError"] == true {
			t.Errorf("the imported session's query: %v", out)
		}
	})
	t.Run("corrupt", func(t *testing.T) {
		dir := t.TempDir()
		state := filepath.Join(dir, "sessions.json")
		if err := os.WriteFile(state, []byte("{garbage"), 0o600); err != nil {
			t.Fatal(err)
		}
		e := startE2E(t, e2eOptions{args: []string{"--state-file", state}})
		_, out := e.call(t, ctx, "claude_session_list", map[string]any{}, nil)
		if ss, _ := out["sessions"].([]any); len(ss) != 0 {
			t.Errorf("sessions from a corrupt registry: %v", ss)
		}
		log, _ := os.ReadFile(e.logPath)
		if !strings.Contains(string(log), "importing the old session registry") {
			t.Errorf("the log does not report the registry that did not import:\n%s", tail(string(log), 2000))
		}
		sid, _ := e.create(t, ctx, nil)
		if _, out := e.call(t, ctx, "claude_session_list", map[string]any{}, nil); len(out["sessions"].([]any)) != 1 || sid == "" {
			t.Errorf("after a create: %v", out)
		}
	})
}

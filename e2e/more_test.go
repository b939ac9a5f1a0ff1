//go:build linux

package e2e_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// descendants lists the pids below pid (Linux /proc).
func descendants(t *testing.T, pid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc")
	}
	children := map[int][]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces, so cut at the last ')'.
		s := string(data)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 || f[0] == "Z" {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		children[ppid] = append(children[ppid], p)
	}
	var out []int
	var walk func(int)
	walk = func(p int) {
		for _, c := range children[p] {
			out = append(out, c)
			walk(c)
		}
	}
	walk(pid)
	return out
}

// alive reports whether any of pids still exists (and is not a zombie).
func alive(pids []int) []int {
	var out []int
	for _, p := range pids {
		data, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/stat")
		if err != nil {
			continue
		}
		s := string(data)
		if i := strings.LastIndexByte(s, ')'); i >= 0 {
			if f := strings.Fields(s[i+1:]); len(f) > 0 && f[0] == "Z" {
				continue
			}
		}
		out = append(out, p)
	}
	return out
}

// spareLine is how the server's debug log reports a warm spare becoming
// ready, or being taken by a session.
var spareLine = regexp.MustCompile(`(warm spare ready|took a warm spare)[^\n]*? pid=(\d+)`)

// spares are the pids of the server's warm spares that no session has
// taken, read from its debug log. A spare lives as long as the server (or
// its idle timeout), so it is not something a closed session left behind.
func (e *e2e) spares() map[int]bool {
	data, _ := os.ReadFile(e.logPath)
	ready := map[int]bool{}
	for _, m := range spareLine.FindAllStringSubmatch(string(data), -1) {
		pid, _ := strconv.Atoi(m[2])
		ready[pid] = m[1] == "warm spare ready"
	}
	for pid, r := range ready {
		if !r {
			delete(ready, pid)
		}
	}
	return ready
}

// waitGoneButSpares waits up to d for every pid that is not a warm spare
// of e's server to disappear, and returns those left. The spares are read
// again at each look: one may be starting while the wait begins. It also
// fails t when more spares are alive among pids than --warm-spares (the
// default, 1) allows.
func (e *e2e) waitGoneButSpares(t *testing.T, pids []int, d time.Duration) []int {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		spares := e.spares()
		var left, spare []int
		for _, p := range alive(pids) {
			if spares[p] {
				spare = append(spare, p)
			} else {
				left = append(left, p)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			if len(spare) > 1 {
				t.Errorf("%d warm spares alive (%v); --warm-spares is 1", len(spare), spare)
			}
			return left
		}
		time.Sleep(50 * time.Millisecond) // polling the OS is the only way to observe foreign pids
	}
}

// waitGone waits up to d for every pid to disappear.
func waitGone(pids []int, d time.Duration) []int {
	deadline := time.Now().Add(d)
	for {
		left := alive(pids)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(50 * time.Millisecond) // polling the OS is the only way to observe foreign pids
	}
}

func TestE2EParallelSessionsAndDirectCleanup(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("process accounting uses /proc")
	}
	t.Parallel()
	e := startE2E(t, e2eOptions{protocol: "2025-11-25"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	serverPID := e.cmd.Process.Pid

	var ids []string
	for i := 0; i < 2; i++ {
		res, out := e.call(t, ctx, "claude_session_create", map[string]any{"cwd": e.cwd}, nil)
		if res.IsError {
			t.Fatalf("create: %s", text(res))
		}
		ids = append(ids, out["sessionId"].(string))
	}
	var wg sync.WaitGroup
	results := make([]string, 2)
	start := time.Now()
	for i, id := range ids {
		wg.Go(func() {
			_, out, err := e.callErr(ctx, "claude_chat_query", map[string]any{"sessionId": id, "prompt": "SLOW4 p" + strconv.Itoa(i)}, nil)
			if err != nil {
				t.Errorf("session %d: %v", i, err)
			}
			results[i], _ = out["finalText"].(string)
		})
	}
	wg.Wait()
	// Each SLOW4 turn streams for ~2 s; in parallel both finish well before 2×.
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("two parallel queries took %s", d)
	}
	for i, r := range results {
		if !strings.Contains(r, "chunk") {
			t.Errorf("session %d finalText = %q", i, r)
		}
	}

	before := descendants(t, serverPID)
	res, _ := e.call(t, ctx, "claude_direct_query", map[string]any{"prompt": "ECHO once", "cwd": e.cwd}, nil)
	if res.IsError {
		t.Fatalf("direct: %s", text(res))
	}
	res, out := e.call(t, ctx, "claude_direct_query", map[string]any{"prompt": "ERR400 ALWAYS", "cwd": e.cwd}, nil)
	if !res.IsError || !strings.Contains(text(res), "400") || out["finalText"] == nil {
		t.Errorf("failing direct query: isError=%v text=%q out=%v", res.IsError, text(res), out)
	}
	// A cancelled direct query also cleans up.
	cctx, ccancel := context.WithCancel(ctx)
	go func() {
		if _, err := e.api.WaitMessageRequests(ctx, len(e.api.MessageRequests())+1); err == nil {
			ccancel()
		}
	}()
	_, _ = e.session.CallTool(cctx, &mcp.CallToolParams{Name: "claude_direct_query", Arguments: map[string]any{"prompt": "SLOW", "cwd": e.cwd}})
	ccancel()
	// Each direct query took the warm spare and a new one started behind
	// it: that one stays, anything else must go.
	if left := e.waitGoneButSpares(t, newPIDs(descendants(t, serverPID), before), 15*time.Second); len(left) > 0 {
		t.Errorf("direct queries left processes behind: %v", left)
	}
}

func newPIDs(now, before []int) []int {
	old := map[int]bool{}
	for _, p := range before {
		old[p] = true
	}
	var out []int
	for _, p := range now {
		if !old[p] {
			out = append(out, p)
		}
	}
	return out
}

// TestE2EShutdown checks that stdin EOF, SIGTERM and SIGINT each leave no
// claude process behind within 10 s, also with a turn running.
func TestE2EShutdown(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("process accounting uses /proc")
	}
	for _, how := range []string{"eof", "sigterm", "sigint"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			e := startE2E(t, e2eOptions{})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			for i := 0; i < 2; i++ {
				if res, _ := e.call(t, ctx, "claude_session_create", map[string]any{"cwd": e.cwd}, nil); res.IsError {
					t.Fatalf("create: %s", text(res))
				}
			}
			_, out := e.call(t, ctx, "claude_session_list", map[string]any{}, nil)
			if n := len(out["sessions"].([]any)); n != 2 {
				t.Fatalf("list shows %d sessions", n)
			}
			// Start a slow turn in a third session and stop the server mid-turn.
			_, out = e.call(t, ctx, "claude_session_create", map[string]any{"cwd": e.cwd}, nil)
			go e.session.CallTool(ctx, &mcp.CallToolParams{Name: "claude_chat_query", Arguments: map[string]any{"sessionId": out["sessionId"], "prompt": "SLOW"}})
			if _, err := e.api.WaitMessageRequests(ctx, 1); err != nil {
				t.Fatal(err)
			}
			pid := e.cmd.Process.Pid
			kids := descendants(t, pid)
			if len(kids) < 3 {
				t.Fatalf("expected ≥3 claude processes under the server, found %v", kids)
			}
			start := time.Now()
			switch how {
			case "eof":
				e.stdin.Close()
			case "sigterm":
				_ = e.cmd.Process.Signal(syscall.SIGTERM)
			case "sigint":
				_ = e.cmd.Process.Signal(syscall.SIGINT)
			}
			if left := waitGone(append(kids, pid), 10*time.Second); len(left) > 0 {
				t.Fatalf("%s: processes alive 10 s later: %v", how, left)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Fatalf("%s: shutdown took %s, more than 10 s", how, d)
			}
			t.Logf("%s: server and %d children gone in %s", how, len(kids), time.Since(start).Round(time.Millisecond))
		})
	}
}

// TestE2EInspector runs a third-party client, the MCP Inspector CLI, against
// the binary: it lists the tools and calls claude_direct_query.
func TestE2EInspector(t *testing.T) {
	insp := inspectorBin(t)
	t.Parallel()
	e := startE2E(t, e2eOptions{}) // for the API, HOME and env; the Inspector starts its own server
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bin := serverBinary(t)
	// The Inspector gives the server only a minimal environment: pass ours
	// with -e, the server's flags through their env twins.
	base := []string{"--cli", "-e", "CLAUDE_AGENT_MCP_CLAUDE_PATH=" + e.claude,
		"-e", "CLAUDE_AGENT_MCP_STATE_FILE=" + filepath.Join(e.home, "insp.json")}
	for k, v := range e.env {
		if v != "" {
			base = append(base, "-e", k+"="+v)
		}
	}
	base = append(base, bin)
	run := func(args ...string) string {
		cmd := exec.CommandContext(ctx, insp, append(append([]string{}, base...), args...)...)
		cmd.Dir = e.cwd
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("inspector %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	out := run("--method", "tools/list", "--format", "json", "-q")
	for _, name := range []string{"claude_session_create", "claude_chat_query", "claude_direct_query"} {
		if !strings.Contains(out, name) {
			t.Errorf("tools/list lacks %s:\n%s", name, tail(out, 2000))
		}
	}
	out = run("--method", "tools/call", "--tool-name", "claude_direct_query", "--tool-args-json", `{"prompt":"ECHO from inspector","cwd":"`+e.cwd+`"}`, "--format", "json", "-q")
	if !strings.Contains(out, "ECHO from inspector") {
		t.Errorf("direct query through the Inspector:\n%s", tail(out, 2000))
	}
}

// TestE2EResultCap checks that an over-long final text is cut with a marker
// naming the transcript, and that the transcript really holds the turn.
func TestE2EResultCap(t *testing.T) {
	t.Parallel()
	e := startE2E(t, e2eOptions{args: []string{"--max-result-chars", "1000"}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, out := e.call(t, ctx, "claude_direct_query", map[string]any{"prompt": "BIGTEXT", "cwd": e.cwd}, nil)
	if res.IsError {
		t.Fatalf("query: %s", text(res))
	}
	ft, _ := out["finalText"].(string)
	if !strings.HasPrefix(ft, "abcdefghij") || !strings.Contains(ft, "truncated: showing 1000 of 2000000 characters") {
		t.Fatalf("finalText not capped as expected: %q", tail(ft, 300))
	}
	i := strings.Index(ft, "transcript ")
	path := strings.TrimSuffix(ft[i+len("transcript "):], "]")
	st, err := os.Stat(path)
	if err != nil || st.Size() < 2000000 {
		t.Errorf("the named transcript %s does not hold the full text: %v", path, err)
	}
}

// TestE2ECrashResume kills a session's claude mid-turn: the query returns
// at once as an error with the exit status, and the next query resumes the
// conversation in a new process (the API sees the earlier messages).
func TestE2ECrashResume(t *testing.T) {
	t.Parallel()
	e := startE2E(t, e2eOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, out := e.call(t, ctx, "claude_session_create", map[string]any{"cwd": e.cwd}, nil)
	sid := out["sessionId"]
	if _, out = e.call(t, ctx, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "first"}, nil); out["finalText"] != "Hello from fake API (n_messages=1)" {
		t.Fatalf("first query: %v", out)
	}
	_, out = e.call(t, ctx, "claude_session_list", map[string]any{"sessionId": sid}, nil)
	info := out["sessions"].([]any)[0].(map[string]any)
	pid := int(info["pid"].(float64))

	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, _, err := e.callErr(ctx, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "SLOW"}, nil)
		if err != nil {
			t.Errorf("the query: %v", err)
		}
		done <- res
	}()
	if _, err := e.api.WaitMessageRequests(ctx, 2); err != nil {
		t.Fatal(err)
	}
	// The CLI writes its transcript lazily (about a second after a turn);
	// a crash before that leaves nothing to resume (then the session is
	// marked failed, see TestE2EResumeFailure). Wait until it exists.
	transcript := transcriptPath(e, info["claudeSessionId"].(string))
	for deadline := time.Now().Add(15 * time.Second); ; {
		if _, err := os.Stat(transcript); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("transcript %s never appeared", transcript)
		}
		time.Sleep(100 * time.Millisecond) // the CLI's file write is only observable by polling
	}
	killed := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-done:
		if res == nil {
			t.FailNow() // the goroutine reported the call's error
		}
		if d := time.Since(killed); d > 2*time.Second {
			t.Errorf("the query returned %s after the crash, want ≤ 2 s", d)
		}
		if !res.IsError || !strings.Contains(text(res), "killed") {
			t.Errorf("crashed query: isError=%v %q", res.IsError, text(res))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the query did not return after its claude was killed")
	}
	_, out = e.call(t, ctx, "claude_session_list", map[string]any{"sessionId": sid}, nil)
	if st := out["sessions"].([]any)[0].(map[string]any)["state"]; st != "dormant" {
		t.Errorf("state after crash = %v, want dormant", st)
	}
	res, _ := e.call(t, ctx, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "after crash"}, nil)
	if res.IsError {
		t.Fatalf("query after crash: %s", text(res))
	}
	reqs := e.api.MessageRequests()
	if n := reqs[len(reqs)-1].ConversationLen(); n < 3 {
		t.Errorf("the resumed conversation sent %d messages; the history was lost", n)
	}
}

// transcriptPath is where the CLI under e keeps a session's transcript.
func transcriptPath(e *e2e, claudeSessionID string) string {
	slug := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, e.cwd)
	return filepath.Join(e.home, ".claude", "projects", slug, claudeSessionID+".jsonl")
}

// TestE2EResumeFailure: a session whose transcript cannot be resumed (the
// CLI died before writing it, or it was deleted) is marked failed with a
// plain error, never silently restarted empty.
func TestE2EResumeFailure(t *testing.T) {
	t.Parallel()
	e := startE2E(t, e2eOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, out := e.call(t, ctx, "claude_session_create", map[string]any{"cwd": e.cwd, "resumeSessionId": "00000000-0000-4000-8000-000000000000"}, nil)
	if !res.IsError || !strings.Contains(text(res), "No conversation found") {
		t.Errorf("resuming an unknown conversation: isError=%v %q %v", res.IsError, text(res), out)
	}
}

package e2e_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/e2eenv"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakeapi"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakecli"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/mcptest"
)

// End-to-end tests of --http: the built binary serves streamable HTTP on a
// loopback port the kernel picks (--http 127.0.0.1:0; the URL is read from
// the server's log), with the real CLI behind it talking to the fake API.
// Clients are the go-sdk's streamable client with a bearer token, the MCP
// Inspector CLI and the MCP conformance suite.

// httpE2E is one server process serving --http.
type httpE2E struct {
	api     *fakeapi.Server // nil without a CLI
	claude  string
	env     map[string]string
	home    string
	cwd     string
	url     string            // http://127.0.0.1:PORT, without /mcp
	tokens  map[string]string // user → bearer token
	hashes  map[string]string // user → the SHA-256 hex in --tokens-file
	audit   string            // the --audit-log file, "" without one
	cmd     *exec.Cmd
	exited  chan struct{} // closed when the server has exited
	logDone chan struct{} // closed when the server's stderr reached EOF
	logPath string        // the server's stderr

	logMu   sync.Mutex
	logText strings.Builder // the server's stderr so far
	logCh   chan struct{}   // closed (and replaced) at each line

	stopOnce sync.Once
}

type httpE2EOptions struct {
	users []string // a token for each, in --tokens-file; none: no authentication (loopback)
	audit bool     // --audit-log <home>/audit.log
	args  []string
	noCLI bool // serve without a claude CLI (nor fake API): the protocol alone
	// fakeCLI serves with the fake CLI (the test binary, see main_test.go)
	// instead of the real one: no fake API.
	fakeCLI bool
	// setup, when set, runs before the server starts, with its home and
	// cwd (files the CLI would find by itself).
	setup func(home, cwd string)
	bin   string // the server binary; "" the one serverBinary builds
}

// randomHex returns n random bytes in hex.
func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// servingRE finds the URL in the server's "serving over HTTP" log line.
var servingRE = regexp.MustCompile(`serving over HTTP url=(http://\S+)/mcp`)

func startHTTPE2E(t *testing.T, o httpE2EOptions) *httpE2E {
	t.Helper()
	bin := o.bin
	if bin == "" {
		bin = serverBinary(t)
	}
	e := &httpE2E{tokens: map[string]string{}, hashes: map[string]string{}}
	switch {
	case o.fakeCLI:
		e.home = t.TempDir()
		var env map[string]string
		e.claude, env = fakecli.Command(t)
		e.env = map[string]string{"HOME": e.home}
		maps.Copy(e.env, env)
	case o.noCLI:
		e.home = t.TempDir()
		e.env = map[string]string{"HOME": e.home}
		// No CLI: nothing is spawned, not even a spare session.
		e.claude = filepath.Join(e.home, "no-claude-here")
	default:
		e.claude = e2eenv.FindClaude(t)
		api, err := fakeapi.Start()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(api.Close)
		e.api = api
		e.home, e.env = e2eenv.Env(t, api.URL())
	}
	e.cwd = filepath.Join(e.home, "proj")
	if err := os.MkdirAll(e.cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	if o.setup != nil {
		o.setup(e.home, e.cwd)
	}
	args := []string{"--http", "127.0.0.1:0", "--claude-path", e.claude, "--log-level", "debug",
		"--store", filepath.Join(e.home, "state", "sessions.db")}
	if len(o.users) > 0 {
		var lines strings.Builder
		lines.WriteString("# test users\n")
		for _, u := range o.users {
			e.tokens[u] = u + "-token-" + randomHex(t, 16)
			e.hashes[u] = sha256Hex(e.tokens[u])
			fmt.Fprintf(&lines, "%s:%s\n", u, e.hashes[u])
		}
		file := filepath.Join(e.home, "tokens")
		if err := os.WriteFile(file, []byte(lines.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--tokens-file", file)
	}
	if o.audit {
		e.audit = filepath.Join(e.home, "audit.log")
		args = append(args, "--audit-log", e.audit)
	}
	cmd := exec.Command(bin, append(args, o.args...)...)
	cmd.Dir = e.cwd
	cmd.Env = childEnv(e.env)
	// stderr through a pipe of our own: the URL is read from it while
	// everything goes to a file; cmd.Wait does not wait for the reader.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	logFile, err := os.CreateTemp(e.home, "server-*.log")
	if err != nil {
		t.Fatal(err)
	}
	e.logPath = logFile.Name()
	cmd.Stderr = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	e.cmd = cmd
	e.exited, e.logDone, e.logCh = make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(e.exited)
	}()
	urls := make(chan string, 1)
	go func() {
		defer close(e.logDone)
		defer logFile.Close()
		defer r.Close()
		br := bufio.NewReader(r)
		for {
			line, err := br.ReadString('\n')
			_, _ = logFile.WriteString(line)
			e.logMu.Lock()
			e.logText.WriteString(line)
			close(e.logCh)
			e.logCh = make(chan struct{})
			e.logMu.Unlock()
			if m := servingRE.FindStringSubmatch(line); m != nil {
				select {
				case urls <- m[1]:
				default:
				}
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		e.stop(t)
		if t.Failed() {
			log, _ := os.ReadFile(e.logPath)
			t.Logf("server stderr:\n%s", tail(string(log), 8000))
		}
	})
	select {
	case e.url = <-urls:
	case <-e.exited:
		<-e.logDone
		log, _ := os.ReadFile(e.logPath)
		t.Fatalf("the server exited before serving: %v\n%s", cmd.ProcessState, tail(string(log), 4000))
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not log its URL within 30 s")
	}
	return e
}

// stop sends SIGTERM (a kill where there are no signals) and waits for the
// server to exit and its stderr to end.
func (e *httpE2E) stop(t *testing.T) {
	t.Helper()
	e.stopOnce.Do(func() {
		if err := e.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			_ = e.cmd.Process.Kill()
		}
		select {
		case <-e.exited:
		case <-time.After(20 * time.Second):
			t.Errorf("the server did not exit 20 s after SIGTERM")
			_ = e.cmd.Process.Kill()
			<-e.exited
		}
		select {
		case <-e.logDone:
		case <-time.After(20 * time.Second):
			t.Errorf("the server's stderr stayed open 20 s after it exited (a child holds it)")
		}
	})
}

// waitLog waits until the server's stderr holds n lines matching re, and
// returns the last of them.
func (e *httpE2E) waitLog(t *testing.T, ctx context.Context, re *regexp.Regexp, n int) string {
	t.Helper()
	for {
		e.logMu.Lock()
		found := re.FindAllString(e.logText.String(), -1)
		ch := e.logCh
		e.logMu.Unlock()
		if len(found) >= n {
			return found[n-1]
		}
		select {
		case <-ch:
		case <-e.logDone:
			t.Fatalf("the server's stderr ended with %d lines matching %s", len(found), re)
		case <-ctx.Done():
			t.Fatalf("waiting for %d lines matching %s in the server's stderr: %v (%d found)", n, re, ctx.Err(), len(found))
		}
	}
}

// connectToken connects the go-sdk streamable client with token (protocol
// "" negotiates the newest).
func (e *httpE2E) connectToken(ctx context.Context, token, protocol string) (*mcp.ClientSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-http", Version: "1"}, nil)
	hc := mcptest.Bearer(token)
	return client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.url + "/mcp", HTTPClient: hc, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: protocol})
}

func (e *httpE2E) connect(t *testing.T, user, protocol string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := e.connectToken(ctx, e.tokens[user], protocol)
	if err != nil {
		t.Fatalf("connecting as %s: %v", user, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// httpCall calls a tool; a protocol error fails the test.
func httpCall(t *testing.T, ctx context.Context, cs *mcp.ClientSession, name string, args any) (*mcp.CallToolResult, map[string]any) {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var out map[string]any
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(b, &out)
	}
	return res, out
}

// TestE2EHTTPUsers serves two users with two tokens over real HTTP: alice
// on protocol 2026-07-28 (the stateless handler), bob on 2025-11-25 (the
// stateful one). Neither sees or steers the other's sessions; the per-user
// quota refuses with the flag's name; bad tokens get 401; the audit log has
// one line per tools/call, and neither it nor the server's stderr holds a
// token or a prompt.
func TestE2EHTTPUsers(t *testing.T) {
	t.Parallel()
	e := startHTTPE2E(t, httpE2EOptions{users: []string{"alice", "bob"}, audit: true, args: []string{"--user-max-sessions", "1"}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	calls := 0
	call := func(cs *mcp.ClientSession, name string, args map[string]any) (*mcp.CallToolResult, map[string]any) {
		t.Helper()
		calls++
		return httpCall(t, ctx, cs, name, args)
	}

	alice := e.connect(t, "alice", "")
	bob := e.connect(t, "bob", "2025-11-25")
	if got := alice.InitializeResult().ProtocolVersion; got != "2026-07-28" {
		t.Errorf("alice negotiated %s, want 2026-07-28", got)
	}
	if got := bob.InitializeResult().ProtocolVersion; got != "2025-11-25" {
		t.Errorf("bob negotiated %s, want 2025-11-25", got)
	}

	// Alice's session answers through the real CLI and the fake API.
	res, out := call(alice, "claude_session_create", map[string]any{"cwd": e.cwd})
	sid, _ := out["sessionId"].(string)
	if res.IsError || sid == "" {
		t.Fatalf("alice's create: %s", text(res))
	}
	secret := "hi, the secret prompt is " + randomHex(t, 12)
	res, out = call(alice, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": secret})
	if res.IsError || out["finalText"] != "Hello from fake API (n_messages=1)" {
		t.Fatalf("alice's query: %s", text(res))
	}
	if reqs := e.api.MessageRequests(); len(reqs) == 0 || !strings.Contains(reqs[len(reqs)-1].LastUserText(), secret) {
		t.Errorf("the fake API did not get alice's prompt")
	}

	// Bob sees nothing of it and cannot steer it.
	res, out = call(bob, "claude_session_list", map[string]any{})
	if sessions, _ := out["sessions"].([]any); res.IsError || len(sessions) != 0 || strings.Contains(text(res), sid) {
		t.Errorf("bob's list shows sessions: %s", text(res))
	}
	for tool, args := range map[string]map[string]any{
		"claude_chat_query":      {"sessionId": sid, "prompt": "steal"},
		"claude_chat_interrupt":  {"sessionId": sid},
		"claude_session_close":   {"sessionId": sid},
		"claude_session_history": {"sessionId": sid},
		"claude_chat_model":      {"sessionId": sid, "model": "opus"},
		"claude_session_land":    {"sessionId": sid, "how": "discard"},
	} {
		res, _ := call(bob, tool, args)
		if !res.IsError || !strings.Contains(text(res), "session not found") {
			t.Errorf("bob's %s on alice's session: isError=%v %q", tool, res.IsError, text(res))
		}
	}
	// Alice's session is untouched: listed, and answering with its history.
	res, out = call(alice, "claude_session_list", map[string]any{})
	if sessions, _ := out["sessions"].([]any); len(sessions) != 1 || !strings.Contains(text(res), sid) {
		t.Errorf("alice's list: %s", text(res))
	}
	res, out = call(alice, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "again"})
	if res.IsError || out["finalText"] != "Hello from fake API (n_messages=3)" {
		t.Errorf("alice's second query: %s", text(res))
	}

	// --user-max-sessions 1: each user has one session at most.
	res, out = call(bob, "claude_session_create", map[string]any{"cwd": e.cwd})
	if res.IsError || out["sessionId"] == nil {
		t.Fatalf("bob's first session: %s", text(res))
	}
	res, _ = call(bob, "claude_session_create", map[string]any{"cwd": e.cwd})
	if !res.IsError || !strings.Contains(text(res), "--user-max-sessions") {
		t.Errorf("bob's second session: isError=%v %q", res.IsError, text(res))
	}
	res, _ = call(alice, "claude_session_create", map[string]any{"cwd": e.cwd})
	if !res.IsError || !strings.Contains(text(res), "--user-max-sessions") {
		t.Errorf("alice's second session: isError=%v %q", res.IsError, text(res))
	}
	t.Logf("quota refusal: %s", text(res))

	// No token, a wrong one, or the hash from --tokens-file: 401 with the
	// header that points to the protected resource metadata.
	wantAuth := `Bearer resource_metadata="` + e.url + `/.well-known/oauth-protected-resource"`
	for name, header := range map[string]string{
		"no token":       "",
		"wrong token":    "Bearer " + e.tokens["alice"] + "x",
		"the token hash": "Bearer " + e.hashes["alice"],
		"basic auth":     "Basic YWxpY2U6eA==",
	} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.url+"/mcp",
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"claude_session_list","arguments":{}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if header != "" {
			req.Header.Set("Authorization", header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), wantAuth) {
			t.Errorf("%s: status %d, WWW-Authenticate %q; want 401 with %s", name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), wantAuth)
		}
	}
	if cs, err := e.connectToken(ctx, "not-a-token", ""); err == nil {
		cs.Close()
		t.Errorf("the go-sdk client connected with a wrong token")
	}
	resp, err := http.Get(e.url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz without a token: %d", resp.StatusCode)
	}

	// The audit log: two JSON lines per tools/call, "started" and the
	// outcome (the refused requests never reached a tool: their lines are
	// authentication events, without a tool), with user, tool, session,
	// the prompt's size and SHA-256, and the outcome.
	raw, err := os.ReadFile(e.audit)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	started := 0
	for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		if strings.Contains(l, `"tool":`) {
			lines = append(lines, l)
			if strings.Contains(l, `"outcome":"started"`) {
				started++
			}
		}
	}
	if len(lines) != 2*calls || started != calls {
		t.Errorf("%d audit lines (%d started) for %d tools/call:\n%s", len(lines), started, calls, raw)
	}
	type entry struct {
		User, Tool, Session, Outcome, Error, PromptSha256, Prompt string
		PromptBytes                                               int
		DurationMs                                                *int64
	}
	var entries []entry
	for _, l := range lines {
		var en entry
		if err := json.Unmarshal([]byte(l), &en); err != nil {
			t.Fatalf("audit line %q: %v", l, err)
		}
		if (en.User != "alice" && en.User != "bob") || en.Tool == "" || en.Outcome == "" || en.DurationMs == nil {
			t.Errorf("audit line without user, tool, outcome or duration: %s", l)
		}
		entries = append(entries, en)
	}
	has := func(what string, match func(entry) bool) {
		t.Helper()
		if !slices.ContainsFunc(entries, match) {
			t.Errorf("the audit log lacks %s:\n%s", what, raw)
		}
	}
	has("alice's query with its prompt's size and hash", func(en entry) bool {
		return en.User == "alice" && en.Tool == "claude_chat_query" && en.Session == sid && en.Outcome == "ok" &&
			en.PromptBytes == len(secret) && en.PromptSha256 == sha256Hex(secret) && en.Prompt == ""
	})
	has("bob's refused query on alice's session", func(en entry) bool {
		return en.User == "bob" && en.Tool == "claude_chat_query" && en.Session == sid && en.Outcome == "tool_error" &&
			strings.Contains(en.Error, "session not found")
	})
	has("bob's close refused", func(en entry) bool {
		return en.User == "bob" && en.Tool == "claude_session_close" && en.Session == sid && en.Outcome == "tool_error"
	})
	has("the quota refusal", func(en entry) bool {
		return en.User == "bob" && en.Tool == "claude_session_create" && en.Outcome == "tool_error" && strings.Contains(en.Error, "--user-max-sessions")
	})
	has("alice's create with its session", func(en entry) bool {
		return en.User == "alice" && en.Tool == "claude_session_create" && en.Session == sid && en.Outcome == "ok"
	})

	// Nothing secret in the audit log nor in the server's debug log,
	// shutdown included.
	e.stop(t)
	log, err := os.ReadFile(e.logPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "claude-agent-mcp serving over HTTP") {
		t.Fatalf("the server log is not the server's:\n%s", tail(string(log), 2000))
	}
	secrets := map[string]string{"the prompt": secret, "the prompt's tail": secret[len(secret)-24:]}
	for _, u := range []string{"alice", "bob"} {
		secrets[u+"'s token"] = e.tokens[u]
		secrets[u+"'s token hash"] = e.hashes[u]
	}
	for what, s := range secrets {
		if strings.Contains(string(raw), s) {
			t.Errorf("the audit log holds %s", what)
		}
		if strings.Contains(string(log), s) {
			t.Errorf("the server's stderr holds %s", what)
		}
	}
}

// TestE2EInspectorHTTP runs the MCP Inspector CLI against --http with a
// bearer token: tools/list, claude_direct_query on both protocol eras, and
// a wrong token refused.
func TestE2EInspectorHTTP(t *testing.T) {
	insp := inspectorBin(t)
	t.Parallel()
	// The Inspector's CLI takes no task for an answer: a query that outlasts
	// --task-after on a loaded machine must still end as a plain result.
	e := startHTTPE2E(t, httpE2EOptions{users: []string{"inspector"}, audit: true, args: []string{"--task-after", "2m"}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run := func(token string, args ...string) (string, error) {
		args = append([]string{"--cli", e.url + "/mcp", "--transport", "http", "--header", "Authorization: Bearer " + token}, args...)
		cmd := exec.CommandContext(ctx, insp, args...)
		cmd.Dir = e.cwd
		// The Inspector keeps a catalog under $HOME/.mcp-inspector.
		cmd.Env = append(os.Environ(), "HOME="+e.home, "USERPROFILE="+e.home)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	token := e.tokens["inspector"]
	out, err := run(token, "--method", "tools/list", "--format", "json", "-q")
	if err != nil {
		t.Fatalf("tools/list: %v\n%s", err, tail(out, 2000))
	}
	for _, name := range []string{"claude_session_create", "claude_chat_query", "claude_direct_query", "claude_session_list"} {
		if !strings.Contains(out, `"name":"`+name+`"`) {
			t.Errorf("tools/list lacks %s:\n%s", name, tail(out, 2000))
		}
	}
	for _, era := range []string{"legacy", "modern"} {
		prompt := "ECHO from the inspector over http, " + era
		out, err := run(token, "--protocol-era", era, "--method", "tools/call", "--tool-name", "claude_direct_query",
			"--tool-args-json", `{"prompt":"`+prompt+`","cwd":"`+filepath.ToSlash(e.cwd)+`"}`, "--format", "json", "-q")
		if err != nil || !strings.Contains(out, prompt) || strings.Contains(out, `"isError":true`) {
			t.Errorf("direct query through the Inspector (%s era): %v\n%s", era, err, tail(out, 2000))
		}
		// Protocol 2026-07-28 results carry a resultType; older ones do not.
		if modern := strings.Contains(out, `"resultType":"complete"`); modern != (era == "modern") {
			t.Errorf("the %s era's result is not of its protocol:\n%s", era, tail(out, 2000))
		}
	}
	out, err = run(token+"x", "--method", "tools/list", "--format", "json", "-q", "--stored-auth-only")
	if err == nil || strings.Contains(out, "claude_direct_query") {
		t.Errorf("tools/list with a wrong token: %v\n%s", err, tail(out, 2000))
	}
	// Two direct queries, each audited as the Inspector's user.
	raw, err := os.ReadFile(e.audit)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(raw), `"user":"inspector","tool":"claude_direct_query"`) - strings.Count(string(raw), `"outcome":"started"`); n != 2 {
		t.Errorf("%d audited direct queries, want 2:\n%s", n, raw)
	}
}

// conformanceEntry is a line of testdata/conformance/*.txt: a check of a
// scenario that is expected to fail, and why.
type conformanceEntry struct {
	file, scenario, check, reason string
	line                          int
}

// readConformanceList reads a list of expected failures: "SCENARIO CHECK
// REASON…" per line; # starts a comment.
func readConformanceList(t *testing.T, path string) []conformanceEntry {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []conformanceEntry
	seen := map[string]bool{}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 3 {
			t.Errorf("%s:%d: want SCENARIO CHECK-ID REASON, got %q", filepath.Base(path), i+1, line)
			continue
		}
		key := f[0] + " " + f[1]
		if seen[key] {
			t.Errorf("%s:%d: %s listed twice", filepath.Base(path), i+1, key)
		}
		seen[key] = true
		out = append(out, conformanceEntry{file: filepath.Base(path), line: i + 1, scenario: f[0], check: f[1], reason: strings.Join(f[2:], " ")})
	}
	return out
}

// conformanceResult is what one run of the suite found.
type conformanceResult struct {
	scenarios map[string]bool            // scenarios run
	failed    map[string]map[string]bool // scenario → failing check ids
	passed    int
	warnings  []string
}

// scenarioDirRE names a scenario's result directory: server-<scenario>-<time>.
var scenarioDirRE = regexp.MustCompile(`^server-(.+)-\d{4}-\d\d-\d\dT[\d-]+Z$`)

// runConformance runs the suite against url with args and reads every
// scenario's checks.json.
func runConformance(t *testing.T, ctx context.Context, node, bin, url string, args ...string) conformanceResult {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.CommandContext(ctx, node, append([]string{bin, "server", "--url", url, "-o", dir}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	// Exit status 1 means some check failed; the checks say which.
	if !strings.Contains(string(out), "=== SUMMARY ===") {
		t.Fatalf("conformance %v did not finish (%v):\n%s", args, err, tail(string(out), 4000))
	}
	r := conformanceResult{scenarios: map[string]bool{}, failed: map[string]map[string]bool{}}
	for _, m := range regexp.MustCompile(`=== Running scenario: (\S+) ===`).FindAllStringSubmatch(string(out), -1) {
		r.scenarios[m[1]] = true
	}
	if len(r.scenarios) == 0 {
		t.Fatalf("conformance %v ran no scenario:\n%s", args, tail(string(out), 4000))
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, de := range entries {
		m := scenarioDirRE.FindStringSubmatch(de.Name())
		if m == nil || !de.IsDir() {
			continue
		}
		scenario := m[1]
		found[scenario] = true
		data, err := os.ReadFile(filepath.Join(dir, de.Name(), "checks.json"))
		if err != nil {
			t.Fatalf("scenario %s: %v", scenario, err)
		}
		var checks []struct {
			ID, Status, ErrorMessage string
		}
		if err := json.Unmarshal(data, &checks); err != nil {
			t.Fatalf("scenario %s checks.json: %v", scenario, err)
		}
		for _, c := range checks {
			switch c.Status {
			case "SUCCESS":
				r.passed++
			case "WARNING":
				r.warnings = append(r.warnings, scenario+" "+c.ID+": "+c.ErrorMessage)
			case "SKIPPED", "INFO":
			default: // FAILURE, ERROR
				if r.failed[scenario] == nil {
					r.failed[scenario] = map[string]bool{}
				}
				r.failed[scenario][c.ID] = true
				t.Logf("%s %s %s: %s", c.Status, scenario, c.ID, c.ErrorMessage)
			}
		}
	}
	for s := range r.scenarios {
		if !found[s] {
			t.Errorf("conformance %v: scenario %s left no checks.json", args, s)
		}
	}
	return r
}

// TestE2EConformance runs the pinned MCP conformance suite
// (@modelcontextprotocol/conformance, tools/npm/package.json) against
// --http on loopback without tokens (the suite cannot send one): the active
// scenarios (protocol 2025-11-25 and before, the stateful handler) and
// those that protocol 2026-07-28 requires, with the extension scenarios of
// MCP tasks (the stateless handler). Every failing check must be listed in
// testdata/conformance/expected-failures.txt (checks that need the
// reference server's fixture tools, resources and prompts); a listed check
// that passes fails the test too, so that the list stays true.
func TestE2EConformance(t *testing.T) {
	root, node, bin := conformanceSuite(t)
	t.Parallel()
	expected := readConformanceList(t, filepath.Join(root, "testdata", "conformance", "expected-failures.txt"))
	e := startHTTPE2E(t, httpE2EOptions{noCLI: true})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	runs := map[string]conformanceResult{
		"active suite":            runConformance(t, ctx, node, bin, e.url+"/mcp"),
		"requirements 2026-07-28": runConformance(t, ctx, node, bin, e.url+"/mcp", "--requirements", "2026-07-28"),
	}
	listed := map[string]conformanceEntry{}
	for _, en := range expected {
		key := en.scenario + " " + en.check
		if prev, ok := listed[key]; ok {
			t.Errorf("%s:%d and %s:%d both list %s", prev.file, prev.line, en.file, en.line, key)
		}
		listed[key] = en
	}
	for name, r := range runs {
		for scenario, checks := range r.failed {
			for check := range checks {
				if _, ok := listed[scenario+" "+check]; !ok {
					t.Errorf("%s: %s %s fails and is not an expected failure", name, scenario, check)
				}
			}
		}
		for _, w := range r.warnings {
			t.Logf("%s: warning: %s", name, w)
		}
		t.Logf("%s: %d scenarios, %d checks passed, %d scenarios with failing checks", name, len(r.scenarios), r.passed, len(r.failed))
	}
	// Each listed check fails wherever its scenario ran, and it ran somewhere.
	for _, en := range listed {
		ran := false
		for name, r := range runs {
			if !r.scenarios[en.scenario] {
				continue
			}
			ran = true
			if !r.failed[en.scenario][en.check] {
				t.Errorf("%s: %s %s passes now: remove it from %s (line %d: %s)", name, en.scenario, en.check, en.file, en.line, en.reason)
			}
		}
		if !ran {
			t.Errorf("%s:%d: scenario %s was not run", en.file, en.line, en.scenario)
		}
	}
}

// conformanceSuite finds the pinned conformance suite and the Node 22 it
// runs with: the module root, node and the suite's bin.
func conformanceSuite(t *testing.T) (root, node, bin string) {
	t.Helper()
	root, err := e2eenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin = os.Getenv("MCP_CONFORMANCE_BIN")
	if bin == "" {
		bin = filepath.Join(root, ".tools", "node_modules", ".bin", "conformance")
	}
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the MCP conformance suite is not at %s and CI=true (scripts/test installs it)", bin)
		}
		t.Skip("the MCP conformance suite is not installed; run scripts/test")
	}
	// It needs Node 22 or later, which tools/npm/package.json pins next to it.
	node = filepath.Join(filepath.Dir(bin), "node")
	if _, err := os.Stat(node); err != nil {
		if node, err = exec.LookPath("node"); err != nil {
			t.Fatalf("no node next to %s nor on PATH", bin)
		}
	}
	v, err := exec.Command(node, "--version").Output()
	major, _ := strconv.Atoi(strings.SplitN(strings.TrimPrefix(strings.TrimSpace(string(v)), "v"), ".", 2)[0])
	if err != nil || major < 22 {
		t.Fatalf("the conformance suite needs Node 22 or later; %s is %q (%v)", node, strings.TrimSpace(string(v)), err)
	}
	return root, node, bin
}

// TestE2EHTTPRevoke removes a user from --tokens-file while her turn runs,
// then SIGHUP: her call ends at once with an error, her MCP session is
// closed, her requests get 401, and her session's turn was interrupted —
// once she is back in the file, her next query on it runs (a running turn
// would refuse it as busy). Bob, still in the file, goes on.
func TestE2EHTTPRevoke(t *testing.T) {
	t.Parallel()
	e := startHTTPE2E(t, httpE2EOptions{users: []string{"alice", "bob"}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	writeUsers := func(users ...string) {
		t.Helper()
		var b strings.Builder
		for _, u := range users {
			fmt.Fprintf(&b, "%s:%s\n", u, e.hashes[u])
		}
		if err := os.WriteFile(filepath.Join(e.home, "tokens"), []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := e.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	create := func(cs *mcp.ClientSession) string {
		t.Helper()
		res, out := httpCall(t, ctx, cs, "claude_session_create", map[string]any{"cwd": e.cwd})
		sid, _ := out["sessionId"].(string)
		if res.IsError || sid == "" {
			t.Fatalf("create: %s", text(res))
		}
		return sid
	}
	alice := e.connect(t, "alice", "2025-11-25") // stateful: an MCP session
	bob := e.connect(t, "bob", "")
	sa, sb := create(alice), create(bob)
	called := make(chan error, 1)
	go func() {
		_, err := alice.CallTool(ctx, &mcp.CallToolParams{Name: "claude_chat_query", Arguments: map[string]any{"sessionId": sa, "prompt": "SLOW200 alice"}})
		called <- err
	}()
	if _, err := e.api.WaitFor(ctx, func(r *fakeapi.Request) bool { return strings.Contains(r.LastUserText(), "SLOW200 alice") }); err != nil {
		t.Fatal(err)
	}

	writeUsers("bob")
	start := time.Now()
	select {
	case err := <-called:
		if err == nil {
			t.Errorf("alice's call ended without an error")
		}
		t.Logf("alice's call ended after %v: %v", time.Since(start).Round(time.Millisecond), err)
	case <-time.After(30 * time.Second):
		t.Fatal("alice's call still runs 30 s after the SIGHUP that removed her")
	}
	t.Log(e.waitLog(t, ctx, regexp.MustCompile(`revoked a user removed from --tokens-file.*user=alice.*`), 1))
	post := func(token, sessionID string) int {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.url+"/mcp",
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		if sessionID != "" {
			req.Header.Set("Mcp-Session-Id", sessionID)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if status := post(e.tokens["alice"], ""); status != http.StatusUnauthorized {
		t.Errorf("alice's request after her removal: %d", status)
	}
	if status := post(e.tokens["alice"], alice.ID()); status != http.StatusUnauthorized {
		t.Errorf("alice's request on her MCP session after her removal: %d", status)
	}
	if status := post(e.tokens["bob"], alice.ID()); status != http.StatusNotFound {
		t.Errorf("alice's MCP session after her removal, with bob's token: %d; want 404 (closed), not 403 (another's)", status)
	}
	res, out := httpCall(t, ctx, bob, "claude_chat_query", map[string]any{"sessionId": sb, "prompt": "hi from bob"})
	if res.IsError || out["finalText"] == nil {
		t.Errorf("bob's query after alice's removal: %s", text(res))
	}

	writeUsers("alice", "bob")
	e.waitLog(t, ctx, regexp.MustCompile(`reloaded --tokens-file users=2`), 1)
	back := e.connect(t, "alice", "")
	// ECHO: the CLI may send the interrupted prompt (SLOW200) along with
	// this one, as one user message.
	res, out = httpCall(t, ctx, back, "claude_chat_query", map[string]any{"sessionId": sa, "prompt": "ECHO hi again"})
	if res.IsError || !strings.Contains(fmt.Sprint(out["finalText"]), "ECHO hi again") {
		t.Errorf("alice's query on her session once back: %s", text(res))
	}
}

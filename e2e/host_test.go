//go:build linux

package e2e_test

// End-to-end tests with the real interactive Claude Code (2.1.330 or newer)
// as the MCP host of the server. The TUI runs under a pseudo-terminal
// (util-linux script) with its input held open; one fake API serves both the
// host, whose model a hostPlan scripts, and the CLIs the server starts (the
// children), which get the keyword behaviour (SLOW<n>: n deltas 0.5 s
// apart). The tests assert on what the fake API received, on the JSON-RPC
// between host and server (the server runs between two tees) and on the
// server's log, never on the drawn screen.
//
// What the host (2.1.330) was observed to do:
//
//   - Start. With $CLAUDE_CONFIG_DIR/.claude.json seeded (onboarding done,
//     the project trusted, the API key approved) no dialog blocks; without it
//     the TUI checks its connection to api.anthropic.com and stops there. The
//     prompt given on the command line goes to the API about 1.5 s after the
//     start, before the MCP server is connected (a system message in the
//     request lists it among "MCP servers still connecting").
//   - Handshake (protocol 2026-07-28, no initialize): server/discover (id
//     "server-discover-probe-1"), subscriptions/listen (toolsListChanged),
//     server/discover again (id 0), tools/list; then one tools/call per call.
//     Every request carries _meta io.modelcontextprotocol/protocolVersion,
//     …/clientInfo (claude-code 2.1.330) and …/clientCapabilities (roots,
//     elicitation form and url, and extensions["io.modelcontextprotocol/tasks"]
//     unless CLAUDE_CODE_DISABLE_MCP_TASKS=1); tools/call also carries
//     _meta.progressToken and "claudecode/toolUseId" (the model's tool_use
//     id). A server slow to answer the probe (started 4 s late) also gets an
//     initialize before the second server/discover.
//   - Who calls the API: the User-Agent says "claude-cli/2.1.330 (external,
//     cli)" for the host and "(external, claude-agent-mcp)" for a child, and
//     the first system block "x-anthropic-billing-header: cc_version=…;
//     cc_entrypoint=<the same>;" (fakeapi.Request.Entrypoint reads either).
//     The host's system prompt starts "You are Claude Code, Anthropic's
//     official CLI for Claude.", a child's "You are a Claude agent, built on
//     Anthropic's Claude Agent SDK." (fakeapi.Request.IsMainConversation).
//     With CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 (e2eenv sets it) there
//     are no side calls at all: no title, no quota probe, no count_tokens;
//     fakeapi.SetScript would answer them with a short text.
//   - One call with a plain result, in API requests:
//     1. host: the prompt. MCP tools are deferred: the tools are the built-in
//     ones with ToolSearch, so the model calls ToolSearch with
//     {"query":"select:mcp__agent__claude_direct_query"} (ToolSearch waits
//     for a server still connecting);
//     2. host: its tool_result (a tool_reference block and the text "Tool
//     loaded."); the tool is now in the request's tools and the model calls
//     it;
//     3. child: the prompt (the server took a warm spare);
//     4. host: the tool_result, a string: the result's structuredContent as
//     JSON (the text content is dropped).
//     Progress notifications reach the host (turn started, text, done).
//   - Several calls in one reply (fan_out) run one after the other (our tools
//     are not read-only); all their tool_results come in one user message.
//   - With tasks (the host declares the extension; the server answers a call
//     whose turn lasts beyond --task-after, 500 ms, with a task): the tools/call
//     result is {"resultType":"task","taskId":…,"status":"working",…,
//     "pollIntervalMilliseconds":500}; the host model gets a tool_result at
//     once (one text block): `MCP tool "agent/claude_direct_query" started
//     server-side task <taskId>. It was moved to the background as task
//     <local id> … To stop it, use TaskStop with task_id "<local id>"…`; the
//     host polls tasks/get {"taskId"} (twice for a 2.5 s turn) until
//     completed; then a new host-model turn starts by itself, its last user
//     message a <system-reminder> text block "[SYSTEM NOTIFICATION - NOT USER
//     INPUT] … <task-notification><task-id><local id></task-id>
//     <status>completed</status><summary>MCP task <taskId>
//     (agent/claude_direct_query) completed.</summary><result>{the result's
//     structuredContent}</result></task-notification>".
//   - Exit: Ctrl-D twice. The host closes the server's stdin; the server stops
//     its sessions ("all sessions stopped") and exits; nothing is left about
//     2.5 s after the Ctrl-D. While a task runs, Ctrl-D opens "Background
//     work is running" (1. Exit and stop tasks, 2. Move to background and
//     exit, 3. Stay), where Enter picks the first.
//
// Each subtest takes 7–8 s: ~1.5 s until the host's first request, ~1 s for
// ToolSearch and the handshake, the child's turn, ~2.5 s to exit.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/e2eenv"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakeapi"
)

const (
	// hostMinVersion is the oldest CLI these tests drive as the host.
	hostMinVersion = "2.1.330"
	// hostServerName is the server's name in the host's MCP config: the
	// host model sees its tools as mcp__agent__<tool>.
	hostServerName = "agent"
	// hostMaxSearches bounds the host model's ToolSearch calls.
	hostMaxSearches = 5
)

// hostTool is the name the host model calls a tool of ours by.
func hostTool(tool string) string { return "mcp__" + hostServerName + "__" + tool }

// hostCall is one tool call of the scripted host model.
type hostCall struct {
	id      string // the tool_use id, to find its tool_result
	tool    string // our tool's name, without the mcp__agent__ prefix
	builtin bool   // tool is one of the host's own (TaskStop), named as it is
	input   func(r *fakeapi.Request) (any, error)
}

// name is the tool's name as the host model sees it.
func (c hostCall) name() string {
	if c.builtin {
		return c.tool
	}
	return hostTool(c.tool)
}

// staticInput is a hostCall input that does not depend on earlier results.
func staticInput(v any) func(*fakeapi.Request) (any, error) {
	return func(*fakeapi.Request) (any, error) { return v, nil }
}

// hostPlan scripts the host model: it loads the tools it needs through
// ToolSearch (the host defers MCP tools), then makes the calls of each step
// in turn (the calls of one step in one reply: a fan-out), each step once
// the previous one's results are in, and ends with the text final.
type hostPlan struct {
	steps [][]hostCall
	final string
	gate  func(r *fakeapi.Request) error // when set, runs before each reply (it may wait)
}

// reply answers one of the host's main-conversation requests. It decides
// from the conversation alone, so a retried request gets the same answer.
func (p hostPlan) reply(r *fakeapi.Request) (*fakeapi.Reply, error) {
	if p.gate != nil {
		if err := p.gate(r); err != nil {
			return nil, err
		}
	}
	var missing []string
	for _, step := range p.steps {
		for _, c := range step {
			if name := c.name(); !r.HasTool(name) && !slices.Contains(missing, name) {
				missing = append(missing, name)
			}
		}
	}
	if len(missing) > 0 {
		searches := 0
		for _, u := range r.ToolUses() {
			if u.Name == "ToolSearch" {
				searches++
			}
		}
		if searches >= hostMaxSearches {
			return nil, fmt.Errorf("the host did not load %v after %d ToolSearch calls", missing, searches)
		}
		return fakeapi.ToolUseReply("", fakeapi.ToolUse("toolu_search_"+strconv.Itoa(searches+1), "ToolSearch", map[string]any{
			"query": "select:" + strings.Join(missing, ","), "max_results": len(missing),
		})), nil
	}
	for _, step := range p.steps {
		if _, done := r.ToolResult(step[len(step)-1].id); done {
			continue
		}
		var calls []fakeapi.Block
		for _, c := range step {
			in, err := c.input(r)
			if err != nil {
				return nil, fmt.Errorf("input of %s: %w", c.id, err)
			}
			calls = append(calls, fakeapi.ToolUse(c.id, c.name(), in))
		}
		return fakeapi.ToolUseReply("", calls...), nil
	}
	return fakeapi.TextReply(p.final), nil
}

// resultJSON decodes the tool_result for id in r as the JSON object the
// host shows its model (a result's structuredContent).
func resultJSON(r *fakeapi.Request, id string) (map[string]any, error) {
	tr, ok := r.ToolResult(id)
	if !ok {
		return nil, fmt.Errorf("no tool_result for %s", id)
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(tr.Content), &out); err != nil {
		return nil, fmt.Errorf("tool_result for %s is not a JSON object (is_error=%v): %q", id, tr.IsError, tr.Content)
	}
	return out, nil
}

// host is the real interactive CLI, under a pseudo-terminal (util-linux
// script), as the MCP host of our server, with the fake API behind both.
type host struct {
	t       *testing.T
	api     *fakeapi.Server
	claude  string
	home    string
	cwd     string
	logPath string // the server's stderr
	rpcIn   string // what the host wrote to the server (JSON-RPC, one message a line)
	rpcOut  string // what the server wrote to the host
	screen  string // what the TUI drew (for failure reports only)

	cmd    *exec.Cmd
	stdin  io.WriteCloser // the terminal's input, held open
	exited chan struct{}  // closed when script has exited

	ctx    context.Context // cancelled with a cause when the host exits or the script fails
	cancel context.CancelCauseFunc
}

type hostOptions struct {
	prompt       string
	plan         func(h *host) hostPlan // the host model; it may use h.cwd
	allowedTools []string               // default: every tool the plan calls
	env          map[string]string      // added to the host's (and so the server's) environment
	serverArgs   []string
	settings     map[string]any // the host's own settings (--settings), e.g. its hooks
	childCLI     string         // the CLI the server runs (default: the host's)
}

// requireHostCLI returns the CLI to drive as the host. A CLI older than
// hostMinVersion, or no script(1), skips the test, except under CI=true,
// where it fails.
func requireHostCLI(t *testing.T) string {
	t.Helper()
	claude := e2eenv.FindClaude(t)
	unusable := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("CI") == "true" {
			t.Fatalf(format+" (CI=true)", args...)
		}
		t.Skipf(format, args...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	v, err := claudeagent.CLIVersion(ctx, claude)
	if err != nil {
		t.Fatalf("the CLI's version: %v", err)
	}
	if claudeagent.CompareVersions(v, hostMinVersion) < 0 {
		unusable("the CLI at %s is %s; driving it as the interactive host needs %s or newer", claude, v, hostMinVersion)
	}
	if _, err := exec.LookPath("script"); err != nil {
		unusable("script(1) (util-linux) is needed for the pseudo-terminal: %v", err)
	}
	return claude
}

// startHost starts the host TUI with o.prompt, the server as its MCP
// server "agent", and o.plan as the host model. The host's stop (a
// t.Cleanup) checks that no process the test started survives.
func startHost(t *testing.T, o hostOptions) *host {
	t.Helper()
	claude := requireHostCLI(t)
	bin := serverBinary(t)
	api, err := fakeapi.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(api.Close) // runs after the host's stop
	home, env := e2eenv.Env(t, api.URL())
	h := &host{t: t, api: api, claude: claude, home: home, cwd: filepath.Join(home, "proj"),
		logPath: filepath.Join(home, "server.log"), rpcIn: filepath.Join(home, "rpc-in.jsonl"),
		rpcOut: filepath.Join(home, "rpc-out.jsonl"), screen: filepath.Join(home, "screen.txt"),
		exited: make(chan struct{})}
	h.ctx, h.cancel = context.WithCancelCause(context.Background())
	plan := o.plan(h)
	if err := os.MkdirAll(h.cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	for k, v := range o.env {
		env[k] = v
	}

	// No dialog may block the TUI: onboarding done, the project trusted, the
	// API key approved. The CLI reads $CLAUDE_CONFIG_DIR/.claude.json when
	// that is set (e2eenv sets it), else $HOME/.claude.json: seed both.
	seed, _ := json.Marshal(map[string]any{
		"hasCompletedOnboarding": true,
		"theme":                  "dark",
		"projects":               map[string]any{h.cwd: map[string]any{"hasTrustDialogAccepted": true}},
		"customApiKeyResponses": map[string]any{
			"approved": []string{keyTail(env["ANTHROPIC_API_KEY"])}, "rejected": []string{},
		},
	})
	for _, p := range []string{filepath.Join(home, ".claude.json"), filepath.Join(env["CLAUDE_CONFIG_DIR"], ".claude.json")} {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, seed, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	// The server runs behind two tees, so that the test sees the JSON-RPC
	// both ways, with its stderr in a file.
	child := claude
	if o.childCLI != "" {
		child = o.childCLI
	}
	serverArgs := append([]string{"--claude-path", child, "--log-level", "debug",
		"--store", filepath.Join(home, "state", "sessions.db")}, o.serverArgs...)
	tap := fmt.Sprintf(`tee -a %s | "$0" "$@" 2>>%s | tee -a %s`, shellQuote(h.rpcIn), shellQuote(h.logPath), shellQuote(h.rpcOut))
	mcpConfig, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{hostServerName: map[string]any{
		"type": "stdio", "command": "/bin/sh", "args": append([]string{"-c", tap, bin}, serverArgs...), "env": env,
	}}})
	configPath := filepath.Join(home, "mcp.json")
	if err := os.WriteFile(configPath, mcpConfig, 0o600); err != nil {
		t.Fatal(err)
	}

	allowed := o.allowedTools
	if allowed == nil {
		for _, step := range plan.steps {
			for _, c := range step {
				if name := c.name(); !slices.Contains(allowed, name) {
					allowed = append(allowed, name)
				}
			}
		}
	}
	// The prompt goes before --allowedTools, which takes every argument
	// after it.
	line := []string{"stty cols 120 rows 40 2>/dev/null;", "exec", shellQuote(claude), shellQuote(o.prompt),
		"--mcp-config", shellQuote(configPath), "--strict-mcp-config"}
	if o.settings != nil {
		b, _ := json.Marshal(o.settings)
		path := filepath.Join(home, "host-settings.json")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		line = append(line, "--settings", shellQuote(path))
	}
	if len(allowed) > 0 {
		line = append(line, "--allowedTools")
		for _, a := range allowed {
			line = append(line, shellQuote(a))
		}
	}
	cmd := exec.Command("script", "-qfec", strings.Join(line, " "), "/dev/null")
	cmd.Dir = h.cwd
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "CLAUDECODE", k == "CLAUDE_CODE_ENTRYPOINT", k == "PWD", k == "SHELL", k == "TERM",
			strings.HasPrefix(k, "CLAUDE_AGENT_MCP_"):
			// The host must say it is the interactive CLI, and the server
			// take its settings from the test only.
			continue
		}
		if _, ok := env[k]; !ok {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(append(cmd.Env, pairs(env)...), "PWD="+h.cwd, "SHELL=/bin/sh", "TERM=xterm-256color")
	screen, err := os.Create(h.screen)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = screen, screen
	if h.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}

	api.SetScript(fakeapi.Script{
		fakeapi.EntrypointCLI: {Side: fakeapi.SideReply, Main: func(r *fakeapi.Request) *fakeapi.Reply {
			reply, err := plan.reply(r)
			if err != nil {
				h.cancel(fmt.Errorf("the scripted host model: %w", err))
				return fakeapi.TextReply("HOST SCRIPT FAILED: " + err.Error())
			}
			return reply
		}},
		// The children (entrypoint claude-agent-mcp) get the keyword
		// behaviour: they are not in the script.
	})

	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h.cmd = cmd
	go func() {
		err := cmd.Wait()
		screen.Close()
		close(h.exited)
		h.cancel(fmt.Errorf("the host (script) exited: %v", err))
	}()
	t.Cleanup(h.stop)
	return h
}

// shellQuote quotes s for a POSIX shell when it holds anything but
// characters that are safe unquoted (the server's own, for --print-setup,
// is package main's).
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./_-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// keyTail is what .claude.json's customApiKeyResponses holds of a key.
func keyTail(key string) string {
	if len(key) > 20 {
		return key[len(key)-20:]
	}
	return key
}

// wait returns a context that ends at d, or when the host exits or its
// script fails, whichever comes first; context.Cause tells which.
func (h *host) wait(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(h.ctx, d, fmt.Errorf("timed out after %s", d))
}

// waitToolResult waits for the host's main-conversation request carrying
// the tool_result for the tool_use id.
func (h *host) waitToolResult(d time.Duration, id string) *fakeapi.Request {
	h.t.Helper()
	ctx, cancel := h.wait(d)
	defer cancel()
	r, err := h.api.WaitFor(ctx, fakeapi.WithToolResult(fakeapi.EntrypointCLI, id))
	if err != nil {
		h.t.Fatalf("waiting for the host's request with the tool_result for %s: %v (%v)", id, err, context.Cause(ctx))
	}
	return &r
}

// rpcMessage is one JSON-RPC message of the tap.
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// rpc reads one direction of the JSON-RPC tap.
func (h *host) rpc(path string) []rpcMessage {
	h.t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		h.t.Fatal(err)
	}
	var out []rpcMessage
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 1<<20), 256<<20)
	for sc.Scan() {
		var m rpcMessage
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// methods lists the methods of the requests and notifications in msgs.
func methods(msgs []rpcMessage) []string {
	var out []string
	for _, m := range msgs {
		if m.Method != "" {
			out = append(out, m.Method)
		}
	}
	return out
}

// callResponse returns the server's response to the host's first
// tools/call of tool, as the tap saw it.
func (h *host) callResponse(tool string) (rpcMessage, bool) {
	for _, req := range h.rpc(h.rpcIn) {
		var p struct {
			Name string `json:"name"`
		}
		if req.Method != "tools/call" || json.Unmarshal(req.Params, &p) != nil || p.Name != tool {
			continue
		}
		for _, resp := range h.rpc(h.rpcOut) {
			if resp.Method == "" && bytes.Equal(resp.ID, req.ID) {
				return resp, true
			}
		}
		break
	}
	return rpcMessage{}, false
}

// serverLog returns the server's stderr so far.
func (h *host) serverLog() string {
	data, _ := os.ReadFile(h.logPath)
	return string(data)
}

var ansiRE = regexp.MustCompile(`\x1b(\[[0-9;?<>=]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[()][0-9A-Za-z]|[78=>])`)

// screenText is what the TUI drew, without escape sequences (for failure
// reports; tests assert on requests and logs, never on the screen).
func (h *host) screenText() string {
	data, _ := os.ReadFile(h.screen)
	return ansiRE.ReplaceAllString(string(data), " ")
}

// marked lists the live processes whose environment holds needle
// ("NAME=value").
func marked(needle string) []int {
	entries, _ := os.ReadDir("/proc")
	want := []byte(needle + "\x00")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !(bytes.HasPrefix(env, want) || bytes.Contains(env, append([]byte{0}, want...))) {
			continue
		}
		if len(alive([]int{pid})) > 0 {
			out = append(out, pid)
		}
	}
	return out
}

func describe(pids []int) string {
	var b strings.Builder
	for _, p := range pids {
		cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(p) + "/cmdline")
		fmt.Fprintf(&b, "\n  %d %.200s", p, strings.ReplaceAll(string(cmdline), "\x00", " "))
	}
	return b.String()
}

// stop ends the host as a user would (Ctrl-D twice; Enter if a running
// task makes it ask), waits for every process carrying the test's HOME
// (script, the TUI, the tees, the server, its watchdog and children) to end,
// and kills what does not.
func (h *host) stop() {
	t := h.t
	defer h.cancel(errors.New("the test is over"))
	home := "HOME=" + h.home
	start := time.Now()
	graceful := true
	select {
	case <-h.exited:
		graceful = false // it died by itself; the test has said so
	default:
		_, _ = h.stdin.Write([]byte{4, 4})
		select {
		case <-h.exited:
		case <-time.After(5 * time.Second):
			// A task still running: "Background work is running", with
			// "Exit and stop tasks" selected.
			t.Logf("the host is still there 5 s after Ctrl-D twice; pressing Enter")
			_, _ = h.stdin.Write([]byte{'\r'})
			select {
			case <-h.exited:
			case <-time.After(15 * time.Second):
				graceful = false
				t.Errorf("the host did not exit after Ctrl-D twice and Enter; killing what it started:%s", describe(marked(home)))
				for _, p := range marked(home) {
					_ = syscall.Kill(p, syscall.SIGKILL)
				}
				_ = h.cmd.Process.Kill()
				<-h.exited
			}
		}
	}
	_ = h.stdin.Close()
	// The host ends its MCP server, which stops its CLIs; the watchdog
	// follows the server. Only /proc can show that they are gone.
	deadline := time.Now().Add(20 * time.Second)
	for {
		left := marked(home)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("processes of the test survive the host by 20 s:%s", describe(left))
			for _, p := range left {
				_ = syscall.Kill(p, syscall.SIGKILL)
			}
			graceful = false
			break
		}
		time.Sleep(50 * time.Millisecond) // polling the OS is the only way to observe foreign pids
	}
	t.Logf("the host and everything it started ended %s after the stop began (%v)", time.Since(start).Round(10*time.Millisecond), h.cmd.ProcessState)
	if graceful {
		if !h.cmd.ProcessState.Success() {
			t.Errorf("the host exited with %v after Ctrl-D", h.cmd.ProcessState)
		}
		if !strings.Contains(h.serverLog(), "all sessions stopped") {
			t.Errorf("the server did not stop its sessions when the host exited")
		}
	}
	if t.Failed() {
		t.Logf("server stderr:\n%s", tail(h.serverLog(), 6000))
		t.Logf("host -> server: %v", methods(h.rpc(h.rpcIn)))
		t.Logf("screen (the last 3000 bytes, escapes removed):\n%s", tail(h.screenText(), 3000))
		for i, r := range h.api.MessageRequests() {
			t.Logf("API request %d: entrypoint=%q main=%v model=%s tools=%d last user=%.200q tool results=%.300v",
				i, r.Entrypoint(), r.IsMainConversation(), r.Model, len(r.Tools), r.LastUserText(), r.LastToolResults())
		}
	}
}

// sideCalls are the requests that are neither main conversation.
func (h *host) sideCalls() []fakeapi.Request {
	return h.api.Filter(func(r *fakeapi.Request) bool { return !r.IsMainConversation() })
}

// childFinal is the final text of a child's turn on "SLOW<n> …".
func childFinal(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "chunk%d ", i)
	}
	return b.String()
}

// lastUserRaw is the text of r's last user message, <system-reminder>
// sections included (the host delivers task notifications in one).
func lastUserRaw(r *fakeapi.Request) string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].RawText()
		}
	}
	return ""
}

// report logs what the host, the server and the fake API did (go test -v).
func (h *host) report(start time.Time) {
	t := h.t
	for i, r := range h.api.Requests() {
		t.Logf("API %d: %s %s entrypoint=%q main=%v model=%s tools=%d last user=%.60q tool results=%d",
			i, r.Method, r.Path, r.Entrypoint(), r.IsMainConversation(), r.Model, len(r.Tools), r.LastUserText(), len(r.LastToolResults()))
	}
	t.Logf("host -> server: %v", methods(h.rpc(h.rpcIn)))
	t.Logf("server -> host: %v", methods(h.rpc(h.rpcOut)))
	t.Logf("side calls: %d; %s since the start", len(h.sideCalls()), time.Since(start).Round(10*time.Millisecond))
}

// childRequestsFor counts the children's main-conversation requests whose
// last user text is prompt.
func (h *host) childRequestsFor(prompt string) int {
	return len(h.api.Filter(func(r *fakeapi.Request) bool {
		return fakeapi.From(claudeagent.Entrypoint)(r) && r.LastUserText() == prompt
	}))
}

// checkSessionLog checks that the server log shows a process for session
// sid.
func (h *host) checkSessionLog(sid string) {
	h.t.Helper()
	if sid == "" || !strings.Contains(h.serverLog(), "claude process started session_id="+sid) {
		h.t.Errorf("the server log shows no process for session %q", sid)
	}
}

// directQuery is a claude_direct_query call with prompt in cwd.
func directQuery(id, prompt, cwd string) hostCall {
	return hostCall{id: id, tool: "claude_direct_query", input: staticInput(map[string]any{"prompt": prompt, "cwd": cwd})}
}

// TestE2EHost drives the real interactive CLI as the MCP host of the
// server; see the comment at the top of this file.
func TestE2EHost(t *testing.T) {
	// A host that does not take MCP tasks gets plain results.
	noTasks := map[string]string{"CLAUDE_CODE_DISABLE_MCP_TASKS": "1"}

	t.Run("direct_query", func(t *testing.T) {
		start := time.Now()
		h := startHost(t, hostOptions{prompt: "Ask a sub-agent.", env: noTasks, plan: func(h *host) hostPlan {
			return hostPlan{final: "HOST DONE", steps: [][]hostCall{{directQuery("toolu_direct", "SLOW6 direct", h.cwd)}}}
		}})
		r := h.waitToolResult(90*time.Second, "toolu_direct")
		defer h.report(start)
		out, err := resultJSON(r, "toolu_direct")
		if err != nil {
			t.Fatal(err)
		}
		if out["finalText"] != childFinal(6) || out["status"] != "completed" {
			t.Errorf("the host model got %v", out)
		}
		if n := h.childRequestsFor("SLOW6 direct"); n != 1 {
			t.Errorf("%d child requests with the prompt, want 1", n)
		}
		sid, _ := out["sessionId"].(string)
		h.checkSessionLog(sid)
	})

	t.Run("chat_query", func(t *testing.T) {
		start := time.Now()
		h := startHost(t, hostOptions{prompt: "Start a sub-agent session and ask it.", env: noTasks, plan: func(h *host) hostPlan {
			return hostPlan{final: "HOST DONE", steps: [][]hostCall{
				{{id: "toolu_create", tool: "claude_session_create", input: staticInput(map[string]any{"cwd": h.cwd})}},
				{{id: "toolu_chat", tool: "claude_chat_query", input: func(r *fakeapi.Request) (any, error) {
					out, err := resultJSON(r, "toolu_create")
					if err != nil {
						return nil, err
					}
					sid, _ := out["sessionId"].(string)
					if sid == "" {
						return nil, fmt.Errorf("claude_session_create gave no sessionId: %v", out)
					}
					return map[string]any{"sessionId": sid, "prompt": "SLOW6 chat"}, nil
				}}},
			}}
		}})
		r := h.waitToolResult(90*time.Second, "toolu_chat")
		defer h.report(start)
		created, err := resultJSON(r, "toolu_create")
		if err != nil {
			t.Fatal(err)
		}
		out, err := resultJSON(r, "toolu_chat")
		if err != nil {
			t.Fatal(err)
		}
		sid, _ := created["sessionId"].(string)
		if out["finalText"] != childFinal(6) || out["status"] != "completed" || out["sessionId"] != sid {
			t.Errorf("the host model got %v (the session is %q)", out, sid)
		}
		if n := h.childRequestsFor("SLOW6 chat"); n != 1 {
			t.Errorf("%d child requests with the prompt, want 1", n)
		}
		h.checkSessionLog(sid)
	})

	t.Run("fan_out", func(t *testing.T) {
		// Two calls in one reply; the host answers both in one request.
		start := time.Now()
		h := startHost(t, hostOptions{prompt: "Ask two sub-agents.", env: noTasks, plan: func(h *host) hostPlan {
			return hostPlan{final: "HOST DONE", steps: [][]hostCall{{
				directQuery("toolu_fan_a", "SLOW4 a", h.cwd), directQuery("toolu_fan_b", "SLOW5 b", h.cwd)}}}
		}})
		r := h.waitToolResult(90*time.Second, "toolu_fan_b")
		defer h.report(start)
		for id, want := range map[string]string{"toolu_fan_a": childFinal(4), "toolu_fan_b": childFinal(5)} {
			out, err := resultJSON(r, id)
			if err != nil {
				t.Error(err)
			} else if out["finalText"] != want {
				t.Errorf("%s: the host model got %v", id, out)
			}
		}
		if n := len(r.LastToolResults()); n != 2 {
			t.Errorf("the host's last user message has %d tool results, want both", n)
		}
	})

	t.Run("task_fan_out", func(t *testing.T) {
		// Four calls in one reply from a host that takes tasks: the host runs
		// them one after another; the first becomes a task after
		// --task-after, the next three at once (the fan-out rule), so the
		// host model has its turn back in about a second. The audit log says
		// how long the server took to answer each call.
		start := time.Now()
		ids := []string{"toolu_fo_a", "toolu_fo_b", "toolu_fo_c", "toolu_fo_d"}
		audit := filepath.Join(t.TempDir(), "audit.jsonl")
		h := startHost(t, hostOptions{prompt: "Ask four sub-agents in the background.", serverArgs: []string{"--audit-log", audit}, plan: func(h *host) hostPlan {
			var calls []hostCall
			for i, id := range ids {
				calls = append(calls, directQuery(id, fmt.Sprintf("SLOW20 fan %d", i), h.cwd))
			}
			return hostPlan{final: "HOST DONE", steps: [][]hostCall{calls}}
		}})
		r := h.waitToolResult(90*time.Second, ids[len(ids)-1])
		defer h.report(start)
		for _, id := range ids {
			if tr, _ := r.ToolResult(id); !strings.Contains(tr.Content, "started server-side task") {
				t.Errorf("%s did not become a task; the host model got %q", id, tr.Content)
			}
		}
		// The turn back: from the host's request answered with the four
		// calls to its request carrying their results.
		var prev *fakeapi.Request
		for _, q := range h.api.Filter(func(q *fakeapi.Request) bool {
			return fakeapi.From(fakeapi.EntrypointCLI)(q) && q.IsMainConversation()
		}) {
			if q.Received.Before(r.Received) {
				prev = &q
			}
		}
		if prev == nil {
			t.Fatal("no host request before the one with the results")
		}
		back := r.Received.Sub(prev.Received)
		// The server's share of the turn back: the four calls' answers (the
		// audit log's outcome lines), the first after --task-after (500 ms),
		// the others at once. The rest is the host's own work between calls,
		// which a loaded machine (the whole suite beside this test) stretches;
		// on a quiet one the turn back is about a second.
		raw, err := os.ReadFile(audit)
		if err != nil {
			t.Fatal(err)
		}
		var served []time.Duration
		for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
			var e struct {
				Tool, Outcome string
				DurationMs    int64
			}
			if json.Unmarshal([]byte(line), &e) == nil && e.Tool == "claude_direct_query" && e.Outcome == "task" {
				served = append(served, time.Duration(e.DurationMs)*time.Millisecond)
			}
		}
		var total time.Duration
		for _, d := range served {
			total += d
		}
		t.Logf("four calls: the host model had its turn back after %s; the server answered them in %v (%s in all)", back.Round(10*time.Millisecond), served, total)
		if len(served) != 4 || served[0] < 500*time.Millisecond || total > time.Second {
			t.Errorf("the server answered the four calls in %v (%s in all), want the first after --task-after and all within 1 s (without the fan-out rule: 2 s and more)", served, total)
		}
		for i, d := range served[1:] {
			if d >= 500*time.Millisecond {
				t.Errorf("call %d of the fan-out waited %s, its whole grace", i+2, d)
			}
		}
	})

	for _, tool := range []string{"claude_direct_query", "claude_chat_query"} {
		t.Run("task/"+tool, func(t *testing.T) {
			// A host that takes MCP tasks: the call returns a task at once, the
			// host polls tasks/get, and a new host-model turn brings the result.
			start := time.Now()
			h := startHost(t, hostOptions{prompt: "Ask a sub-agent in the background.", plan: func(h *host) hostPlan {
				if tool == "claude_direct_query" {
					return hostPlan{final: "HOST DONE", steps: [][]hostCall{{directQuery("toolu_task", "SLOW6 task", h.cwd)}}}
				}
				return hostPlan{final: "HOST DONE", steps: [][]hostCall{
					{{id: "toolu_create", tool: "claude_session_create", input: staticInput(map[string]any{"cwd": h.cwd})}},
					{{id: "toolu_task", tool: "claude_chat_query", input: func(r *fakeapi.Request) (any, error) {
						out, err := resultJSON(r, "toolu_create")
						if err != nil {
							return nil, err
						}
						return map[string]any{"sessionId": out["sessionId"], "prompt": "SLOW6 task"}, nil
					}}},
				}}
			}})
			r := h.waitToolResult(90*time.Second, "toolu_task")
			defer h.report(start)
			tr, _ := r.ToolResult("toolu_task")
			m := regexp.MustCompile(`started server-side task (\S+)\.`).FindStringSubmatch(tr.Content)
			if m == nil {
				t.Fatalf("the call did not become a task; the host model got %q", tr.Content)
			}
			taskID := m[1]
			var answer struct {
				ResultType string `json:"resultType"`
				TaskID     string `json:"taskId"`
			}
			if resp, ok := h.callResponse(tool); !ok || json.Unmarshal(resp.Result, &answer) != nil ||
				answer.ResultType != "task" || answer.TaskID != taskID {
				t.Errorf("the server's answer to tools/call = %s, want a task %s", resp.Result, taskID)
			}
			t.Logf("task %s: the host model had the call's answer %s after the start", taskID, time.Since(start).Round(10*time.Millisecond))

			ctx, cancel := h.wait(60 * time.Second)
			defer cancel()
			n, err := h.api.WaitFor(ctx, func(r *fakeapi.Request) bool {
				return fakeapi.From(fakeapi.EntrypointCLI)(r) && strings.Contains(lastUserRaw(r), "<task-notification>")
			})
			if err != nil {
				t.Fatalf("waiting for the host's task notification: %v (%v)", err, context.Cause(ctx))
			}
			note := lastUserRaw(&n)
			res := regexp.MustCompile(`(?s)<result>\s*(.*?)\s*</result>`).FindStringSubmatch(note)
			if !strings.Contains(note, "<status>completed</status>") || !strings.Contains(note, taskID) || res == nil {
				t.Fatalf("task notification = %q", note)
			}
			var out map[string]any
			if err := json.Unmarshal([]byte(res[1]), &out); err != nil || out["finalText"] != childFinal(6) {
				t.Errorf("the notification's result = %q (%v)", res[1], err)
			}

			polls := 0
			for _, msg := range h.rpc(h.rpcIn) {
				var p struct {
					TaskID string `json:"taskId"`
				}
				if msg.Method == "tasks/get" && json.Unmarshal(msg.Params, &p) == nil && p.TaskID == taskID {
					polls++
				}
			}
			if polls == 0 {
				t.Errorf("the host never polled tasks/get for %s", taskID)
			}
			if !strings.Contains(h.serverLog(), "query continues as a task task="+taskID) {
				t.Errorf("the server log does not show task %s", taskID)
			}
			t.Logf("%d tasks/get polls; the notification came %s after the start", polls, time.Since(start).Round(10*time.Millisecond))
		})
	}

	t.Run("task_stop", func(t *testing.T) {
		// claude_chat_query on a long child turn becomes a task; the host
		// model stops it with TaskStop, which makes the host send
		// tasks/cancel; the turn is interrupted and the same session then
		// answers the next query.
		start := time.Now()
		var taskLocal = regexp.MustCompile(`TaskStop with task_id "([^"]+)"`)
		h := startHost(t, hostOptions{prompt: "Start a sub-agent, then stop it.", plan: func(h *host) hostPlan {
			sessionOf := func(r *fakeapi.Request) (string, error) {
				out, err := resultJSON(r, "toolu_create")
				if err != nil {
					return "", err
				}
				sid, _ := out["sessionId"].(string)
				if sid == "" {
					return "", fmt.Errorf("claude_session_create gave no sessionId: %v", out)
				}
				return sid, nil
			}
			return hostPlan{final: "HOST DONE", steps: [][]hostCall{
				{{id: "toolu_create", tool: "claude_session_create", input: staticInput(map[string]any{"cwd": h.cwd})}},
				{{id: "toolu_long", tool: "claude_chat_query", input: func(r *fakeapi.Request) (any, error) {
					sid, err := sessionOf(r)
					return map[string]any{"sessionId": sid, "prompt": "SLOW40 long"}, err
				}}},
				{{id: "toolu_stop", tool: "TaskStop", builtin: true, input: func(r *fakeapi.Request) (any, error) {
					tr, _ := r.ToolResult("toolu_long")
					m := taskLocal.FindStringSubmatch(tr.Content)
					if m == nil {
						return nil, fmt.Errorf("the long query did not become a task: %q", tr.Content)
					}
					return map[string]any{"task_id": m[1]}, nil
				}}},
				{{id: "toolu_after", tool: "claude_chat_query", input: func(r *fakeapi.Request) (any, error) {
					sid, err := sessionOf(r)
					return map[string]any{"sessionId": sid, "prompt": "ECHO after the stop"}, err
				}}},
			}}
		}})
		r := h.waitToolResult(90*time.Second, "toolu_after")
		defer h.report(start)
		created, err := resultJSON(r, "toolu_create")
		if err != nil {
			t.Fatal(err)
		}
		sid, _ := created["sessionId"].(string)
		var answer struct {
			ResultType string `json:"resultType"`
			TaskID     string `json:"taskId"`
		}
		if resp, ok := h.callResponse("claude_chat_query"); !ok || json.Unmarshal(resp.Result, &answer) != nil || answer.ResultType != "task" {
			t.Fatalf("the server's answer to the first claude_chat_query = %s, want a task", resp.Result)
		}
		cancels := 0
		for _, msg := range h.rpc(h.rpcIn) {
			var p struct {
				TaskID string `json:"taskId"`
			}
			if msg.Method == "tasks/cancel" && json.Unmarshal(msg.Params, &p) == nil && p.TaskID == answer.TaskID {
				cancels++
			}
		}
		if cancels == 0 {
			t.Errorf("TaskStop sent no tasks/cancel for %s; the host sent %v", answer.TaskID, methods(h.rpc(h.rpcIn)))
		}
		// The next query on the session is answered (not refused as busy):
		// the long turn (40 deltas 0.5 s apart, 20 s) was cut short.
		out, err := resultJSON(r, "toolu_after")
		if err != nil {
			t.Fatal(err)
		}
		if out["sessionId"] != sid || out["status"] != "completed" || !strings.Contains(fmt.Sprint(out["finalText"]), "after the stop") {
			t.Errorf("the query after the stop: %v (session %s)", out, sid)
		}
		if !strings.Contains(h.serverLog(), "task cancelled by the client") {
			t.Errorf("the server log does not show the cancel")
		}
	})

}

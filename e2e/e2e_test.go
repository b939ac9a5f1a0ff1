// Package e2e_test holds the end-to-end tests: the server binary
// (cmd/claude-agent-mcp), built once per test run, driven as its clients
// drive it — over stdio or --http by the go-sdk client, by raw JSON-RPC
// lines, by the MCP Inspector and conformance suite, by a browser on its
// dashboard, by the interactive Claude Code as the MCP host —, with the
// real Claude Code CLI behind it talking to a fake API (or the test binary
// as the fake CLI: see TestMain). It imports nothing of package main: what
// the tests know of the binary is its command line, its environment and
// its processes.
package e2e_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/e2eenv"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakeapi"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/mcptest"
)

// serverPackage is the server binary's package, which the tests build.
const serverPackage = "github.com/claude-agent-mcp/claude-agent-mcp/cmd/claude-agent-mcp"

// depthEnv carries the nesting depth to child sessions: package main's
// DepthEnv (cmd/claude-agent-mcp), which this package cannot import.
// Should the binary's change alone, TestE2EMaxDepth and
// TestE2EBypassModeAndDepthEnv fail.
const depthEnv = "CLAUDE_SUBAGENT_DEPTH"

// build is one build of the server binary, made once per test run.
type build struct {
	once     sync.Once
	bin      string
	err      error
	prebuilt string // the variable that may name the build, made before
}

var server = build{prebuilt: "E2E_SERVER_BIN"}

// serverBinary builds the server once per test run.
func serverBinary(t *testing.T) string { return server.get(t) }

func (b *build) get(t *testing.T, flags ...string) string {
	t.Helper()
	b.once.Do(func() {
		// scripts/test runs the kernel's tests again as an ordinary user,
		// who has no Go toolchain of its own: the builds are made before.
		if bin := os.Getenv(b.prebuilt); b.prebuilt != "" && bin != "" {
			b.bin = bin
			return
		}
		dir, err := os.MkdirTemp("", "claude-agent-mcp-bin-")
		if err != nil {
			b.err = err
			return
		}
		b.bin = filepath.Join(dir, "claude-agent-mcp")
		args := append(append([]string{"build", "-race"}, flags...), "-o", b.bin, serverPackage)
		out, err := exec.Command("go", args...).CombinedOutput()
		if err != nil {
			b.err = err
			b.bin = string(out)
		}
	})
	if b.err != nil {
		t.Fatalf("building the server: %v\n%s", b.err, b.bin)
	}
	return b.bin
}

// e2e is one server process, driven over stdio by the go-sdk client, with
// the real CLI behind it talking to a fake API.
type e2e struct {
	api     *fakeapi.Server
	claude  string
	env     map[string]string // the offline environment for the server and its CLIs
	home    string
	cwd     string
	session *mcp.ClientSession
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	exited  chan struct{}     // closed when the server process has exited
	logPath string            // the server's stderr
	rec     *mcptest.Recorder // the client's log and progress notifications
}

type e2eOptions struct {
	protocol string // "" = the SDK's newest
	args     []string
	env      map[string]string
	elicit   func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)
	home     string // reuse this HOME (and so the default state file) of an earlier server
}

func startE2E(t *testing.T, o e2eOptions) *e2e {
	t.Helper()
	claude := e2eenv.FindClaude(t)
	bin := serverBinary(t)
	api, err := fakeapi.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(api.Close)
	home, env := e2eenv.Env(t, api.URL())
	if o.home != "" {
		home = o.home
		env["HOME"], env["CLAUDE_CONFIG_DIR"] = home, filepath.Join(home, ".claude")
	}
	cwd := filepath.Join(home, "proj")
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	e := &e2e{api: api, claude: claude, env: env, home: home, cwd: cwd}
	cmd := exec.Command(bin, append([]string{"--claude-path", claude, "--log-level", "debug",
		"--store", filepath.Join(home, "state", "sessions.db")}, o.args...)...)
	cmd.Dir = cwd
	// The server's own settings come from the test, never from an outer
	// environment (a nested session sets CLAUDE_SUBAGENT_DEPTH, say).
	cmd.Env = childEnv(env, o.env)
	stderr, err := os.CreateTemp(home, "server-*.log")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = stderr
	e.cmd, e.logPath = cmd, stderr.Name()
	e.rec = mcptest.NewRecorder("e2e", o.elicit)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	e.stdin = stdin
	exited := make(chan struct{})
	e.exited = exited
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	cs, err := e.rec.Connect(ctx, &mcp.IOTransport{Reader: stdout, Writer: stdin}, o.protocol)
	e.session = cs
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			t.Errorf("server did not exit 20 s after stdin closed")
			_ = cmd.Process.Kill()
			<-exited
		}
		stderr.Close()
		if t.Failed() {
			log, _ := os.ReadFile(stderr.Name())
			t.Logf("server stderr:\n%s", tail(string(log), 8000))
		}
	})
	if err != nil { // after the cleanup, which shows the server's stderr
		t.Fatalf("connecting: %v", err)
	}
	return e
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

func (e *e2e) call(t *testing.T, ctx context.Context, name string, args any, progressToken any) (*mcp.CallToolResult, map[string]any) {
	t.Helper()
	res, out, err := e.callErr(ctx, name, args, progressToken)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res, out
}

// callErr is call for a goroutine other than the test's, where t.Fatal
// must not be used: it returns the protocol error instead.
func (e *e2e) callErr(ctx context.Context, name string, args any, progressToken any) (*mcp.CallToolResult, map[string]any, error) {
	p := &mcp.CallToolParams{Name: name, Arguments: args}
	if progressToken != nil {
		p.Meta = mcp.Meta{"progressToken": progressToken}
	}
	res, err := e.session.CallTool(ctx, p)
	if err != nil {
		return nil, nil, err
	}
	var out map[string]any
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(b, &out)
	}
	return res, out, nil
}

// text is a result's text content (mcptest.Text).
var text = mcptest.Text

func TestE2EServerSessionLifecycle(t *testing.T) {
	t.Parallel()
	e := startE2E(t, e2eOptions{protocol: "2025-11-25"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	res, out := e.call(t, ctx, "claude_session_create", map[string]any{"cwd": e.cwd, "model": "sonnet"}, nil)
	if res.IsError {
		t.Fatalf("create failed: %s", text(res))
	}
	sid, _ := out["sessionId"].(string)
	if sid == "" || out["active"] != true || out["cwd"] != e.cwd {
		t.Fatalf("create output = %v", out)
	}
	if m, _ := out["model"].(string); !strings.HasPrefix(m, "claude-sonnet") {
		t.Errorf("model = %q, want a resolved claude-sonnet id", m)
	}

	res, out = e.call(t, ctx, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "hi"}, "tok-1")
	if res.IsError {
		t.Fatalf("query failed: %s", text(res))
	}
	if got := out["finalText"]; got != "Hello from fake API (n_messages=1)" {
		t.Errorf("finalText = %q", got)
	}
	csid, _ := out["claudeSessionId"].(string)
	if csid == "" || !strings.Contains(text(res), csid) {
		t.Errorf("claudeSessionId %q missing from text %q", csid, text(res))
	}
	res, out = e.call(t, ctx, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "again"}, nil)
	if got := out["finalText"]; got != "Hello from fake API (n_messages=3)" {
		t.Errorf("second finalText = %q (res %s)", got, text(res))
	}

	nprog, nlogs := len(e.rec.Progress()), len(e.rec.Logs())
	if nprog == 0 {
		t.Errorf("no progress notifications for a call with a progress token")
	}
	if nlogs == 0 {
		t.Errorf("no log notifications after setLevel debug")
	}

	res, out = e.call(t, ctx, "claude_chat_model", map[string]any{"sessionId": sid, "model": "claude-haiku-4-5"}, nil)
	if res.IsError || out["resolvedModel"] != "claude-haiku-4-5" {
		t.Fatalf("model: %s %v", text(res), out)
	}
	e.call(t, ctx, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "third"}, nil)
	reqs := e.api.MessageRequests()
	if last := reqs[len(reqs)-1]; last.Model != "claude-haiku-4-5" {
		t.Errorf("API model after switch = %q", last.Model)
	}

	res, out = e.call(t, ctx, "claude_chat_mode", map[string]any{"sessionId": sid, "permissionMode": "acceptEdits"}, nil)
	if res.IsError || out["permissionMode"] != "acceptEdits" {
		t.Fatalf("mode: %s", text(res))
	}

	res, out = e.call(t, ctx, "claude_session_close", map[string]any{"sessionId": sid}, nil)
	if res.IsError || out["closed"] != true {
		t.Fatalf("close: %s", text(res))
	}
	res, _ = e.call(t, ctx, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "hi"}, nil)
	if !res.IsError || !strings.Contains(text(res), "claude_session_create") {
		t.Errorf("query on a closed session: isError=%v %q", res.IsError, text(res))
	}
}

func TestE2EDirectQueryAndInterrupt(t *testing.T) {
	t.Parallel()
	e := startE2E(t, e2eOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	res, out := e.call(t, ctx, "claude_direct_query", map[string]any{"prompt": "ECHO direct", "cwd": e.cwd}, nil)
	if res.IsError || out["finalText"] != "ECHO direct" {
		t.Fatalf("direct: %s %v", text(res), out)
	}

	_, out = e.call(t, ctx, "claude_session_create", map[string]any{"cwd": e.cwd}, nil)
	sid := out["sessionId"].(string)
	done := make(chan map[string]any, 1)
	go func() {
		_, out, err := e.callErr(ctx, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "SLOW"}, nil)
		if err != nil {
			t.Errorf("the slow query: %v", err)
		}
		done <- out
	}()
	if _, err := e.api.WaitMessageRequests(ctx, 2); err != nil {
		t.Fatal(err)
	}
	// The second query is refused at once while the first runs.
	_, err := e.session.CallTool(ctx, &mcp.CallToolParams{Name: "claude_chat_query", Arguments: map[string]any{"sessionId": sid, "prompt": "x"}})
	if err == nil || !strings.Contains(err.Error(), "already running a query") {
		t.Errorf("busy query: err = %v", err)
	}
	start := time.Now()
	res, iout := e.call(t, ctx, "claude_chat_interrupt", map[string]any{"sessionId": sid}, nil)
	if res.IsError || iout["interrupted"] != true {
		t.Fatalf("interrupt: %s", text(res))
	}
	select {
	case out := <-done:
		if out["interrupted"] != true {
			t.Errorf("interrupted query output = %v", out)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("interrupted query returned after %s", d)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("interrupted query did not return")
	}
	_, out = e.call(t, ctx, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "ECHO after"}, nil)
	// The CLI folds the interrupt marker into the next user message.
	if ft, _ := out["finalText"].(string); !strings.HasSuffix(ft, "ECHO after") || out["interrupted"] != false {
		t.Errorf("query after interrupt = %v", out)
	}
}

// inspectorBin is the MCP Inspector CLI ($MCP_INSPECTOR_BIN, else the one
// scripts/test installs into .tools). Missing, it skips the test, except
// under CI=true, where it fails it.
func inspectorBin(t *testing.T) string {
	t.Helper()
	insp := os.Getenv("MCP_INSPECTOR_BIN")
	if insp == "" {
		if root, err := e2eenv.ModuleRoot(); err == nil {
			insp = filepath.Join(root, ".tools", "node_modules", ".bin", "mcp-inspector")
		}
	}
	if _, err := os.Stat(insp); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("MCP Inspector not found at %s and CI=true (scripts/test installs it)", insp)
		}
		t.Skip("MCP Inspector not installed; run scripts/test")
	}
	return insp
}

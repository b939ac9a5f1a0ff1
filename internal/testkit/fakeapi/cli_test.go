package fakeapi

import (
	"bufio"
	"bytes"
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

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/e2eenv"
)

// cliEnv is the environment for an offline CLI run against srv: the parent
// environment minus anything that could redirect or authenticate the CLI,
// plus the test settings.
func cliEnv(srv *Server, home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "HOME", k == "PWD", k == "CLAUDECODE", k == "IS_SANDBOX",
			strings.HasPrefix(k, "ANTHROPIC_"), strings.HasPrefix(k, "CLAUDE_"),
			strings.HasPrefix(k, "AWS_"), strings.HasPrefix(k, "GOOGLE_"), strings.HasPrefix(k, "VERTEX_"),
			k == "HTTP_PROXY", k == "HTTPS_PROXY", k == "http_proxy", k == "https_proxy", k == "ALL_PROXY", k == "all_proxy":
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"HOME="+home,
		"ANTHROPIC_BASE_URL="+srv.URL(),
		"ANTHROPIC_API_KEY=sk-test",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
		"IS_SANDBOX=1",
		"NO_PROXY=127.0.0.1,localhost",
	)
}

// cliRun is the outcome of one CLI process.
type cliRun struct {
	Lines  []map[string]any // stdout NDJSON lines
	Stderr string
	Err    error // from Wait
}

// result returns the last "result" line, or nil.
func (r *cliRun) result() map[string]any {
	for i := len(r.Lines) - 1; i >= 0; i-- {
		if r.Lines[i]["type"] == "result" {
			return r.Lines[i]
		}
	}
	return nil
}

// runCLI runs the CLI with one user message on stdin and the given extra
// arguments, closes stdin once the result line arrives, and returns the
// output after the process has exited.
func runCLI(t *testing.T, bin string, srv *Server, prompt string, extraArgs ...string) *cliRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	home := t.TempDir()
	cwd := filepath.Join(home, "proj")
	if err := os.Mkdir(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--output-format", "stream-json", "--input-format", "stream-json", "--verbose"}, extraArgs...)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = cwd
	cmd.Env = append(cliEnv(srv, home), "PWD="+cwd)
	cmd.WaitDelay = 5 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}

	line, _ := json.Marshal(map[string]any{
		"type":               "user",
		"message":            map[string]any{"role": "user", "content": prompt},
		"parent_tool_use_id": nil,
		"session_id":         "",
	})
	if _, err := stdin.Write(append(line, '\n')); err != nil {
		t.Errorf("writing stdin: %v", err)
	}
	// stdin stays open until the result line arrives: when stdin is closed
	// right away, the CLI exits after the turn without flushing a large
	// (2 MB) stdout line, and the output ends mid-line with exit status 0.
	closeStdin := sync.OnceFunc(func() {
		if err := stdin.Close(); err != nil {
			t.Errorf("closing stdin: %v", err)
		}
	})
	defer closeStdin()

	run := &cliRun{}
	br := bufio.NewReader(stdout)
	for {
		b, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(b)) > 0 {
			var m map[string]any
			if jerr := json.Unmarshal(b, &m); jerr != nil {
				t.Errorf("stdout line is not JSON: %v: %.200q", jerr, b)
			} else {
				run.Lines = append(run.Lines, m)
				if m["type"] == "result" {
					closeStdin()
				}
			}
		}
		if err != nil {
			if err != io.EOF {
				t.Errorf("reading stdout: %v", err)
			}
			break
		}
	}
	run.Err = cmd.Wait()
	run.Stderr = stderr.String()
	if ctx.Err() != nil {
		t.Errorf("CLI timed out; stderr:\n%s", run.Stderr)
	}
	if testing.Verbose() {
		for _, r := range srv.Requests() {
			t.Logf("request: %s %s?%s model=%q stream=%v n_messages=%d tools=%d last=%.80q ua=%q",
				r.Method, r.Path, r.Query, r.Model, r.Stream, len(r.Messages), len(r.Tools),
				r.LastUserText(), r.Header.Get("User-Agent"))
		}
	}
	return run
}

// mustResult returns the result line and checks the CLI exited cleanly.
func mustResult(t *testing.T, run *cliRun) map[string]any {
	t.Helper()
	res := run.result()
	if res == nil {
		t.Fatalf("no result line; exit=%v\nstderr:\n%s\nstdout lines: %v", run.Err, run.Stderr, run.Lines)
	}
	if res["is_error"] != false {
		t.Fatalf("result is an error: %v\nstderr:\n%s", res, run.Stderr)
	}
	if run.Err != nil {
		t.Errorf("CLI exit: %v\nstderr:\n%s", run.Err, run.Stderr)
	}
	return res
}

func startServer(t *testing.T) *Server {
	t.Helper()
	srv, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

func TestRealCLI(t *testing.T) {
	bin := e2eenv.FindClaude(t)

	t.Run("hi", func(t *testing.T) {
		t.Parallel()
		srv := startServer(t)
		run := runCLI(t, bin, srv, "hi")
		res := mustResult(t, run)
		if got, want := res["result"], "Hello from fake API (n_messages=1)"; got != want {
			t.Errorf("result = %q, want %q", got, want)
		}
		reqs := srv.MessageRequests()
		if len(reqs) == 0 {
			t.Fatal("no /v1/messages request recorded")
		}
		last := reqs[len(reqs)-1]
		if !last.Stream {
			t.Errorf("main request was not streaming")
		}
		if got := last.Header.Get("X-Api-Key"); got != "sk-test" {
			t.Errorf("x-api-key = %q", got)
		}
	})

	t.Run("tool_bash", func(t *testing.T) {
		t.Parallel()
		srv := startServer(t)
		run := runCLI(t, bin, srv, "please TOOL_BASH[echo hi]", "--permission-mode", "bypassPermissions")
		res := mustResult(t, run)
		if got, want := res["result"], "Tool said: hi"; got != want {
			t.Errorf("result = %q, want %q", got, want)
		}
		reqs := srv.MessageRequests()
		var found bool
		for _, r := range reqs {
			for _, tr := range r.LastToolResults() {
				if strings.Contains(tr.Content, "hi") && !tr.IsError && strings.HasPrefix(tr.ToolUseID, "toolu_fake_") {
					found = true
				}
			}
		}
		if !found {
			t.Errorf("no request carried a tool_result containing %q; %d requests", "hi", len(reqs))
		}
		var sawToolUse bool
		for _, l := range run.Lines {
			if l["type"] != "assistant" {
				continue
			}
			for _, b := range contentOf(l) {
				if b["type"] == "tool_use" && b["name"] == "Bash" {
					sawToolUse = true
					if in, _ := b["input"].(map[string]any); in["command"] != "echo hi" {
						t.Errorf("tool_use input = %v", b["input"])
					}
				}
			}
		}
		if !sawToolUse {
			t.Error("no assistant line with a Bash tool_use")
		}
		if n, _ := res["num_turns"].(float64); n != 2 {
			t.Errorf("num_turns = %v, want 2", res["num_turns"])
		}
	})

	t.Run("think", func(t *testing.T) {
		t.Parallel()
		srv := startServer(t)
		run := runCLI(t, bin, srv, "THINK about it")
		res := mustResult(t, run)
		if got, want := res["result"], "Hello from fake API (n_messages=1)"; got != want {
			t.Errorf("result = %q, want %q", got, want)
		}
		var thinking string
		for _, l := range run.Lines {
			if l["type"] != "assistant" {
				continue
			}
			for _, b := range contentOf(l) {
				if b["type"] == "thinking" {
					thinking, _ = b["thinking"].(string)
				}
			}
		}
		if thinking != ThinkingText {
			t.Errorf("thinking block = %q, want %q", thinking, ThinkingText)
		}
	})
}

// TestRealCLIMore checks the other keyword behaviours against the real CLI.
func TestRealCLIMore(t *testing.T) {
	bin := e2eenv.FindClaude(t)

	t.Run("echo_ignores_system_reminders", func(t *testing.T) {
		t.Parallel()
		srv := startServer(t)
		res := mustResult(t, runCLI(t, bin, srv, "ECHO exactly this"))
		if got := res["result"]; got != "ECHO exactly this" {
			t.Errorf("result = %q", got)
		}
	})

	t.Run("err500_once_is_retried", func(t *testing.T) {
		t.Parallel()
		srv := startServer(t)
		run := runCLI(t, bin, srv, "ERR500 then fine")
		res := mustResult(t, run)
		if got := res["result"]; got != "Hello from fake API (n_messages=1)" {
			t.Errorf("result = %q", got)
		}
		var retry map[string]any
		for _, l := range run.Lines {
			if l["type"] == "system" && l["subtype"] == "api_retry" {
				retry = l
			}
		}
		if retry == nil || retry["error_status"] != 500.0 {
			t.Errorf("api_retry line = %v", retry)
		}
		if n := len(srv.MessageRequests()); n != 2 {
			t.Errorf("%d message requests, want 2", n)
		}
	})

	t.Run("nonexistent_model", func(t *testing.T) {
		t.Parallel()
		srv := startServer(t)
		run := runCLI(t, bin, srv, "hi", "--model", "nonexistent-model-1")
		res := run.result()
		if res == nil || res["is_error"] != true || res["api_error_status"] != 404.0 {
			t.Fatalf("result = %v\nstderr:\n%s", res, run.Stderr)
		}
		reqs := srv.MessageRequests()
		if len(reqs) == 0 || reqs[0].Model != "nonexistent-model-1" {
			t.Fatalf("requests: %d", len(reqs))
		}
		// 2.1.197 retries a streaming 404 once without "stream"; only log it
		// so that a CLI update does not break the test.
		for _, r := range reqs {
			t.Logf("model=%s stream=%v", r.Model, r.Stream)
		}
	})

	t.Run("bigtext", func(t *testing.T) {
		t.Parallel()
		srv := startServer(t)
		res := mustResult(t, runCLI(t, bin, srv, "BIGTEXT"))
		got, _ := res["result"].(string)
		if len(got) != BigTextSize || got[:20] != "abcdefghijabcdefghij" {
			t.Errorf("result is %d bytes, want %d", len(got), BigTextSize)
		}
	})
}

// contentOf returns message.content of an assistant/user line.
func contentOf(line map[string]any) []map[string]any {
	msg, _ := line["message"].(map[string]any)
	arr, _ := msg["content"].([]any)
	var out []map[string]any
	for _, b := range arr {
		if m, ok := b.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

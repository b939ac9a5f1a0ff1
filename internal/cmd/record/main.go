// Command record runs the real claude CLI against the fake Messages API
// (internal/testkit/fakeapi) for a fixed set of scenarios and writes what crossed
// the CLI's stdin and stdout to testdata/streams/<scenario>.jsonl. The
// captures feed the fake CLI (internal/testkit/fakecli) and the decoder fuzz seeds.
//
// Usage, from the module root:
//
//	go run ./internal/cmd/record [-bin path/to/claude] [-out testdata/streams] [scenario ...]
//
// Capture format, one JSON object per line:
//
//	{"dir":"in","msg":<what the host wrote to stdin>}
//	{"dir":"out","ms":<ms since the previous line>,"msg":<a line the CLI wrote>}
//
// The command line is built by claudeagent.Options.Args and the environment
// by claudeagent.Options.Environ (minus anything that could reach a real
// API), so a capture is what a claudeagent.Process sees. Each scenario runs
// in a fresh process with a fresh HOME (cwd is HOME/proj) and starts with
// an initialize control request. The only scrubbing: the temporary HOME and
// cwd paths (and their project-slug forms) become /HOME and /CWD.
//
// It records what the real CLI does and must not know the fake CLI
// (internal/testkit/fakecli) that replays it: a capture is never shaped to
// suit the replay.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/e2eenv"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakeapi"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/textcut"
)

// scenario is one recorded CLI run.
type scenario struct {
	name string
	opts claudeagent.Options
	run  func(s *session) error
	// loggedOut runs the CLI without ANTHROPIC_API_KEY, as a CLI that is
	// not logged in: its turns end at once, without an API request.
	loggedOut bool
	// oauth logs the CLI in with a (fake) OAuth token instead of the API
	// key, as a subscription: only then does it report usage limits
	// (rate_limit_event).
	oauth bool
}

var scenarios = []scenario{
	{name: "plain", run: func(s *session) error { return s.turn("hi") }},
	{name: "two_turns", run: func(s *session) error {
		if err := s.turn("hi"); err != nil {
			return err
		}
		return s.turn("again")
	}},
	{name: "tool_use", opts: claudeagent.Options{SessionOptions: claudeagent.SessionOptions{PermissionMode: "bypassPermissions"}},
		run: func(s *session) error { return s.turn("TOOL_BASH[echo hi]") }},
	{name: "thinking", run: func(s *session) error { return s.turn("THINK") }},
	{name: "interrupt", run: func(s *session) error {
		// SLOW streams a delta every 0.5 s; interrupt after about three.
		if err := s.sendUser("SLOW"); err != nil {
			return err
		}
		if _, err := s.until(func(m map[string]any) bool { return m["type"] == "system" && m["subtype"] == "init" }); err != nil {
			return err
		}
		if err := s.pause(1500 * time.Millisecond); err != nil {
			return err
		}
		if _, err := s.control("interrupt", nil); err != nil {
			return err
		}
		_, err := s.until(isResult)
		return err
	}},
	{name: "api_error", run: func(s *session) error { return s.turn("ERR400 ALWAYS") }},
	{name: "max_turns", opts: claudeagent.Options{SessionOptions: claudeagent.SessionOptions{PermissionMode: "bypassPermissions", MaxTurns: 1}},
		run: func(s *session) error { return s.turn("TOOL_BASH[echo hi]") }},
	{name: "set_model", run: func(s *session) error {
		if _, err := s.control("set_model", map[string]any{"model": "opus"}); err != nil {
			return err
		}
		return s.turn("hi")
	}},
	{name: "can_use_tool", opts: claudeagent.Options{SessionOptions: claudeagent.SessionOptions{PermissionMode: "default"}, PermissionPromptStdio: true},
		run: func(s *session) error { return s.turn("TOOL_BASH[touch made_by_tool.txt && echo hi]") }},
	// The model's clarifying questions come as a can_use_tool request of
	// AskUserQuestion; the recorder allows it unchanged (no answers).
	{name: "ask_user_question", opts: claudeagent.Options{SessionOptions: claudeagent.SessionOptions{PermissionMode: "default"}, PermissionPromptStdio: true},
		run: func(s *session) error { return s.turn("TOOL_ASK") }},
	{name: "big_line", run: func(s *session) error { return s.turn("BIGTEXT") }},
	{name: "not_logged_in", loggedOut: true, run: func(s *session) error { return s.turn("hi") }},
	{name: "usage_limit", oauth: true, run: func(s *session) error { return s.turn("LIMIT[600] hi") }},
	{name: "usage_warning", oauth: true, run: func(s *session) error { return s.turn("LIMITWARN hi") }},
	{name: "partial", opts: claudeagent.Options{IncludePartialMessages: true}, run: func(s *session) error { return s.turn("SLOW4") }},
	// A message sent while a tool call runs is folded into the same turn
	// (one result); one sent while the final answer streams gets a turn of
	// its own after it (two results). Both messages carry a uuid, as the
	// server's do.
	{name: "steer_tool", opts: claudeagent.Options{SessionOptions: claudeagent.SessionOptions{PermissionMode: "bypassPermissions"}},
		run: func(s *session) error {
			return s.steer("TOOL_BASH[sleep 2; echo slept]", "STEERED also say hi", 1, false)
		}},
	{name: "steer_twice", opts: claudeagent.Options{IncludePartialMessages: true}, run: func(s *session) error {
		if err := s.sendUserUUID("SLOW6", "00000000-0000-4000-8000-000000000001"); err != nil {
			return err
		}
		if _, err := s.until(func(m map[string]any) bool { return m["type"] == "stream_event" }); err != nil {
			return err
		}
		for _, id := range []string{"00000000-0000-4000-8000-000000000002", "00000000-0000-4000-8000-000000000003"} {
			if err := s.pause(time.Second); err != nil {
				return err
			}
			if err := s.sendUserUUID("STEERED "+id[len(id)-1:], id); err != nil {
				return err
			}
		}
		// Both messages, queued while the answer streamed, get one turn
		// of their own (both CLIs): two results in all.
		for range 2 {
			if _, err := s.until(isResult); err != nil {
				return err
			}
		}
		return nil
	}},
	{name: "steer_answer", opts: claudeagent.Options{IncludePartialMessages: true},
		run: func(s *session) error { return s.steer("SLOW6", "STEERED also say hi", 1, true) }},
	// File checkpoints: a turn that writes a file under a uuid, then
	// rewind_files to it (a dry run, the rewind) and to an unknown uuid
	// (a dry run's refusal, a rewind's error); without checkpoints the CLI
	// refuses both.
	{name: "rewind_files", opts: claudeagent.Options{SessionOptions: claudeagent.SessionOptions{PermissionMode: "acceptEdits"}, FileCheckpoints: true},
		run: func(s *session) error {
			const prompt, unknown = "00000000-0000-4000-8000-000000000001", "00000000-0000-4000-8000-00000000000f"
			if err := s.sendUserUUID("TOOL_WRITE["+filepath.Join(s.cwd, "a.txt")+"|alpha]", prompt); err != nil {
				return err
			}
			if _, err := s.until(isResult); err != nil {
				return err
			}
			return s.rewinds(prompt, unknown)
		}},
	{name: "rewind_off", run: func(s *session) error {
		return s.rewinds("00000000-0000-4000-8000-000000000001")
	}},
}

// rewinds sends rewind_files for each uuid, a dry run then a rewind, and
// records the answers, refusals included.
func (s *session) rewinds(uuids ...string) error {
	for _, id := range uuids {
		for _, dry := range []bool{true, false} {
			if _, err := s.request("rewind_files", map[string]any{"user_message_id": id, "dry_run": dry}); err != nil {
				return err
			}
		}
	}
	return nil
}

// steer sends prompt, then message once the turn's first assistant text
// (a delta, with partial messages) is out, plus a pause, and records up to
// the results: two when the message gets a turn of its own.
func (s *session) steer(prompt, message string, pauseSeconds int, twoResults bool) error {
	if err := s.sendUserUUID(prompt, "00000000-0000-4000-8000-000000000001"); err != nil {
		return err
	}
	if _, err := s.until(func(m map[string]any) bool { return m["type"] == "assistant" || m["type"] == "stream_event" }); err != nil {
		return err
	}
	if err := s.pause(time.Duration(pauseSeconds) * time.Second); err != nil {
		return err
	}
	if err := s.sendUserUUID(message, "00000000-0000-4000-8000-000000000002"); err != nil {
		return err
	}
	if _, err := s.until(isResult); err != nil || !twoResults {
		return err
	}
	_, err := s.until(isResult)
	return err
}

func isResult(m map[string]any) bool { return m["type"] == "result" }

func main() {
	log.SetFlags(0)
	log.SetPrefix("record: ")
	bin := flag.String("bin", os.Getenv("CLAUDE_BIN"), "the claude binary (default $CLAUDE_BIN, else the newest pinned CLI in .tools/node_modules/@anthropic-ai/claude-code, else PATH)")
	out := flag.String("out", filepath.Join("testdata", "streams"), "directory for the captures")
	timeout := flag.Duration("timeout", 90*time.Second, "limit per scenario")
	flag.Parse()

	path := *bin
	if path == "" {
		// Not .tools/node_modules/.bin/claude: the oldest supported CLI,
		// installed next to it, declares the same bin.
		p := filepath.Join(".tools", "node_modules", "@anthropic-ai", "claude-code", "bin", "claude.exe")
		if _, err := os.Stat(p); err == nil {
			path = p
		}
	}
	path, err := claudeagent.FindCLI(path)
	if err != nil {
		log.Fatal(err)
	}
	if path, err = filepath.Abs(path); err != nil {
		log.Fatal(err)
	}
	version, err := claudeagent.CLIVersion(context.Background(), path)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("claude %s at %s", version, path)
	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}

	want := map[string]bool{}
	for _, a := range flag.Args() {
		want[a] = true
	}
	named := len(want) > 0 // the scenarios named, else all
	failed := false
	for _, sc := range scenarios {
		if named && !want[sc.name] {
			continue
		}
		delete(want, sc.name)
		start := time.Now()
		n, size, err := record(sc, path, filepath.Join(*out, sc.name+".jsonl"), *timeout)
		if err != nil {
			log.Printf("%s: FAILED: %v", sc.name, err)
			failed = true
			continue
		}
		log.Printf("%s: %d lines, %d bytes, %s", sc.name, n, size, time.Since(start).Round(time.Millisecond))
	}
	for name := range want {
		log.Printf("unknown scenario %q", name)
		failed = true
	}
	if failed {
		os.Exit(1)
	}
}

// record runs one scenario and writes its capture to file. It returns the
// number of capture lines and the file size.
func record(sc scenario, bin, file string, limit time.Duration) (int, int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()

	srv, err := fakeapi.Start()
	if err != nil {
		return 0, 0, err
	}
	defer srv.Close()

	home, err := os.MkdirTemp("", "record-home-")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(home)
	// Resolve symlinks so the paths the CLI prints match (macOS /var → /private/var).
	if h, err := filepath.EvalSymlinks(home); err == nil {
		home = h
	}
	cwd := filepath.Join(home, "proj")
	if err := os.Mkdir(cwd, 0o755); err != nil {
		return 0, 0, err
	}

	cmd := command(ctx, sc, bin, home, cwd, srv.URL())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return 0, 0, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, 0, err
	}

	f, err := os.Create(file)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()

	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	s := newSession(ctx, stdin, stdout, f, scrubber(home, cwd))
	s.cwd = cwd
	runErr := s.run(sc)
	readErr := <-s.readErr
	waitErr := cmd.Wait()
	if err := s.capture.Flush(); err != nil {
		return 0, 0, err
	}
	if err := f.Close(); err != nil {
		return 0, 0, err
	}
	code := cmd.ProcessState.ExitCode()
	log.Printf("%s: exit code %d (%v); stderr: %q", sc.name, code, waitErr, textcut.Cut(stderr.String(), 500))
	if err := errors.Join(runErr, readErr, ctx.Err()); err != nil {
		return 0, 0, fmt.Errorf("%w; stderr: %s", err, stderr.String())
	}
	st, err := os.Stat(file)
	if err != nil {
		return 0, 0, err
	}
	return s.nlines, st.Size(), nil
}

// command is the CLI of scenario sc, with a fresh HOME and cwd, and the
// fake API at apiURL; nothing else from the environment could reach a
// real API.
func command(ctx context.Context, sc scenario, bin, home, cwd, apiURL string) *exec.Cmd {
	opts := sc.opts
	opts.Path, opts.Cwd = bin, cwd
	opts.Env = e2eenv.FakeAPIEnv(home, apiURL)
	if sc.loggedOut || sc.oauth {
		delete(opts.Env, "ANTHROPIC_API_KEY")
	}
	if sc.oauth {
		opts.Env["CLAUDE_CODE_OAUTH_TOKEN"] = "sk-ant-oat01-fake" // read by the CLI, sent to the fake API alone
	}
	keep := maps.Clone(opts.Env)
	if opts.FileCheckpoints {
		// The scenario's, which Environ sets; never the recorder's own.
		keep["CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING"] = ""
	}
	cmd := exec.CommandContext(ctx, bin, opts.Args()...)
	cmd.Dir = cwd
	cmd.Env = offline(opts.Environ(cwd), keep)
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// offline drops from env everything that could point the CLI at a real API
// or account, except the keys in keep.
func offline(env []string, keep map[string]string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := keep[k]; !ok {
			switch {
			case k == "CLAUDECODE", strings.HasPrefix(k, "ANTHROPIC_"),
				strings.HasPrefix(k, "CLAUDE_") && k != "CLAUDE_CODE_ENTRYPOINT",
				strings.HasPrefix(k, "AWS_"), strings.HasPrefix(k, "GOOGLE_"), strings.HasPrefix(k, "VERTEX_"),
				strings.EqualFold(k, "HTTP_PROXY"), strings.EqualFold(k, "HTTPS_PROXY"), strings.EqualFold(k, "ALL_PROXY"):
				continue
			}
		}
		out = append(out, kv)
	}
	return out
}

var nonAlnum = regexp.MustCompile(`[^A-Za-z0-9]`)

// scrubber replaces the temporary paths (and the CLI's project-slug form of
// them, as in ~/.claude/projects/<slug>) by /HOME and /CWD.
func scrubber(home, cwd string) func([]byte) []byte {
	r := strings.NewReplacer(
		cwd, "/CWD",
		home, "/HOME",
		nonAlnum.ReplaceAllString(cwd, "-"), "-CWD",
		nonAlnum.ReplaceAllString(home, "-"), "-HOME",
	)
	return func(b []byte) []byte { return []byte(r.Replace(string(b))) }
}

// Package fakecli is a fake `claude` CLI for fast tests: the test binary
// re-executes itself and, seeing [EnvVar]=1, runs [Main] instead of the
// tests. The fake speaks stream-json on stdin/stdout like the real CLI and
// replays the captures that internal/cmd/record made of the real CLI 2.1.197
// (testdata/streams/*.jsonl), with their timing.
//
// Wiring, in the tested package:
//
//	func TestMain(m *testing.M) { fakecli.TestMain(m) }
//
// and start the CLI with the path and environment from [Command].
//
// It owns the fake's side of the CLI's wire protocol, taken from the
// captures alone; it must not import the packages it serves as a fake for
// (claudeagent, sessions, mcptools), so that their bugs cannot cancel out.
//
// Behaviour:
//   - `--version` (or -v) prints "2.1.197 (Claude Code)" ($FAKE_CLAUDE_VERSION
//     overrides the version).
//   - `auth status` prints what the real CLI prints with --json (its
//     default): logged in with an API key, exit 0; with
//     FAKE_CLAUDE_NOT_LOGGED_IN=1 not logged in, exit 1.
//   - The stream-json flags are checked like the real CLI does
//     (--output-format stream-json needs --verbose, and so on).
//   - Control requests from the host are answered at once, even mid-turn:
//     initialize (the recorded payload, with the fake's own pid), interrupt,
//     set_model (preceded by the "Set model to" replay line, as recorded),
//     set_permission_mode ({"mode":…}, then a system/status line),
//     rewind_files (rewind.go: with CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING
//     every user message that starts a turn is a checkpoint, its turn
//     standing for one new file /CWD/turn<n>.txt; else the recorded
//     refusals); anything else gets "Unsupported control request subtype: X".
//   - A user message starts a turn (turns queue). The capture is picked by
//     keyword: TOOL_BASH → tool_use (max_turns with --max-turns; can_use_tool
//     with --permission-prompt-tool stdio unless in bypassPermissions),
//     TOOL_ASK → ask_user_question (the model's clarifying questions, a
//     can_use_tool request in every mode), THINK → thinking, SLOW/SLOW<n> → a slow stream of n (20) chunks 0.5 s
//     apart, as in the interrupt capture, ERR400 → api_error,
//     LIMITWARN → usage_warning (a rate_limit_event allowed_warning, then
//     the answer), LIMIT[ → usage_limit (a rate_limit_event rejected with
//     the recorded resetsAt, then the synthetic "You've hit your session
//     limit" answer and an error result, api_error_status 429),
//     BIGTEXT → big_line, else plain.
//   - The turn's recorded output is replayed with its recorded pauses
//     (each capped at 2 s, divided by $FAKE_CLAUDE_SPEED), with the
//     session id replaced by the fake's own (--session-id, --resume, else
//     random), /CWD and /HOME by the real paths, and total_cost_usd summed
//     per process.
//   - A recorded can_use_tool request is sent with a fresh request_id and
//     the turn waits for the host's answer. A deny (or an error answer, or
//     an allow without an object updatedInput) turns the recorded tool_result
//     into an is_error one with the message; an allow whose updatedInput
//     differs from the recorded input gets the tool_result
//     "fake claude ran updatedInput: <json>". An interrupt while waiting sends
//     control_cancel_request for it and ends the turn with aborted_tools; an
//     answer to a cancelled request is reported on stderr ("fake claude: got
//     an answer to cancelled control request <id>").
//   - An interrupt during a turn ends it like the interrupt capture: the
//     success response, the partial assistant text, the user line
//     "[Request interrupted by user]" and an error_during_execution result.
//   - A user message that arrives while a tool call of the running turn
//     has no tool_result yet is folded into that turn, as the CLI folds it
//     into its next API request: no turn of its own (the result is the
//     turn's, as recorded in steer_tool). Any other one waits for a turn of
//     its own after the running one, as the CLI answers a message sent
//     while the final answer streams (steer_answer). TOOL_BASH[sleep…]
//     replays steer_tool, whose tool call takes a second.
//   - --include-partial-messages: stream_event lines of a capture are
//     replayed, and SLOW writes a text delta (as in the partial capture)
//     with each chunk; without it they are left out, as the CLI does.
//   - stdin EOF: the queued turns finish, then the fake exits with 0, or 1
//     when the last result was an error (as the real CLI does). A line that
//     is not JSON makes it exit 1 at once, like the real CLI.
//
// Fault injection, by environment variable:
//
//	FAKE_CLAUDE_EXIT_EARLY=<code>:<text>  write text to stderr and exit with code, before reading stdin
//	FAKE_CLAUDE_IGNORE_SIGTERM=1          ignore SIGTERM
//	FAKE_CLAUDE_HANG_ON_EOF=1             never exit after stdin EOF
//	FAKE_CLAUDE_NOISE=1                   before each turn, write a blank line, a non-JSON line,
//	                                      an unknown type and a system line with an unknown subtype
//	FAKE_CLAUDE_IGNORE_CONTROL=<subtype>  never answer (nor act on) that control request subtype
//	FAKE_CLAUDE_STDERR_FLOOD=<n>          write n lines to stderr at start
//	FAKE_CLAUDE_NO_TRANSCRIPT=1           --resume fails as when the transcript was never written:
//	                                      "No conversation found with session ID: <id>", exit 1
//	FAKE_CLAUDE_INPUT_LOG=<file>          append every line read from stdin to file
//	FAKE_CLAUDE_ARGS_LOG=<file>           append the command line (a JSON list) to file, one line per start
//	FAKE_CLAUDE_STRUCTURED_OUTPUT=<json>  with --json-schema, results carry it as structured_output
//	FAKE_CLAUDE_DIE_AFTER_MS=<n>          n ms into the first turn, write "fatal: simulated crash"
//	                                      to stderr and exit 1
//	FAKE_CLAUDE_NOT_LOGGED_IN=1           act as a CLI that is not logged in: `auth status` says
//	                                      so, and every turn replays not_logged_in (the synthetic
//	                                      "Not logged in · Please run /login" answer and error result)
//	FAKE_CLAUDE_RESETS_IN=<duration>      a replayed "resetsAt" (a usage limit's reset, unix seconds)
//	                                      becomes the whole second at least that long from now
package fakecli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	// Not the protocol it fakes: the wrapper that starts a program under
	// the kernel's ceiling, which a fake CLI must pass through as the
	// real one does.
	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent/ceiling"
)

// EnvVar set to "1" makes a test binary act as the fake CLI (see [Main]).
const EnvVar = "FAKE_CLAUDE_CLI"

// Environment variables the fake reads.
const (
	EnvStreams        = "FAKE_CLAUDE_STREAMS" // directory of the captures
	EnvVersion        = "FAKE_CLAUDE_VERSION"
	EnvSpeed          = "FAKE_CLAUDE_SPEED"
	EnvExitEarly      = "FAKE_CLAUDE_EXIT_EARLY"
	EnvIgnoreSIGTERM  = "FAKE_CLAUDE_IGNORE_SIGTERM"
	EnvHangOnEOF      = "FAKE_CLAUDE_HANG_ON_EOF"
	EnvNoise          = "FAKE_CLAUDE_NOISE"
	EnvIgnoreControl  = "FAKE_CLAUDE_IGNORE_CONTROL"
	EnvStderrFlood    = "FAKE_CLAUDE_STDERR_FLOOD"
	EnvDieAfterMs     = "FAKE_CLAUDE_DIE_AFTER_MS"
	EnvNoTranscript   = "FAKE_CLAUDE_NO_TRANSCRIPT"
	EnvTranscriptLag  = "FAKE_CLAUDE_TRANSCRIPT_LAG"
	EnvInputLog       = "FAKE_CLAUDE_INPUT_LOG"
	EnvArgsLog        = "FAKE_CLAUDE_ARGS_LOG"
	EnvStructured     = "FAKE_CLAUDE_STRUCTURED_OUTPUT"
	EnvNotLoggedIn    = "FAKE_CLAUDE_NOT_LOGGED_IN"
	EnvResetsIn       = "FAKE_CLAUDE_RESETS_IN"
	DefaultVersion    = "2.1.197"
	maxPause          = 2 * time.Second
	slowDelay         = 500 * time.Millisecond
	slowDeltas        = 20
	interruptedText   = "[Request interrupted by user]"
	interruptedToolUI = "[Request interrupted by user for tool use]"
	rejectedToolText  = "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). STOP what you are doing and wait for the user to tell you how to proceed."
)

// PassEnv names every variable the fake reads, as a server's --pass-env
// takes them: a CLI gets only an allow-list of its server's environment,
// and these are no part of it.
const PassEnv = EnvVar + "," + EnvStreams + "," + EnvVersion + "," + EnvSpeed + "," + EnvExitEarly + "," +
	EnvIgnoreSIGTERM + "," + EnvHangOnEOF + "," + EnvNoise + "," + EnvIgnoreControl + "," + EnvStderrFlood + "," +
	EnvDieAfterMs + "," + EnvNoTranscript + "," + EnvTranscriptLag + "," + EnvInputLog + "," + EnvArgsLog + "," + EnvStructured + "," +
	EnvNotLoggedIn + "," + EnvResetsIn + ",GORACE"

// PassEnvVar is --pass-env's environment twin: a server started with the
// environment of [Command] passes the fake its variables.
const PassEnvVar = "CLAUDE_AGENT_MCP_PASS_ENV"

// Command returns the fake CLI to start from a test: the running test
// binary, and the environment it needs (EnvVar=1, the captures' directory,
// and GORACE with atexit_sleep_ms=0 so a -race binary exits at once), with
// PassEnvVar for a server started with it (a CLI never gets it). The test
// binary's TestMain must be [TestMain].
func Command(t testing.TB) (path string, env map[string]string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("fakecli: locating the test binary: %v", err)
	}
	dir, err := StreamsDir()
	if err != nil {
		t.Fatalf("fakecli: %v", err)
	}
	// A -race binary sleeps 1 s at exit by default (atexit_sleep_ms);
	// the fake has no threads worth waiting for.
	gorace := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
	env = map[string]string{EnvVar: "1", EnvStreams: dir, "GORACE": gorace, PassEnvVar: PassEnv}
	// The fake's knobs a test set in its own environment (t.Setenv): a
	// CLI inherits none of its server's, these included.
	for _, kv := range os.Environ() {
		if k, v, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "FAKE_CLAUDE_") && k != EnvStreams {
			env[k] = v
		}
	}
	return exe, env
}

// StreamsDir returns the absolute path of testdata/streams: found from the
// working directory upwards (next to go.mod), else relative to this source
// file.
func StreamsDir() (string, error) {
	ok := func(d string) bool {
		_, err := os.Stat(filepath.Join(d, "plain.jsonl"))
		return err == nil
	}
	if dir, err := os.Getwd(); err == nil {
		for {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				if d := filepath.Join(dir, "testdata", "streams"); ok(d) {
					return d, nil
				}
				break
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	if _, file, _, found := runtime.Caller(0); found {
		if d := filepath.Join(filepath.Dir(file), "..", "..", "..", "testdata", "streams"); ok(d) {
			return filepath.Abs(d)
		}
	}
	return "", errors.New("testdata/streams/plain.jsonl not found (run `go run ./internal/cmd/record` from the module root)")
}

// Main runs the fake CLI on os.Args, stdin and stdout, then exits.
func Main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// TestMain is the TestMain of a package whose tests start the fake: the
// test binary runs as the fake CLI when [EnvVar] is "1" (see [Command]),
// and runs the tests otherwise.
func TestMain(m *testing.M) {
	ceiling.Init() // a fake CLI started under a ceiling
	if os.Getenv(EnvVar) == "1" {
		Main()
	}
	os.Exit(m.Run())
}

// fake is one running fake CLI.
type fake struct {
	caps       *captures
	speed      float64
	sid        string
	paths      *strings.Replacer // /CWD, /HOME placeholders → real paths
	trans      *transcript       // the transcript it keeps (transcript.go)
	ckpt       checkpoints       // file checkpoints (rewind.go)
	stdio      bool              // --permission-prompt-tool stdio
	maxT       bool              // --max-turns given
	bypass     bool              // bypassPermissions may be set later
	jsonSchema atomic.Bool       // --json-schema given, or jsonSchema in initialize
	args       []string          // the command line, logged once (logArgs)
	logged     sync.Once
	partials   bool   // --include-partial-messages given
	ignore     string // control subtype never answered
	noise      bool
	loggedOut  bool // every turn is the not-logged-in answer
	die        time.Duration
	resetsIn   time.Duration // a replayed resetsAt becomes this long from now
	errw       io.Writer

	outMu sync.Mutex
	out   io.Writer

	mu         sync.Mutex
	busy       bool   // a turn is running
	toolOpen   bool   // the running turn's tool call has no tool_result yet
	folded     int    // user messages folded into the running turn
	mode       string // permission mode, "" as recorded
	model      string // model, "" as recorded
	answers    map[string]chan json.RawMessage
	cancelled  map[string]bool // requests withdrawn with control_cancel_request
	interrupts chan string     // interrupt request ids for the running turn

	eof chan struct{} // closed at stdin EOF

	// Used by the turn goroutine only (and by set_model's line, which
	// never has a message id).
	msgIDs  map[string]string // recorded assistant message id → fake one, per turn
	msgSeq  int
	cost    float64
	lastErr bool
	nturns  int
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	flags := parseArgs(args)
	if code, done := before(flags, args, stdout, stderr); done {
		return code
	}
	dir := os.Getenv(EnvStreams)
	if dir == "" {
		var err error
		if dir, err = StreamsDir(); err != nil {
			fmt.Fprintln(stderr, "fake claude:", err)
			return 2
		}
	}
	f := newFake(flags, dir, stdout, stderr)
	f.args = args
	return f.serve(stdin)
}

// logArgs appends to EnvArgsLog (when set) a start's command line, then
// what it was given besides: its initialize request as one more element
// "initialize=<JSON>", and for each flag that names a file (--mcp-config,
// --settings) "file:<flag>=<the file's content>", as the CLI reads them at
// its start.
func logArgs(args []string, initialize json.RawMessage) {
	path := os.Getenv(EnvArgsLog)
	if path == "" {
		return
	}
	out := append([]string{}, args...)
	if initialize != nil {
		out = append(out, "initialize="+string(initialize))
	}
	for _, a := range args {
		flag, value, _ := strings.Cut(a, "=")
		if (flag == "--mcp-config" || flag == "--settings") && filepath.IsAbs(value) {
			if b, err := os.ReadFile(value); err == nil {
				out = append(out, "file:"+flag+"="+string(b))
			}
		}
	}
	line, _ := json.Marshal(out)
	appendLine(path, line)
}

// before does what comes before a session: `--version`, `auth status`,
// the command line's log, the faults that end the fake at once, and the
// check of the stream-json flags. done means exit now with code.
func before(flags flagSet, args []string, stdout, stderr io.Writer) (code int, done bool) {
	if flags.has("--version") || flags.has("-v") {
		v := os.Getenv(EnvVersion)
		if v == "" {
			v = DefaultVersion
		}
		fmt.Fprintf(stdout, "%s (Claude Code)\n", v)
		return 0, true
	}
	if len(args) >= 2 && args[0] == "auth" && args[1] == "status" {
		logArgs(args, nil)
		return authStatus(stdout), true
	}
	if spec := os.Getenv(EnvExitEarly); spec != "" {
		logArgs(args, nil)
		codeText, text, _ := strings.Cut(spec, ":")
		code, err := strconv.Atoi(codeText)
		if err != nil {
			code = 1
		}
		if text != "" {
			fmt.Fprintln(stderr, text)
		}
		return code, true
	}
	if id := flags.value("--resume"); id != "" && os.Getenv(EnvNoTranscript) == "1" {
		fmt.Fprintf(stdout, `{"type":"result","subtype":"error_during_execution","is_error":true,"errors":["No conversation found with session ID: %s"],"session_id":%q}`+"\n", id, id)
		fmt.Fprintf(stderr, "No conversation found with session ID: %s\n", id)
		return 1, true
	}
	if os.Getenv(EnvIgnoreSIGTERM) == "1" {
		signal.Ignore(syscall.SIGTERM)
	}
	if n, _ := strconv.Atoi(os.Getenv(EnvStderrFlood)); n > 0 {
		bw := bufio.NewWriter(stderr)
		for i := 1; i <= n; i++ {
			fmt.Fprintf(bw, "fake claude stderr flood line %d of %d\n", i, n)
		}
		bw.Flush()
	}
	switch {
	case flags.value("--output-format") != "stream-json":
		fmt.Fprintln(stderr, "fake claude: only --output-format stream-json is supported")
		return 1, true
	case !flags.has("--verbose"):
		fmt.Fprintln(stderr, "Error: When using --print, --output-format=stream-json requires --verbose")
		return 1, true
	case flags.value("--input-format") != "stream-json":
		fmt.Fprintln(stderr, "fake claude: only --input-format stream-json is supported")
		return 1, true
	}
	return 0, false
}

// appendLine appends line and a newline to the file at path, if it can.
func appendLine(path string, line []byte) {
	if lf, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
		lf.Write(append(line, '\n'))
		lf.Close()
	}
}

// newFake is the fake CLI the command line and the environment describe,
// with the captures in dir.
func newFake(flags flagSet, dir string, stdout, stderr io.Writer) *fake {
	f := &fake{
		caps:       &captures{dir: dir},
		speed:      1,
		sid:        newUUID(),
		stdio:      flags.value("--permission-prompt-tool") == "stdio",
		maxT:       flags.value("--max-turns") != "",
		mode:       flags.value("--permission-mode"),
		ignore:     os.Getenv(EnvIgnoreControl),
		loggedOut:  os.Getenv(EnvNotLoggedIn) == "1",
		noise:      os.Getenv(EnvNoise) == "1",
		errw:       stderr,
		out:        stdout,
		answers:    map[string]chan json.RawMessage{},
		cancelled:  map[string]bool{},
		interrupts: make(chan string, 16),
		eof:        make(chan struct{}),
	}
	f.jsonSchema.Store(flags.has("--json-schema"))
	f.partials = flags.has("--include-partial-messages")
	f.bypass = f.mode == "bypassPermissions" || flags.has("--allow-dangerously-skip-permissions") || flags.has("--dangerously-skip-permissions")
	if s, err := strconv.ParseFloat(os.Getenv(EnvSpeed), 64); err == nil && s > 0 {
		f.speed = s
	}
	if d, err := time.ParseDuration(os.Getenv(EnvResetsIn)); err == nil && d > 0 {
		f.resetsIn = d
	}
	if ms, _ := strconv.Atoi(os.Getenv(EnvDieAfterMs)); ms > 0 {
		f.die = time.Duration(ms) * time.Millisecond
	}
	if id := flags.value("--session-id"); id != "" {
		f.sid = id
	} else if id := flags.value("--resume"); id != "" && !flags.has("--fork-session") {
		f.sid = id
	}
	if m := flags.value("--model"); m != "" {
		f.model = m
	}
	f.trans = newTranscript(f.sid)
	if name := flags.value("--name"); name != "" {
		f.trans.title(f.sid, name)
	}
	f.ckpt.on = checkpointsOn()
	f.resumeCheckpoints(flags.value("--resume"))
	cwd, _ := os.Getwd()
	home := os.Getenv("HOME")
	f.paths = strings.NewReplacer(
		"/CWD", jsonString(cwd),
		"-CWD", jsonString(slug(cwd)),
		"/HOME", jsonString(home),
		"-HOME", jsonString(slug(home)),
	)
	return f
}

// serve reads stdin, running the turns one at a time in a goroutine of
// their own, until stdin ends and the queued turns are done; it returns
// the exit code.
func (f *fake) serve(stdin io.Reader) int {
	queue := make(chan string, 1024)
	turnsDone := make(chan struct{})
	go func() {
		defer close(turnsDone)
		for text := range queue {
			f.mu.Lock()
			f.busy = true
			f.mu.Unlock()
			f.runTurn(text)
			f.mu.Lock()
			f.busy = false
			f.drainInterrupts()
			f.mu.Unlock()
		}
	}()

	br := bufio.NewReaderSize(stdin, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if line = bytes.TrimSpace(line); len(line) > 0 {
			if code, fatal := f.input(line, queue); fatal {
				return code
			}
		}
		if err != nil {
			break
		}
	}
	f.logged.Do(func() { logArgs(f.args, nil) })
	close(f.eof)
	close(queue)
	<-turnsDone
	if os.Getenv(EnvHangOnEOF) == "1" {
		for {
			time.Sleep(time.Hour)
		}
	}
	if f.lastErr {
		return 1
	}
	return 0
}

// input handles one stdin line; fatal reports that the fake must exit with
// code now.
func (f *fake) input(line []byte, queue chan<- string) (code int, fatal bool) {
	var in struct {
		Type      string          `json:"type"`
		UUID      string          `json:"uuid"`
		RequestID string          `json:"request_id"`
		Request   json.RawMessage `json:"request"`
		Response  json.RawMessage `json:"response"`
		Message   struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"message"`
	}
	if path := os.Getenv(EnvInputLog); path != "" {
		appendLine(path, bytes.TrimRight(line, "\n"))
	}
	if err := json.Unmarshal(line, &in); err != nil {
		fmt.Fprintf(f.errw, "Error parsing streaming input line: %s: SyntaxError: %v\n", line, err)
		return 1, true
	}
	switch in.Type {
	case "user":
		f.logged.Do(func() { logArgs(f.args, nil) })
		f.trans.note(line)
		if in.Message.Role != "user" {
			fmt.Fprintf(f.errw, "Error: Expected message role 'user', got '%s'\n", in.Message.Role)
			return 1, true
		}
		f.mu.Lock()
		fold := f.busy && f.toolOpen
		if fold {
			f.folded++
		}
		f.mu.Unlock()
		if !fold {
			f.checkpoint(in.UUID)
			queue <- contentText(in.Message.Content)
		}
	case "control_request":
		f.control(in.RequestID, in.Request)
	case "control_response":
		var r struct {
			RequestID string `json:"request_id"`
		}
		_ = json.Unmarshal(in.Response, &r)
		f.mu.Lock()
		ch := f.answers[r.RequestID]
		delete(f.answers, r.RequestID)
		late := f.cancelled[r.RequestID]
		f.mu.Unlock()
		if ch != nil {
			ch <- in.Response // buffered; each channel gets one answer
		}
		if late {
			// The CLI ignores these silently; the fake reports them so
			// that tests can tell a host that answers after a cancel.
			fmt.Fprintf(f.errw, "fake claude: got an answer to cancelled control request %s\n", r.RequestID)
		}
	}
	return 0, false
}

// contentText is the text of a user message's content (a string or blocks).
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &blocks)
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// authStatus answers `auth status` as the real CLI does (2.1.197 and
// 2.1.330 print the same fields first).
func authStatus(stdout io.Writer) int {
	if os.Getenv(EnvNotLoggedIn) == "1" {
		fmt.Fprintln(stdout, `{"loggedIn": false, "authMethod": "none", "apiProvider": "firstParty"}`)
		return 1
	}
	fmt.Fprintln(stdout, `{"loggedIn": true, "authMethod": "api_key", "apiProvider": "firstParty", "apiKeySource": "ANTHROPIC_API_KEY"}`)
	return 0
}

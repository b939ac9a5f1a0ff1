// Package fakecli is a fake `claude` CLI for fast tests: the test binary
// re-executes itself and, seeing [EnvVar]=1, runs [Main] instead of the
// tests. The fake speaks stream-json on stdin/stdout like the real CLI and
// replays the captures that internal/record made of the real CLI 2.1.197
// (testdata/streams/*.jsonl), with their timing.
//
// Wiring, in the tested package:
//
//	func TestMain(m *testing.M) { fakecli.TestMain(m) }
//
// and start the CLI with the path and environment from [Command].
//
// Behaviour:
//   - `--version` (or -v) prints "2.1.197 (Claude Code)" ($FAKE_CLAUDE_VERSION
//     overrides the version).
//   - The stream-json flags are checked like the real CLI does
//     (--output-format stream-json needs --verbose, and so on).
//   - Control requests from the host are answered at once, even mid-turn:
//     initialize (the recorded payload, with the fake's own pid), interrupt,
//     set_model (preceded by the "Set model to" replay line, as recorded),
//     set_permission_mode ({"mode":…}, then a system/status line);
//     anything else gets "Unsupported control request subtype: X".
//   - A user message starts a turn (turns queue). The capture is picked by
//     keyword: TOOL_BASH → tool_use (max_turns with --max-turns; can_use_tool
//     with --permission-prompt-tool stdio unless in bypassPermissions),
//     THINK → thinking, SLOW/SLOW<n> → a slow stream of n (20) chunks 0.5 s
//     apart, as in the interrupt capture, ERR400 → api_error,
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
//	FAKE_CLAUDE_STRUCTURED_OUTPUT=<json>  with --json-schema, results carry it as structured_output
//	FAKE_CLAUDE_DIE_AFTER_MS=<n>          n ms into the first turn, write "fatal: simulated crash"
//	                                      to stderr and exit 1
package fakecli

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// EnvVar set to "1" makes a test binary act as the fake CLI (see [Main]).
const EnvVar = "CLAUDE_AGENT_MCP_FAKE_CLI"

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
	EnvInputLog       = "FAKE_CLAUDE_INPUT_LOG"
	EnvStructured     = "FAKE_CLAUDE_STRUCTURED_OUTPUT"
	DefaultVersion    = "2.1.197"
	maxPause          = 2 * time.Second
	slowDelay         = 500 * time.Millisecond
	slowDeltas        = 20
	interruptedText   = "[Request interrupted by user]"
	interruptedToolUI = "[Request interrupted by user for tool use]"
	rejectedToolText  = "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). STOP what you are doing and wait for the user to tell you how to proceed."
)

// Command returns the fake CLI to start from a test: the running test
// binary, and the environment it needs (EnvVar=1, the captures' directory,
// and GORACE with atexit_sleep_ms=0 so a -race binary exits at once). The
// test binary's TestMain must be [TestMain].
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
	return exe, map[string]string{EnvVar: "1", EnvStreams: dir, "GORACE": gorace}
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
		if d := filepath.Join(filepath.Dir(file), "..", "..", "testdata", "streams"); ok(d) {
			return filepath.Abs(d)
		}
	}
	return "", errors.New("testdata/streams/plain.jsonl not found (run `go run ./internal/record` from the module root)")
}

// Main runs the fake CLI on os.Args, stdin and stdout, then exits.
func Main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// TestMain is the TestMain of a package whose tests start the fake: the
// test binary runs as the fake CLI when [EnvVar] is "1" (see [Command]),
// and runs the tests otherwise.
func TestMain(m *testing.M) {
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
	stdio      bool              // --permission-prompt-tool stdio
	maxT       bool              // --max-turns given
	bypass     bool              // bypassPermissions may be set later
	jsonSchema bool              // --json-schema given
	ignore     string            // control subtype never answered
	noise      bool
	die        time.Duration
	errw       io.Writer

	outMu sync.Mutex
	out   io.Writer

	mu         sync.Mutex
	busy       bool   // a turn is running
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
	if flags.has("--version") || flags.has("-v") {
		v := os.Getenv(EnvVersion)
		if v == "" {
			v = DefaultVersion
		}
		fmt.Fprintf(stdout, "%s (Claude Code)\n", v)
		return 0
	}
	if spec := os.Getenv(EnvExitEarly); spec != "" {
		codeText, text, _ := strings.Cut(spec, ":")
		code, err := strconv.Atoi(codeText)
		if err != nil {
			code = 1
		}
		if text != "" {
			fmt.Fprintln(stderr, text)
		}
		return code
	}
	if id := flags.value("--resume"); id != "" && os.Getenv(EnvNoTranscript) == "1" {
		fmt.Fprintf(stdout, `{"type":"result","subtype":"error_during_execution","is_error":true,"errors":["No conversation found with session ID: %s"],"session_id":%q}`+"\n", id, id)
		fmt.Fprintf(stderr, "No conversation found with session ID: %s\n", id)
		return 1
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
		return 1
	case !flags.has("--verbose"):
		fmt.Fprintln(stderr, "Error: When using --print, --output-format=stream-json requires --verbose")
		return 1
	case flags.value("--input-format") != "stream-json":
		fmt.Fprintln(stderr, "fake claude: only --input-format stream-json is supported")
		return 1
	}
	dir := os.Getenv(EnvStreams)
	if dir == "" {
		var err error
		if dir, err = StreamsDir(); err != nil {
			fmt.Fprintln(stderr, "fake claude:", err)
			return 2
		}
	}

	f := &fake{
		caps:       &captures{dir: dir},
		speed:      1,
		sid:        newUUID(),
		stdio:      flags.value("--permission-prompt-tool") == "stdio",
		maxT:       flags.value("--max-turns") != "",
		mode:       flags.value("--permission-mode"),
		ignore:     os.Getenv(EnvIgnoreControl),
		noise:      os.Getenv(EnvNoise) == "1",
		errw:       stderr,
		out:        stdout,
		answers:    map[string]chan json.RawMessage{},
		cancelled:  map[string]bool{},
		interrupts: make(chan string, 16),
		eof:        make(chan struct{}),
	}
	f.jsonSchema = flags.has("--json-schema")
	f.bypass = f.mode == "bypassPermissions" || flags.has("--allow-dangerously-skip-permissions") || flags.has("--dangerously-skip-permissions")
	if s, err := strconv.ParseFloat(os.Getenv(EnvSpeed), 64); err == nil && s > 0 {
		f.speed = s
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
	cwd, _ := os.Getwd()
	home := os.Getenv("HOME")
	f.paths = strings.NewReplacer(
		"/CWD", jsonString(cwd),
		"-CWD", jsonString(slug(cwd)),
		"/HOME", jsonString(home),
		"-HOME", jsonString(slug(home)),
	)

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

// flagSet is the command line as flag → value ("" for a bare flag).
type flagSet map[string]string

func parseArgs(args []string) flagSet {
	fs := flagSet{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			continue
		}
		if k, v, ok := strings.Cut(a, "="); ok {
			fs[k] = v
			continue
		}
		if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			fs[a] = args[i+1]
			i++
			continue
		}
		fs[a] = ""
	}
	return fs
}

func (fs flagSet) has(k string) bool     { _, ok := fs[k]; return ok }
func (fs flagSet) value(k string) string { return fs[k] }

// input handles one stdin line; fatal reports that the fake must exit with
// code now.
func (f *fake) input(line []byte, queue chan<- string) (code int, fatal bool) {
	var in struct {
		Type      string          `json:"type"`
		RequestID string          `json:"request_id"`
		Request   json.RawMessage `json:"request"`
		Response  json.RawMessage `json:"response"`
		Message   struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"message"`
	}
	if path := os.Getenv(EnvInputLog); path != "" {
		if lf, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
			lf.Write(append(bytes.TrimRight(line, "\n"), '\n'))
			lf.Close()
		}
	}
	if err := json.Unmarshal(line, &in); err != nil {
		fmt.Fprintf(f.errw, "Error parsing streaming input line: %s: SyntaxError: %v\n", line, err)
		return 1, true
	}
	switch in.Type {
	case "user":
		if in.Message.Role != "user" {
			fmt.Fprintf(f.errw, "Error: Expected message role 'user', got '%s'\n", in.Message.Role)
			return 1, true
		}
		queue <- contentText(in.Message.Content)
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

// control answers a control request from the host.
func (f *fake) control(id string, req json.RawMessage) {
	var r struct {
		Subtype string          `json:"subtype"`
		Mode    string          `json:"mode"`
		Model   json.RawMessage `json:"model"`
	}
	_ = json.Unmarshal(req, &r)
	if r.Subtype != "" && r.Subtype == f.ignore {
		return
	}
	switch r.Subtype {
	case "initialize":
		payload, err := f.initializePayload()
		if err != nil {
			f.controlError(id, err.Error())
			return
		}
		f.controlSuccess(id, payload)
	case "interrupt":
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.busy {
			select {
			case f.interrupts <- id:
				return // the turn answers it as it stops
			default:
			}
		}
		f.controlSuccess(id, nil)
	case "set_model":
		var model string
		_ = json.Unmarshal(r.Model, &model) // null → default
		f.mu.Lock()
		f.model = model
		f.mu.Unlock()
		if line := f.setModelLine(model); line != nil {
			f.emitLine(line)
		}
		f.controlSuccess(id, nil)
	case "set_permission_mode":
		if r.Mode == "bypassPermissions" && !f.bypass {
			f.controlError(id, "Cannot set permission mode to bypassPermissions because the session was not launched with --dangerously-skip-permissions")
			return
		}
		f.mu.Lock()
		f.mode = r.Mode
		f.mu.Unlock()
		payload, _ := json.Marshal(map[string]string{"mode": r.Mode})
		f.controlSuccess(id, payload)
		switch r.Mode {
		case "default", "acceptEdits", "plan", "bypassPermissions", "dontAsk", "auto":
			f.emitLine(marshal(struct {
				Type           string  `json:"type"`
				Subtype        string  `json:"subtype"`
				Status         *string `json:"status"`
				PermissionMode string  `json:"permissionMode"`
				UUID           string  `json:"uuid"`
				SessionID      string  `json:"session_id"`
			}{"system", "status", nil, r.Mode, newUUID(), f.sid}))
		}
	case "apply_flag_settings":
		var a struct {
			Settings map[string]json.RawMessage `json:"settings"`
		}
		if json.Unmarshal(req, &a) != nil || a.Settings == nil {
			f.controlError(id, "apply_flag_settings needs settings")
			return
		}
		f.controlSuccess(id, nil)
	default:
		f.controlError(id, "Unsupported control request subtype: "+r.Subtype)
	}
}

type controlResponse struct {
	Type     string              `json:"type"`
	Response controlResponseBody `json:"response"`
}

type controlResponseBody struct {
	Subtype   string          `json:"subtype"`
	RequestID string          `json:"request_id"`
	Response  json.RawMessage `json:"response,omitempty"`
	Error     string          `json:"error,omitempty"`
}

func (f *fake) controlSuccess(id string, payload json.RawMessage) {
	line, _ := json.Marshal(controlResponse{Type: "control_response",
		Response: controlResponseBody{Subtype: "success", RequestID: id, Response: payload}})
	f.emitLine(line)
}

func (f *fake) controlError(id, msg string) {
	line, _ := json.Marshal(controlResponse{Type: "control_response",
		Response: controlResponseBody{Subtype: "error", RequestID: id, Error: msg}})
	f.emitLine(line)
}

// drainInterrupts answers interrupts that arrived as a turn ended; f.mu
// must be held.
func (f *fake) drainInterrupts() {
	for {
		select {
		case id := <-f.interrupts:
			f.controlSuccess(id, nil)
		default:
			return
		}
	}
}

// initializePayload is the recorded initialize response with the fake's pid.
func (f *fake) initializePayload() (json.RawMessage, error) {
	c, err := f.caps.get("plain")
	if err != nil {
		return nil, err
	}
	e, _ := c.find(0, "out", func(e *entry) bool { return e.typ == "control_response" })
	if e == nil {
		return nil, errors.New("fake claude: plain.jsonl has no initialize response")
	}
	payload := mustObject(mustObject(e.Msg).get("response")).get("response")
	p, err := parseObject(payload)
	if err != nil {
		return nil, fmt.Errorf("fake claude: initialize response: %w", err)
	}
	p.set("pid", os.Getpid())
	out := p.bytes()
	return []byte(f.paths.Replace(string(out))), nil
}

// resolveModel maps a model alias the way the recorded CLI did: "opus" as
// in the set_model capture, other values through the initialize models
// list, anything else unchanged.
func (f *fake) resolveModel(model string) string {
	if c, err := f.caps.get("set_model"); err == nil {
		if e, _ := c.find(0, "in", func(e *entry) bool { return e.subtype == "set_model" }); e != nil {
			var req struct {
				Request struct {
					Model string `json:"model"`
				} `json:"request"`
			}
			if json.Unmarshal(e.Msg, &req) == nil && req.Request.Model == model {
				if init, _ := c.find(0, "out", func(e *entry) bool { return e.typ == "system" && e.subtype == "init" }); init != nil {
					var m struct {
						Model string `json:"model"`
					}
					if json.Unmarshal(init.Msg, &m) == nil && m.Model != "" {
						return m.Model
					}
				}
			}
		}
	}
	if payload, err := f.initializePayload(); err == nil {
		var p struct {
			Models []struct {
				Value         string `json:"value"`
				ResolvedModel string `json:"resolvedModel"`
			} `json:"models"`
		}
		if json.Unmarshal(payload, &p) == nil {
			for _, m := range p.Models {
				if m.Value == model && m.ResolvedModel != "" {
					return m.ResolvedModel
				}
			}
		}
	}
	return model
}

// setModelLine is the user line the CLI emits for set_model, from the
// set_model capture, with the model changed.
func (f *fake) setModelLine(model string) []byte {
	c, err := f.caps.get("set_model")
	if err != nil {
		return nil
	}
	e, _ := c.find(0, "out", func(e *entry) bool { return e.typ == "user" })
	if e == nil {
		return nil
	}
	name := model
	if name == "" {
		name = "default"
	}
	o := mustObject(e.Msg)
	msg := mustObject(o.get("message"))
	msg.set("content", fmt.Sprintf("<local-command-stdout>Set model to %s (%s)</local-command-stdout>", name, f.resolveModel(name)))
	o.set("message", msg)
	o.set("uuid", newUUID())
	o.set("timestamp", time.Now().UTC().Format("2006-01-02T15:04:05.000Z"))
	return f.rewrite(c, o.bytes())
}

// emitLine writes one line to stdout.
func (f *fake) emitLine(line []byte) {
	buf := make([]byte, 0, len(line)+1)
	buf = append(append(buf, line...), '\n')
	f.outMu.Lock()
	defer f.outMu.Unlock()
	_, _ = f.out.Write(buf)
}

// rewrite puts the fake's session id and paths into a recorded line.
func (f *fake) rewrite(c *capture, line []byte) []byte {
	if c.sessionID != "" && c.sessionID != f.sid {
		line = bytes.ReplaceAll(line, []byte(c.sessionID), []byte(f.sid))
	}
	if bytes.Contains(line, []byte("CWD")) || bytes.Contains(line, []byte("HOME")) {
		line = []byte(f.paths.Replace(string(line)))
	}
	return line
}

// emit writes a recorded line of capture c, with a fresh uuid and, for
// assistant lines, a message id that is unique per turn (the CLI never
// repeats them; hosts may group or deduplicate by them).
func (f *fake) emit(c *capture, line []byte) {
	line = f.rewrite(c, line)
	if o, err := parseObject(line); err == nil && o.has("uuid") {
		o.set("uuid", newUUID())
		if msg, err := parseObject(o.get("message")); err == nil && msg.has("id") {
			var id string
			_ = json.Unmarshal(msg.get("id"), &id)
			if f.msgIDs[id] == "" {
				f.msgSeq++
				f.msgIDs[id] = fmt.Sprintf("msg_fakecli_%d", f.msgSeq)
			}
			msg.set("id", f.msgIDs[id])
			o.set("message", msg)
		}
		line = o.bytes()
	}
	f.emitLine(line)
}

// crash simulates the CLI dying mid-turn.
func (f *fake) crash() {
	f.outMu.Lock() // no half-written line
	fmt.Fprintln(f.errw, "fatal: simulated crash")
	os.Exit(1)
}

var slowRe = regexp.MustCompile(`SLOW(\d*)`)

// pick chooses the capture for a prompt; slow is the SLOW chunk count.
func (f *fake) pick(text string) (name string, slow int) {
	f.mu.Lock()
	mode := f.mode
	f.mu.Unlock()
	switch {
	case strings.Contains(text, "TOOL_BASH"):
		switch {
		case f.maxT:
			return "max_turns", 0
		case f.stdio && mode != "bypassPermissions":
			return "can_use_tool", 0
		}
		return "tool_use", 0
	case strings.Contains(text, "THINK"):
		return "thinking", 0
	case slowRe.MatchString(text):
		n := slowDeltas
		if m := slowRe.FindStringSubmatch(text); m[1] != "" {
			if v, err := strconv.Atoi(m[1]); err == nil && v > 0 {
				n = v
			}
		}
		return "interrupt", n
	case strings.Contains(text, "ERR400"):
		return "api_error", 0
	case strings.Contains(text, "BIGTEXT"):
		return "big_line", 0
	}
	return "plain", 0
}

// pause waits for a recorded pause, scaled; it returns early with the id of
// an interrupt request.
func (f *fake) pause(ms int64) (string, bool) {
	d := min(time.Duration(ms)*time.Millisecond, maxPause)
	return f.wait(time.Duration(float64(d) / f.speed))
}

func (f *fake) wait(d time.Duration) (string, bool) {
	if d <= 0 {
		select {
		case id := <-f.interrupts:
			return id, true
		default:
			return "", false
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case id := <-f.interrupts:
		return id, true
	case <-t.C:
		return "", false
	}
}

// runTurn replays one turn for a user message.
func (f *fake) runTurn(text string) {
	f.nturns++
	f.msgIDs = map[string]string{}
	if f.nturns == 1 && f.die > 0 {
		time.AfterFunc(f.die, f.crash)
	}
	if f.noise {
		f.emitNoise()
	}
	name, slow := f.pick(text)
	c, err := f.caps.get(name)
	if err == nil && len(c.turns) == 0 {
		err = fmt.Errorf("fake claude: %s.jsonl has no turn", name)
	}
	if err != nil {
		fmt.Fprintln(f.errw, err)
		f.outMu.Lock()
		os.Exit(2)
	}
	seg := c.turns[0]
	var refusal string // tool_result text replacing the recorded one
	for i, e := range seg {
		if e.Dir == "in" {
			if e.typ == "control_request" && e.subtype == "interrupt" {
				f.slowStream(slow)
				return
			}
			continue
		}
		if id, ok := f.pause(e.Ms); ok {
			f.abort(id, "")
			return
		}
		line := e.Msg
		switch e.typ {
		case "control_response", "control_cancel_request":
			continue
		case "control_request":
			var ok bool
			if refusal, ok = f.ask(c, e, seg[i+1:]); !ok {
				return
			}
			continue
		case "user":
			if refusal != "" {
				line = replaceToolResult(line, refusal)
				refusal = ""
			}
		case "system":
			if e.subtype == "init" {
				line = f.initLine(line)
			}
		case "result":
			f.emitResult(c, line, e.cost, nil)
			continue
		}
		f.emit(c, line)
	}
}

// initLine sets the model and permission mode of a system/init line.
func (f *fake) initLine(line []byte) []byte {
	f.mu.Lock()
	model, mode := f.model, f.mode
	f.mu.Unlock()
	if model == "" && mode == "" {
		return line
	}
	o := mustObject(line)
	if model != "" {
		o.set("model", f.resolveModel(model))
	}
	if mode != "" {
		o.set("permissionMode", mode)
	}
	return o.bytes()
}

// emitResult writes a result line with the process's running cost; set
// overrides fields.
func (f *fake) emitResult(c *capture, line []byte, cost float64, set map[string]any) {
	f.cost += cost
	o := mustObject(line)
	o.set("total_cost_usd", f.cost)
	if so := os.Getenv(EnvStructured); so != "" && f.jsonSchema {
		o.set("structured_output", json.RawMessage(so))
	}
	for k, v := range set {
		o.set(k, v)
	}
	var isErr bool
	_ = json.Unmarshal(o.get("is_error"), &isErr)
	f.lastErr = isErr
	f.emit(c, o.bytes())
}

func (f *fake) emitNoise() {
	f.emitLine(nil)
	f.emitLine([]byte("not json at all"))
	f.emitLine([]byte(`{"type":"frobnicate","x":1}`))
	f.emitLine(marshal(struct {
		Type      string `json:"type"`
		Subtype   string `json:"subtype"`
		SessionID string `json:"session_id"`
		UUID      string `json:"uuid"`
	}{"system", "fake_unknown_subtype", f.sid, newUUID()}))
}

// interruptTail returns the interrupt capture and its lines after the
// interrupt's response: partial assistant, interrupted user line, result.
func (f *fake) interruptTail() (*capture, []entry) {
	c, err := f.caps.get("interrupt")
	if err != nil || len(c.turns) == 0 {
		fmt.Fprintln(f.errw, "fake claude: interrupt capture unusable:", err)
		f.outMu.Lock()
		os.Exit(2)
	}
	var tail []entry
	seen := false
	for _, e := range c.turns[0] {
		switch {
		case e.Dir == "in" && e.subtype == "interrupt":
			seen = true
		case seen && e.Dir == "out" && e.typ != "control_response":
			tail = append(tail, e)
		}
	}
	return c, tail
}

// abort answers interrupt id and ends the turn as the interrupt capture
// does; partial, when set, replaces the partial assistant text.
func (f *fake) abort(id, partial string) {
	f.controlSuccess(id, nil)
	c, tail := f.interruptTail()
	for _, e := range tail {
		line := e.Msg
		switch e.typ {
		case "assistant":
			if partial != "" {
				line = replaceText(line, partial)
			}
		case "result":
			f.emitResult(c, line, e.cost, nil)
			continue
		}
		f.emit(c, line)
	}
}

// slowStream plays the SLOW reply: n chunks 0.5 s apart (scaled), ended
// early by an interrupt; uninterrupted, it ends like a plain turn.
func (f *fake) slowStream(n int) {
	step := time.Duration(float64(slowDelay) / f.speed)
	chunks := func(k int) string {
		var b strings.Builder
		for i := range k {
			fmt.Fprintf(&b, "chunk%d ", i)
		}
		return b.String()
	}
	start := time.Now()
	if id, ok := f.wait(time.Duration(n-1) * step); ok {
		k := min(n, int(time.Since(start)/max(step, 1))+1)
		f.abort(id, chunks(k))
		return
	}
	c, tail := f.interruptTail()
	for _, e := range tail {
		if e.typ == "assistant" {
			f.emit(c, replaceText(e.Msg, chunks(n)))
		}
	}
	plain, err := f.caps.get("plain")
	if err != nil || len(plain.turns) == 0 {
		fmt.Fprintln(f.errw, "fake claude: plain capture unusable:", err)
		f.outMu.Lock()
		os.Exit(2)
	}
	for _, e := range plain.turns[0] {
		if e.typ == "result" {
			f.emitResult(plain, e.Msg, e.cost, map[string]any{"result": chunks(n)})
		}
	}
}

// ask sends a recorded CLI → host control request (can_use_tool) with a
// fresh id and waits for the answer. It returns the text that replaces the
// next tool_result ("" to keep the recorded one), and false when the turn
// was interrupted (and has been ended).
func (f *fake) ask(c *capture, e entry, rest []entry) (string, bool) {
	id := newUUID()
	req := mustObject(e.Msg)
	req.set("request_id", id)
	ch := make(chan json.RawMessage, 1)
	f.mu.Lock()
	f.answers[id] = ch
	f.mu.Unlock()
	f.emit(c, req.bytes())

	var answer json.RawMessage
	select {
	case answer = <-ch:
	case <-f.eof:
		f.forget(id)
		return "Tool permission request failed: Error: Tool permission stream closed before response received", true
	case iid := <-f.interrupts:
		f.forget(id)
		f.abortTool(c, id, iid, rest)
		return "", false
	}
	var resp struct {
		Subtype  string `json:"subtype"`
		Error    string `json:"error"`
		Response struct {
			Behavior     string          `json:"behavior"`
			UpdatedInput json.RawMessage `json:"updatedInput"`
			Message      string          `json:"message"`
		} `json:"response"`
	}
	if err := json.Unmarshal(answer, &resp); err != nil {
		return "Tool permission request failed: Error: " + err.Error(), true
	}
	if resp.Subtype == "error" {
		return "Tool permission request failed: Error: " + resp.Error, true
	}
	switch resp.Response.Behavior {
	case "allow":
		var upd map[string]any
		if json.Unmarshal(resp.Response.UpdatedInput, &upd) != nil || upd == nil {
			return `Tool permission request failed: ZodError: [{"code":"invalid_type","expected":"record","path":["updatedInput"],"message":"expected record, received undefined"}]`, true
		}
		var req struct {
			Request struct {
				Input map[string]any `json:"input"`
			} `json:"request"`
		}
		_ = json.Unmarshal(e.Msg, &req)
		if !reflect.DeepEqual(upd, req.Request.Input) {
			compact, _ := json.Marshal(upd)
			return "fake claude ran updatedInput: " + string(compact), true
		}
		return "", true
	case "deny":
		if resp.Response.Message == "" {
			return "Permission denied", true
		}
		return resp.Response.Message, true
	}
	return fmt.Sprintf("Tool permission request failed: Error: unknown behavior %q", resp.Response.Behavior), true
}

func (f *fake) forget(id string) {
	f.mu.Lock()
	delete(f.answers, id)
	f.mu.Unlock()
}

// abortTool ends a turn interrupted while waiting for a permission answer:
// the CLI cancels its request, answers the interrupt, rejects the tool and
// ends with error_during_execution/aborted_tools.
func (f *fake) abortTool(c *capture, reqID, interruptID string, rest []entry) {
	f.mu.Lock()
	f.cancelled[reqID] = true
	f.mu.Unlock()
	f.emitLine(marshal(struct {
		Type      string `json:"type"`
		RequestID string `json:"request_id"`
	}{"control_cancel_request", reqID}))
	f.controlSuccess(interruptID, nil)
	for _, e := range rest {
		if e.Dir == "out" && e.typ == "user" {
			f.emit(c, replaceToolResult(e.Msg, rejectedToolText))
			break
		}
	}
	ic, tail := f.interruptTail()
	for _, e := range tail {
		switch e.typ {
		case "user":
			f.emit(ic, replaceText(e.Msg, interruptedToolUI))
		case "result":
			f.emitResult(ic, e.Msg, e.cost, map[string]any{"terminal_reason": "aborted_tools"})
		}
	}
}

// replaceToolResult makes the tool_result blocks of a user line errors with
// text.
func replaceToolResult(line []byte, text string) []byte {
	line = editBlocks(line, func(b *object) {
		var typ string
		_ = json.Unmarshal(b.get("type"), &typ)
		if typ == "tool_result" {
			b.set("content", text)
			b.set("is_error", true)
		}
	})
	o := mustObject(line)
	if o.has("tool_use_result") {
		o.set("tool_use_result", "Error: "+text)
	}
	return o.bytes()
}

// replaceText sets the text of the text blocks of an assistant or user line.
func replaceText(line []byte, text string) []byte {
	return editBlocks(line, func(b *object) {
		var typ string
		_ = json.Unmarshal(b.get("type"), &typ)
		if typ == "text" {
			b.set("text", text)
		}
	})
}

// jsonString is s escaped for use inside a JSON string.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

var nonAlnum = regexp.MustCompile(`[^A-Za-z0-9]`)

func slug(p string) string { return nonAlnum.ReplaceAllString(p, "-") }

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

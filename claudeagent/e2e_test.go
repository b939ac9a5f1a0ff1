package claudeagent_test

// End-to-end tests of package claudeagent against the real Claude Code CLI
// (found by e2eenv.FindClaude), talking to the fake Messages API of
// internal/testkit/fakeapi. Each test has its own fake API, HOME and working
// directory, so they run in parallel.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent/ceiling"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/e2eenv"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakeapi"
)

// e2eTimeout bounds each test; the machine may be small and run several
// CLIs at once.
const e2eTimeout = 90 * time.Second

// harness is one test's world: the CLI binary, a fake API, a fresh HOME
// with a project directory, and the environment that ties them together.
type harness struct {
	t    *testing.T
	bin  string
	srv  *fakeapi.Server
	home string
	cwd  string
	env  map[string]string
	logs *testkit.Buffer
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	bin := e2eenv.FindClaude(t)
	srv, err := fakeapi.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	home, env := e2eenv.Env(t, srv.URL())
	cwd := filepath.Join(home, "proj")
	if err := os.Mkdir(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, bin: bin, srv: srv, home: home, cwd: cwd, env: env, logs: &testkit.Buffer{}}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("claudeagent log:\n%s", h.logs.String())
			for _, r := range srv.MessageRequests() {
				t.Logf("API request: model=%q stream=%v conversation=%d last=%.100q",
					r.Model, r.Stream, r.ConversationLen(), r.LastUserText())
			}
		}
	})
	return h
}

// options returns the Options every test starts from.
func (h *harness) options() claudeagent.Options {
	return claudeagent.Options{
		Path:   h.bin,
		Cwd:    h.cwd,
		Env:    h.env,
		Logger: slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
}

// start starts the CLI and registers its Close with t.Cleanup (which runs
// before the HOME and fake API cleanups registered earlier).
func (h *harness) start(ctx context.Context, opts claudeagent.Options) *claudeagent.Process {
	h.t.Helper()
	p, err := claudeagent.Start(ctx, opts)
	if err != nil {
		h.t.Fatalf("Start: %v", err)
	}
	h.t.Cleanup(func() {
		if err := p.Close(); err != nil {
			h.t.Errorf("Close: %v", err)
		}
	})
	return p
}

// lastRequest returns the last POST /v1/messages the fake API received.
func (h *harness) lastRequest() *fakeapi.Request {
	h.t.Helper()
	reqs := h.srv.MessageRequests()
	if len(reqs) == 0 {
		h.t.Fatal("the fake API received no /v1/messages request")
	}
	return &reqs[len(reqs)-1]
}

// turn sends prompt and reads the turn up to its result.
func turn(ctx context.Context, t *testing.T, p *claudeagent.Process, prompt string) (*claudeagent.ResultMessage, []claudeagent.Message) {
	t.Helper()
	if err := p.SendUser(prompt); err != nil {
		t.Fatalf("SendUser(%q): %v", prompt, err)
	}
	return readTurn(ctx, t, p)
}

// readTurn reads messages up to and including the next result.
func readTurn(ctx context.Context, t *testing.T, p *claudeagent.Process) (*claudeagent.ResultMessage, []claudeagent.Message) {
	t.Helper()
	var msgs []claudeagent.Message
	for {
		m, err := p.Next(ctx)
		if err != nil {
			t.Fatalf("waiting for the result: %v (after %d messages); process: %s", err, len(msgs), processState(p))
		}
		msgs = append(msgs, m)
		if r, ok := m.(*claudeagent.ResultMessage); ok {
			return r, msgs
		}
	}
}

// okTurn is turn for a turn that must succeed.
func okTurn(ctx context.Context, t *testing.T, p *claudeagent.Process, prompt string) *claudeagent.ResultMessage {
	t.Helper()
	r, _ := turn(ctx, t, p, prompt)
	if r.IsError {
		t.Fatalf("turn %q failed: subtype=%s error=%q", prompt, r.Subtype, r.ErrorText())
	}
	return r
}

// processState describes whether the CLI is still running, for failures.
func processState(p *claudeagent.Process) string {
	select {
	case <-p.Done():
		return fmt.Sprintf("exited (%v); stderr tail:\n%s", p.Wait(), p.StderrTail())
	default:
		return fmt.Sprintf("running (pid %d); stderr tail:\n%s", p.PID(), p.StderrTail())
	}
}

// waitTextDelta reads messages (needs IncludePartialMessages) until the
// first text_delta stream event, i.e. until the fake API is mid-stream.
func waitTextDelta(ctx context.Context, t *testing.T, p *claudeagent.Process) {
	t.Helper()
	for {
		m, err := p.Next(ctx)
		if err != nil {
			t.Fatalf("waiting for a text delta: %v; process: %s", err, processState(p))
		}
		switch m := m.(type) {
		case *claudeagent.StreamEvent:
			if m.EventType == "content_block_delta" && bytes.Contains(m.Event, []byte(`"text_delta"`)) {
				return
			}
		case *claudeagent.ResultMessage:
			t.Fatalf("the turn ended before any text delta: %s", m.Raw())
		}
	}
}

// sameDir reports whether a and b name the same directory (the CLI may
// report a temp dir with symlinks resolved, as on macOS).
func sameDir(a, b string) bool {
	if a == b {
		return true
	}
	ra, errA := filepath.EvalSymlinks(a)
	rb, errB := filepath.EvalSymlinks(b)
	return errA == nil && errB == nil && ra == rb
}

func fakeHello(n int) string { return fmt.Sprintf("Hello from fake API (n_messages=%d)", n) }

// TestE2ETwoTurnsShareHistory runs two turns in one process: the second
// request carries the first exchange. It also logs the startup timings.
func TestE2ETwoTurnsShareHistory(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx, cancel := context.WithTimeout(t.Context(), e2eTimeout)
	defer cancel()

	t0 := time.Now()
	p := h.start(ctx, h.options())
	initResp, err := p.Initialize(ctx, claudeagent.InitializeRequest{})
	if err != nil {
		t.Fatalf("Initialize: %v; process: %s", err, processState(p))
	}
	tInit := time.Since(t0)
	if len(initResp.Models) == 0 || len(initResp.Commands) == 0 {
		t.Errorf("initialize response has %d models and %d commands", len(initResp.Models), len(initResp.Commands))
	}
	if initResp.PID != p.PID() {
		t.Logf("initialize reports pid %d, the process is %d (a wrapper?)", initResp.PID, p.PID())
	}

	r1, msgs := turn(ctx, t, p, "hi")
	tResult := time.Since(t0)
	t.Logf("real CLI: Start→initialize response %v, Start→first result %v (turn %v, API %d ms)",
		tInit.Round(time.Millisecond), tResult.Round(time.Millisecond), (tResult - tInit).Round(time.Millisecond), r1.DurationAPIMs)
	if r1.IsError || r1.Result != fakeHello(1) {
		t.Fatalf("turn 1: is_error=%v result=%q, want %q", r1.IsError, r1.Result, fakeHello(1))
	}
	var sawInit, sawAssistant bool
	for _, m := range msgs {
		switch m := m.(type) {
		case *claudeagent.SystemMessage:
			if m.Subtype == "init" {
				sawInit = true
				if m.SessionID != r1.SessionID || !sameDir(m.CWD, h.cwd) {
					t.Errorf("system/init session=%q cwd=%q; result session=%q, cwd %q", m.SessionID, m.CWD, r1.SessionID, h.cwd)
				}
			}
		case *claudeagent.AssistantMessage:
			for _, b := range m.Message.Content {
				if b.Type == "text" && b.Text == fakeHello(1) {
					sawAssistant = true
				}
			}
		}
	}
	if !sawInit || !sawAssistant {
		t.Errorf("turn 1: system/init seen=%v, assistant text seen=%v", sawInit, sawAssistant)
	}

	r2 := okTurn(ctx, t, p, "and again")
	if r2.Result != fakeHello(3) {
		t.Errorf("turn 2 result = %q, want %q", r2.Result, fakeHello(3))
	}
	if r2.SessionID != r1.SessionID {
		t.Errorf("session changed between turns: %q → %q", r1.SessionID, r2.SessionID)
	}
	req := h.lastRequest()
	if n := req.ConversationLen(); n != 3 {
		t.Errorf("turn 2 API request has %d user/assistant messages, want 3", n)
	}
	var roles []string
	for _, m := range req.Messages {
		if m.Role == "user" || m.Role == "assistant" {
			roles = append(roles, m.Role)
		}
	}
	if got := strings.Join(roles, ","); got != "user,assistant,user" {
		t.Errorf("turn 2 roles = %s", got)
	}
	if got := req.LastUserText(); got != "and again" {
		t.Errorf("turn 2 last user text = %q", got)
	}
}

// TestE2EInterrupt interrupts a slow stream: the turn ends at once with
// error_during_execution and the process takes the next turn.
func TestE2EInterrupt(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx, cancel := context.WithTimeout(t.Context(), e2eTimeout)
	defer cancel()
	opts := h.options()
	opts.IncludePartialMessages = true
	p := h.start(ctx, opts)
	if _, err := p.Initialize(ctx, claudeagent.InitializeRequest{}); err != nil {
		t.Fatalf("Initialize: %v", err)
	}

	if err := p.SendUser("SLOW please"); err != nil {
		t.Fatal(err)
	}
	waitTextDelta(ctx, t, p)
	tInt := time.Now()
	if err := p.Interrupt(ctx); err != nil {
		t.Fatalf("Interrupt: %v", err)
	}
	t.Logf("interrupt answered in %v", time.Since(tInt).Round(time.Millisecond))
	rctx, rcancel := context.WithTimeout(ctx, 3*time.Second)
	defer rcancel()
	r, msgs := readTurn(rctx, t, p)
	t.Logf("result %v after the interrupt: subtype=%s terminal_reason=%s errors=%q",
		time.Since(tInt).Round(time.Millisecond), r.Subtype, r.TerminalReason, r.Errors)
	if r.Subtype != "error_during_execution" || !r.IsError {
		t.Errorf("interrupted turn: subtype=%q is_error=%v, want error_during_execution and true", r.Subtype, r.IsError)
	}
	var marker bool
	for _, m := range msgs {
		if u, ok := m.(*claudeagent.UserMessage); ok {
			for _, b := range u.Blocks() {
				if strings.Contains(b.Text, "[Request interrupted by user]") {
					marker = true
				}
			}
		}
	}
	if !marker {
		t.Errorf("no [Request interrupted by user] message in the interrupted turn")
	}

	// The partial reply and the interrupt marker stay in the history:
	// user, assistant (partial), user.
	r2 := okTurn(ctx, t, p, "next turn")
	if r2.Result != fakeHello(3) {
		t.Errorf("turn after the interrupt: result %q, want %q", r2.Result, fakeHello(3))
	}
}

// TestE2ESetModel switches the model between turns and checks the model
// the API receives.
func TestE2ESetModel(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx, cancel := context.WithTimeout(t.Context(), e2eTimeout)
	defer cancel()
	opts := h.options()
	opts.Model = "claude-sonnet-4-5"
	p := h.start(ctx, opts)
	initResp, err := p.Initialize(ctx, claudeagent.InitializeRequest{})
	if err != nil {
		t.Fatalf("Initialize: %v", err)
	}

	okTurn(ctx, t, p, "hi")
	if got := h.lastRequest().Model; got != "claude-sonnet-4-5" {
		t.Fatalf("turn 1 model = %q, want claude-sonnet-4-5", got)
	}

	if err := p.SetModel(ctx, "claude-haiku-4-5"); err != nil {
		t.Fatalf("SetModel: %v", err)
	}
	_, msgs := turn(ctx, t, p, "hi with haiku")
	if got := h.lastRequest().Model; got != "claude-haiku-4-5" {
		t.Errorf("after SetModel(claude-haiku-4-5) the API got model %q", got)
	}
	for _, m := range msgs {
		if s, ok := m.(*claudeagent.SystemMessage); ok && s.Subtype == "init" && s.Model != "claude-haiku-4-5" {
			t.Errorf("system/init after SetModel reports model %q", s.Model)
		}
	}

	// An alias resolves as the initialize response says.
	want, ok := claudeagent.ResolveModel(initResp.Models, "sonnet")
	if !ok {
		t.Fatalf("initialize models have no \"sonnet\": %+v", initResp.Models)
	}
	want, _, _ = strings.Cut(want, "[")
	if err := p.SetModel(ctx, "sonnet"); err != nil {
		t.Fatalf("SetModel(sonnet): %v", err)
	}
	okTurn(ctx, t, p, "hi with sonnet")
	if got := h.lastRequest().Model; got != want {
		t.Errorf("after SetModel(sonnet) the API got model %q, want %q", got, want)
	}
}

// TestE2ECanUseTool answers can_use_tool requests for a Bash call that
// needs permission.
func TestE2ECanUseTool(t *testing.T) {
	t.Parallel()
	const command = "touch made_by_tool.txt && echo hi"
	changed := json.RawMessage(`{"command":"echo changed","description":"changed by the host"}`)

	cases := []struct {
		name       string
		answer     func(*claudeagent.CanUseToolRequest) *claudeagent.PermissionResult
		wantResult string // the result text (the fake API echoes the tool result)
		wantTool   string // substring of the tool_result the API receives
		wantError  bool   // whether that tool_result is an error
		wantFile   bool   // whether made_by_tool.txt exists afterwards
	}{
		{
			name: "allow",
			answer: func(c *claudeagent.CanUseToolRequest) *claudeagent.PermissionResult {
				return claudeagent.Allow(c.Input)
			},
			wantResult: "Tool said: hi", wantTool: "hi", wantFile: true,
		},
		{
			name:       "allow_modified",
			answer:     func(*claudeagent.CanUseToolRequest) *claudeagent.PermissionResult { return claudeagent.Allow(changed) },
			wantResult: "Tool said: changed", wantTool: "changed",
		},
		{
			name: "deny",
			answer: func(*claudeagent.CanUseToolRequest) *claudeagent.PermissionResult {
				return claudeagent.Deny("Host says no")
			},
			wantResult: "Tool error: Host says no", wantTool: "Host says no", wantError: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			ctx, cancel := context.WithTimeout(t.Context(), e2eTimeout)
			defer cancel()

			var (
				mu    sync.Mutex
				asked []*claudeagent.CanUseToolRequest
				other []string
			)
			opts := h.options()
			opts.PermissionPromptStdio = true
			opts.PermissionMode = "default"
			opts.OnControlRequest = func(_ context.Context, req *claudeagent.ControlRequest) (any, error) {
				if req.Subtype != "can_use_tool" {
					mu.Lock()
					other = append(other, req.Subtype)
					mu.Unlock()
					return nil, claudeagent.ErrUnsupportedControl
				}
				c, err := req.CanUseTool()
				if err != nil {
					return nil, err
				}
				mu.Lock()
				asked = append(asked, c)
				mu.Unlock()
				return tc.answer(c), nil
			}
			p := h.start(ctx, opts)
			if _, err := p.Initialize(ctx, claudeagent.InitializeRequest{}); err != nil {
				t.Fatalf("Initialize: %v", err)
			}

			r, _ := turn(ctx, t, p, "TOOL_BASH["+command+"]")
			if r.IsError {
				t.Fatalf("turn failed: subtype=%s error=%q", r.Subtype, r.ErrorText())
			}
			if r.Result != tc.wantResult {
				t.Errorf("result = %q, want %q", r.Result, tc.wantResult)
			}

			mu.Lock()
			gotAsked, gotOther := slices.Clone(asked), slices.Clone(other)
			mu.Unlock()
			if len(gotOther) > 0 {
				t.Errorf("unexpected control requests: %v", gotOther)
			}
			if len(gotAsked) != 1 {
				t.Fatalf("%d can_use_tool requests, want 1", len(gotAsked))
			}
			c := gotAsked[0]
			var in struct{ Command string }
			if err := json.Unmarshal(c.Input, &in); err != nil || c.ToolName != "Bash" || in.Command != command {
				t.Errorf("can_use_tool: tool=%q input=%s (%v)", c.ToolName, c.Input, err)
			}
			if c.ToolUseID == "" {
				t.Errorf("can_use_tool has no tool_use_id")
			}

			trs := h.lastRequest().LastToolResults()
			if len(trs) != 1 {
				t.Fatalf("last API request has %d tool_results, want 1", len(trs))
			}
			if tr := trs[0]; !strings.Contains(tr.Content, tc.wantTool) || tr.IsError != tc.wantError || tr.ToolUseID != c.ToolUseID {
				t.Errorf("tool_result = %+v, want content containing %q, is_error=%v, tool_use_id=%q",
					tr, tc.wantTool, tc.wantError, c.ToolUseID)
			}

			_, err := os.Stat(filepath.Join(h.cwd, "made_by_tool.txt"))
			if exists := err == nil; exists != tc.wantFile {
				t.Errorf("made_by_tool.txt exists=%v, want %v", exists, tc.wantFile)
			}

			if tc.wantError {
				if len(r.PermissionDenials) != 1 || r.PermissionDenials[0].ToolName != "Bash" {
					t.Errorf("permission_denials = %+v, want one for Bash", r.PermissionDenials)
				}
			} else if len(r.PermissionDenials) != 0 {
				t.Errorf("permission_denials = %+v, want none", r.PermissionDenials)
			}
		})
	}
}

// newUUID returns a random version 4 UUID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// TestE2EResume runs a turn under a chosen session id, then resumes it in a
// second process with the same HOME and cwd.
func TestE2EResume(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx, cancel := context.WithTimeout(t.Context(), e2eTimeout)
	defer cancel()
	id := newUUID()

	optsA := h.options()
	optsA.SessionID = id
	a := h.start(ctx, optsA)
	ra := okTurn(ctx, t, a, "first process")
	if ra.SessionID != id || ra.Result != fakeHello(1) {
		t.Fatalf("process A: session %q result %q, want %q and %q", ra.SessionID, ra.Result, id, fakeHello(1))
	}
	if err := a.Close(); err != nil {
		t.Fatalf("closing A: %v", err)
	}
	if err := a.Wait(); err != nil {
		t.Errorf("process A exit: %v", err)
	}
	transcripts, _ := filepath.Glob(filepath.Join(h.home, ".claude", "projects", "*", id+".jsonl"))
	if len(transcripts) != 1 {
		t.Errorf("transcript files for %s: %v", id, transcripts)
	}

	optsB := h.options()
	optsB.Resume = id
	b := h.start(ctx, optsB)
	rb := okTurn(ctx, t, b, "second process")
	if rb.SessionID != id {
		t.Errorf("resumed session id = %q, want %q", rb.SessionID, id)
	}
	if rb.Result != fakeHello(3) {
		t.Errorf("resumed turn result = %q, want %q", rb.Result, fakeHello(3))
	}
	if n := h.lastRequest().ConversationLen(); n != 3 {
		t.Errorf("resumed turn's API request has %d user/assistant messages, want 3", n)
	}
}

// TestE2EBigText passes a 2 MB reply through one stdout line.
func TestE2EBigText(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx, cancel := context.WithTimeout(t.Context(), e2eTimeout)
	defer cancel()
	p := h.start(ctx, h.options())
	r, msgs := turn(ctx, t, p, "BIGTEXT")
	if r.IsError {
		t.Fatalf("turn failed: %s", r.ErrorText())
	}
	if len(r.Result) != fakeapi.BigTextSize || !strings.HasPrefix(r.Result, "abcdefghij") {
		t.Errorf("result text is %d bytes, want %d", len(r.Result), fakeapi.BigTextSize)
	}
	var assistant int
	for _, m := range msgs {
		if a, ok := m.(*claudeagent.AssistantMessage); ok {
			for _, b := range a.Message.Content {
				if b.Type == "text" {
					assistant = max(assistant, len(b.Text))
				}
			}
		}
	}
	if assistant != fakeapi.BigTextSize {
		t.Errorf("assistant text is %d bytes, want %d", assistant, fakeapi.BigTextSize)
	}
	t.Logf("result line: %d bytes", len(r.Raw()))
}

// TestE2EAPIError400 gets a non-retryable API error: the turn reports it and
// the process stays usable.
func TestE2EAPIError400(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx, cancel := context.WithTimeout(t.Context(), e2eTimeout)
	defer cancel()
	p := h.start(ctx, h.options())

	r, msgs := turn(ctx, t, p, "ERR400 ALWAYS")
	if !r.IsError || r.APIErrorStatus == nil || *r.APIErrorStatus != 400 {
		t.Fatalf("result: is_error=%v api_error_status=%v, want true and 400; raw %s", r.IsError, r.APIErrorStatus, r.Raw())
	}
	if r.ErrorText() == "" {
		t.Errorf("ErrorText is empty")
	}
	var synthetic string
	for _, m := range msgs {
		if a, ok := m.(*claudeagent.AssistantMessage); ok && a.Error != "" {
			synthetic = a.Error
		}
	}
	t.Logf("400 turn: subtype=%s error text %q, synthetic assistant error %q", r.Subtype, r.ErrorText(), synthetic)
	if synthetic == "" {
		t.Errorf("no synthetic assistant message with an error")
	}

	// The CLI keeps the failed prompt in the history without an assistant
	// reply, so the next request's last user message holds both prompts
	// (ERR400 ALWAYS included): answer it by its last line.
	h.srv.SetHandler(func(r *fakeapi.Request) *fakeapi.Reply {
		if strings.HasSuffix(r.LastUserText(), "hi after the error") {
			return fakeapi.TextReply("recovered")
		}
		return nil
	})
	if r2 := okTurn(ctx, t, p, "hi after the error"); r2.Result != "recovered" {
		t.Errorf("turn after the error: result %q", r2.Result)
	}
	req := h.lastRequest()
	t.Logf("request after the error: %d user/assistant messages, last user text %q", req.ConversationLen(), req.LastUserText())
}

// TestE2ECloseBusy closes a process in the middle of a slow turn.
func TestE2ECloseBusy(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx, cancel := context.WithTimeout(t.Context(), e2eTimeout)
	defer cancel()
	opts := h.options()
	opts.IncludePartialMessages = true
	p := h.start(ctx, opts)
	if err := p.SendUser("SLOW"); err != nil {
		t.Fatal(err)
	}
	waitTextDelta(ctx, t, p)

	t0 := time.Now()
	closeErr := p.Close()
	elapsed := time.Since(t0)
	t.Logf("Close of a busy process took %v; exit: %v", elapsed.Round(time.Millisecond), p.Wait())
	if closeErr != nil {
		t.Errorf("Close: %v", closeErr)
	}
	if elapsed > 15*time.Second {
		t.Errorf("Close took %v, want ≤ 15 s", elapsed)
	}
	select {
	case <-p.Done():
	default:
		t.Fatal("Close returned but Done is not closed")
	}
	if runtime.GOOS != "windows" {
		if pr, err := os.FindProcess(p.PID()); err == nil {
			if err := pr.Signal(syscall.Signal(0)); err == nil {
				t.Errorf("pid %d still exists after Close", p.PID())
			}
		}
	}
	// The queue drains to io.EOF.
	for {
		_, err := p.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("Next after Close: %v", err)
		}
	}
	if err := p.SendUser("too late"); !errors.Is(err, claudeagent.ErrClosed) {
		t.Errorf("SendUser after Close = %v, want ErrClosed", err)
	}
}

// TestE2EMissingCLI needs no CLI: a Path that does not exist is
// ErrCLINotFound, naming the path.
func TestE2EMissingCLI(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), e2eTimeout)
	defer cancel()
	for _, path := range []string{
		filepath.Join(t.TempDir(), "no-such-dir", "claude"),
		"claude-agent-mcp-no-such-claude",
	} {
		p, err := claudeagent.Start(ctx, claudeagent.Options{Path: path, Cwd: t.TempDir()})
		if err == nil {
			p.Close()
			t.Fatalf("Start(%q) succeeded", path)
		}
		if !errors.Is(err, claudeagent.ErrCLINotFound) || !strings.Contains(err.Error(), path) {
			t.Errorf("Start(%q) error = %v; want ErrCLINotFound naming the path", path, err)
		}
	}
}

// TestE2ECLIAuthStatus: the real CLI answers `auth status` offline: logged
// in with the API key of the test environment, not logged in without it in
// a scratch HOME; either way without an API call (at most the connection
// warm-up HEAD that every start of the CLI sends).
func TestE2ECLIAuthStatus(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx, cancel := context.WithTimeout(t.Context(), e2eTimeout)
	defer cancel()
	st, err := claudeagent.CLIAuthStatus(ctx, h.bin, h.env)
	if err != nil || !st.LoggedIn || st.AuthMethod != "api_key" {
		t.Errorf("with ANTHROPIC_API_KEY: %+v, %v; want logged in by api_key", st, err)
	}
	env := maps.Clone(h.env)
	env["ANTHROPIC_API_KEY"] = ""
	st, err = claudeagent.CLIAuthStatus(ctx, h.bin, env)
	if err != nil || st.LoggedIn || st.AuthMethod != "none" {
		t.Errorf("without credentials: %+v, %v; want not logged in", st, err)
	}
	for _, r := range h.srv.Requests() {
		if r.Method != "HEAD" { // 2.1.197 sends its warm-up HEAD / as at every start
			t.Errorf("auth status sent %s %s to the API", r.Method, r.Path)
		}
	}
}

// TestE2ECLIVersion checks CLIVersion against the running CLI's own report
// and, for a CLI that scripts/test installs (the newest or the oldest
// supported one), against the version tools/npm/package.json pins for it.
func TestE2ECLIVersion(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx, cancel := context.WithTimeout(t.Context(), e2eTimeout)
	defer cancel()

	v, err := claudeagent.CLIVersion(ctx, h.bin)
	if err != nil {
		t.Fatalf("CLIVersion: %v", err)
	}
	t.Logf("%s is version %s", h.bin, v)

	p := h.start(ctx, h.options())
	payload, err := p.Control(ctx, "get_binary_version", nil)
	if err != nil {
		t.Fatalf("get_binary_version: %v", err)
	}
	var bv struct{ Version string }
	if err := json.Unmarshal(payload, &bv); err != nil || bv.Version != v {
		t.Errorf("get_binary_version = %s (%v); CLIVersion said %s", payload, err, v)
	}

	root, err := e2eenv.ModuleRoot()
	if err != nil {
		return
	}
	modules, err1 := filepath.EvalSymlinks(filepath.Join(root, ".tools", "node_modules"))
	bin, err2 := filepath.EvalSymlinks(h.bin) // .bin/claude is a link into a package
	if err1 != nil || err2 != nil || !strings.HasPrefix(bin, modules+string(filepath.Separator)) {
		return
	}
	data, err := os.ReadFile(filepath.Join(root, "tools", "npm", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(data, &pkg); err != nil {
		t.Fatal(err)
	}
	dep, spec := pinnedSpec(pkg.Dependencies, bin[len(modules)+1:])
	if spec == "" {
		t.Fatalf("%s is in no package that tools/npm/package.json pins (%s)", h.bin, bin)
	}
	// An alias pins "npm:<package>@<version>".
	want := spec
	if strings.HasPrefix(spec, "npm:") {
		want = spec[strings.LastIndex(spec, "@")+1:]
	}
	if v != want {
		t.Errorf("CLIVersion = %s, tools/npm/package.json pins %s for %s", v, spec, dep)
	}
}

// pinnedSpec finds the dependency that holds rel, a path below
// node_modules, and returns its name and version spec ("" when none does).
func pinnedSpec(deps map[string]string, rel string) (dep, spec string) {
	parts := strings.Split(filepath.ToSlash(rel), "/")
	dep = parts[0]
	if strings.HasPrefix(dep, "@") && len(parts) > 1 {
		dep += "/" + parts[1]
	}
	return dep, deps[dep]
}

// BenchmarkE2EStartJail times a start of the real CLI to its answer to
// initialize, with and without the jail (namespaces, a /proc of its own,
// the capabilities dropped; and under "no programs" every mount no-exec
// but the CLI's files), alternating so that both meet the same machine:
// the jail's cost on a session's start (BENCHMARKS.md). Run with
// -bench E2EStartJail -benchtime 20x, CLAUDE_BIN naming the CLI.
func BenchmarkE2EStartJail(b *testing.B) {
	bin := e2eenv.FindClaude(b)
	srv, err := fakeapi.Start()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Close)
	_, env := e2eenv.Env(b, srv.URL())
	for _, mode := range []string{"plain", "jail", "jail_no_programs"} {
		b.Run(mode, func(b *testing.B) {
			for b.Loop() {
				opts := claudeagent.Options{Path: bin, Cwd: b.TempDir(), Env: env}
				switch mode {
				case "jail":
					opts.Jail = true
				case "jail_no_programs":
					opts.Jail = true
					opts.Ceiling = &ceiling.Ceiling{NoPrograms: true}
				}
				ctx, cancel := context.WithTimeout(context.Background(), e2eTimeout)
				p, err := claudeagent.Start(ctx, opts)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := p.Initialize(ctx, claudeagent.InitializeRequest{}); err != nil {
					b.Fatalf("%s: %v (%s)", mode, err, p.StderrTail())
				}
				b.StopTimer()
				p.Close()
				cancel()
				b.StartTimer()
			}
		})
	}
}

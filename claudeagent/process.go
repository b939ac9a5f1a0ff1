package claudeagent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent/ceiling"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/procwait"
)

// Errors a [Process] returns.
var (
	// ErrClosed reports a write or request after the CLI's stdin was closed
	// or the process ended.
	ErrClosed = errors.New("claude process is closed")
	// ErrControlTimeout reports a control request the CLI did not answer in
	// time.
	ErrControlTimeout = errors.New("claude did not answer the control request in time")
)

// ExitError reports how the CLI process ended, with the last lines it wrote
// to stderr (fatal startup problems appear only there).
type ExitError struct {
	Code       int    // exit code, or -1 when killed by a signal
	Signal     string // the signal that ended it, if any, such as SIGKILL
	StderrTail string
}

func (e *ExitError) Error() string {
	var s string
	if e.Signal != "" {
		s = "claude was killed by " + e.Signal
	} else {
		s = fmt.Sprintf("claude exited with code %d", e.Code)
	}
	if e.StderrTail != "" {
		s += "; stderr: " + e.StderrTail
	}
	return s
}

// Process owns one running claude CLI in stream-json mode.
//
// Goroutines: one reads stdout and dispatches (control responses to their
// waiters, control requests to Options.OnControlRequest, everything else to
// the queue read by [Process.Next]); one drains stderr; one waits for the
// exit. Writes to stdin are serialised. All methods are safe for concurrent
// use; Close may be called more than once.
type Process struct {
	opts Options
	path string
	cwd  string
	cmd  *exec.Cmd
	log  *slog.Logger

	wmu         sync.Mutex // serialises stdin writes
	stdin       io.WriteCloser
	stdinClosed atomic.Bool
	partials    atomic.Bool // KeepPartials

	queue msgQueue

	mu       sync.Mutex
	pending  map[string]chan controlResult
	incoming map[string]context.CancelFunc
	seq      uint64
	idSalt   string
	marker   string // MarkerEnv=value, in the CLI's environment and so its tools'
	private  string // the process's private directory (private.go), removed at its end

	stderr tailBuffer

	life       context.Context // cancelled when the process is done
	endLife    context.CancelFunc
	exited     chan struct{} // closed when the process has exited
	done       chan struct{} // closed when exited and stdout is drained
	exitErr    error
	closeOnce  sync.Once
	closeErr   error
	readerDone chan struct{}
}

// Start starts the CLI. ctx bounds only the start itself; the process lives
// until [Process.Close] or until it exits. Nothing is written to the CLI:
// call [Process.Initialize] and [Process.SendUser].
func Start(ctx context.Context, opts Options) (*Process, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	path, err := FindCLI(opts.Path)
	if err != nil {
		return nil, err
	}
	cwd := opts.Cwd
	if cwd == "" {
		if cwd, err = os.Getwd(); err != nil {
			return nil, fmt.Errorf("getting working directory: %w", err)
		}
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	marker := randomHex(8)
	private, err := makePrivate()
	if err != nil {
		return nil, err
	}
	opts.private = private
	if err := opts.writeDocuments(private); err != nil {
		removePrivate(private)
		return nil, err
	}
	cmd := exec.Command(path, opts.Args()...)
	cmd.Dir = cwd
	cmd.Env = opts.environ(cwd, marker)
	setProcAttr(cmd)
	limit := ceilingFor(&opts, path, cmd)
	if limit.Restricts() {
		logger.Debug("starting claude under the kernel's ceiling", "ceiling", limit.String())
	}
	pp, err := startPiped(cmd, path, limit)
	if err != nil {
		removePrivate(private)
		return nil, err
	}

	life, endLife := context.WithCancel(context.Background())
	p := &Process{
		opts:       opts,
		path:       path,
		cwd:        cwd,
		cmd:        cmd,
		log:        logger.With("pid", cmd.Process.Pid),
		stdin:      pp.stdin,
		pending:    map[string]chan controlResult{},
		incoming:   map[string]context.CancelFunc{},
		idSalt:     randomHex(4),
		marker:     MarkerEnv + "=" + marker,
		private:    private,
		life:       life,
		endLife:    endLife,
		exited:     make(chan struct{}),
		done:       make(chan struct{}),
		readerDone: make(chan struct{}),
	}
	p.queue.init()
	p.stderr.max = opts.StderrLines
	if p.stderr.max <= 0 {
		p.stderr.max = 40
	}
	stderrDone := make(chan struct{})
	p.partials.Store(true)
	go p.readStdout(pp.outR)
	go func() {
		defer close(stderrDone)
		p.readStderr(pp.errR)
	}()
	go p.reap(pp.outR, pp.errR, stderrDone)
	return p, nil
}

// pipes are a started CLI's ends of its stdin, stdout and stderr.
type pipes struct {
	stdin      io.WriteCloser
	outR, errR *os.File
}

// startPiped starts cmd (the CLI at path, under limit when it restricts) with its output on pipes of our own (read by the
// Process's readers, closed by [Process.reap]); on failure nothing is left
// open.
func startPiped(cmd *exec.Cmd, path string, limit *ceiling.Ceiling) (pipes, error) {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return pipes{}, fmt.Errorf("creating stdin pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return pipes{}, fmt.Errorf("creating stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return pipes{}, fmt.Errorf("creating stderr pipe: %w", err)
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	startErr := limit.Start(cmd)
	outW.Close()
	errW.Close()
	if startErr != nil {
		outR.Close()
		errR.Close()
		stdin.Close()
		return pipes{}, fmt.Errorf("starting claude at %s: %w", path, startErr)
	}
	return pipes{stdin: stdin, outR: outR, errR: errR}, nil
}

// randomHex is n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// PID is the CLI's process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Path is the binary that runs.
func (p *Process) Path() string { return p.path }

// Cwd is the CLI's working directory.
func (p *Process) Cwd() string { return p.cwd }

// Done is closed when the process has exited and its output is drained.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited is closed as soon as the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Wait waits for the process to end and returns nil for exit code 0, else
// an *ExitError.
func (p *Process) Wait() error {
	<-p.done
	return p.exitErr
}

// StderrTail returns the last lines the CLI wrote to stderr.
func (p *Process) StderrTail() string { return p.stderr.String() }

// Next returns the next message from the CLI. It returns io.EOF once stdout
// has ended and every message was returned, or ctx's error.
func (p *Process) Next(ctx context.Context) (Message, error) {
	return p.queue.pop(ctx)
}

// SendUser sends a user message; content is a string or a list of content
// blocks. The turn's messages follow on [Process.Next], ending with a
// *ResultMessage.
func (p *Process) SendUser(content any) error { return p.SendUserID(content, "") }

// SendUserID is SendUser with the message's uuid (fresh for every message:
// the CLI drops a repeated one), by which the turn's result can be told
// from one of a turn the CLI started by itself (see ResultMessage.Answers).
func (p *Process) SendUserID(content any, uuid string) error {
	msg := map[string]any{
		"type":               "user",
		"message":            map[string]any{"role": "user", "content": content},
		"parent_tool_use_id": nil,
		"session_id":         "",
	}
	if uuid != "" {
		msg["uuid"] = uuid
	}
	return p.writeJSON(msg)
}

// Send writes one raw message (any JSON object) to the CLI.
func (p *Process) Send(v any) error { return p.writeJSON(v) }

func (p *Process) writeJSON(v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding message: %w", err)
	}
	data = append(data, '\n')
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if p.stdinClosed.Load() {
		return ErrClosed
	}
	if _, err := p.stdin.Write(data); err != nil {
		return fmt.Errorf("writing to claude: %w (%w)", ErrClosed, err)
	}
	return nil
}

// closeStdin ends the CLI's input; it does not take the write lock, so it
// also unblocks a write stuck on a full pipe.
func (p *Process) closeStdin() {
	if p.stdinClosed.CompareAndSwap(false, true) {
		_ = p.stdin.Close()
	}
}

// CloseInput closes the CLI's stdin: an idle CLI then exits; a busy one
// finishes its turn first.
func (p *Process) CloseInput() { p.closeStdin() }

// Control sends a control request and waits for its response payload (a
// missing payload is {}). body is marshalled into the request object next to
// "subtype"; nil sends only the subtype. The wait is bounded by ctx, the
// control timeout and the life of the process; it never blocks the reader.
func (p *Process) Control(ctx context.Context, subtype string, body any) (json.RawMessage, error) {
	req := map[string]json.RawMessage{}
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("encoding %s request: %w", subtype, err)
		}
		if err := json.Unmarshal(data, &req); err != nil {
			return nil, fmt.Errorf("encoding %s request: body is not an object: %w", subtype, err)
		}
	}
	req["subtype"], _ = json.Marshal(subtype)

	ch := make(chan controlResult, 1)
	p.mu.Lock()
	p.seq++
	id := fmt.Sprintf("req_%d_%s", p.seq, p.idSalt)
	p.pending[id] = ch
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.pending, id)
		p.mu.Unlock()
	}()

	if err := p.writeJSON(map[string]any{"type": "control_request", "request_id": id, "request": req}); err != nil {
		return nil, err
	}
	timer := time.NewTimer(p.opts.controlTimeout())
	defer timer.Stop()
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, &ControlError{Subtype: subtype, Message: r.err.Error()}
		}
		return r.payload, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-timer.C:
		return nil, fmt.Errorf("%w: %s after %s", ErrControlTimeout, subtype, p.opts.controlTimeout())
	case <-p.life.Done():
		return nil, fmt.Errorf("%w: it ended before answering %s", ErrClosed, subtype)
	}
}

// Initialize sends the initialize request; send it before the first user
// message. What the options give by initialize (the system prompts, the
// agents, the JSON schema: never on the command line) fills what req
// leaves empty, so a process whose options have any must be initialized.
// The response lists models (aliases → ids), commands and the pid.
func (p *Process) Initialize(ctx context.Context, req InitializeRequest) (*InitializeResponse, error) {
	payload, err := p.Control(ctx, "initialize", p.opts.initialize(req))
	if err != nil {
		return nil, err
	}
	var resp InitializeResponse
	if err := json.Unmarshal(payload, &resp); err != nil {
		return nil, fmt.Errorf("decoding initialize response: %w", err)
	}
	resp.Raw = payload
	return &resp, nil
}

// Interrupt stops the running turn (the CLI then emits the partial reply and
// a result with subtype error_during_execution). It is a no-op when idle.
func (p *Process) Interrupt(ctx context.Context) error {
	_, err := p.Control(ctx, "interrupt", nil)
	return err
}

// SetModel switches the model for the next turns; "" selects the default.
func (p *Process) SetModel(ctx context.Context, model string) error {
	var m any
	if model != "" {
		m = model
	}
	_, err := p.Control(ctx, "set_model", map[string]any{"model": m})
	return err
}

// Rename sets the session's display name (control request rename_session),
// as --name does at the start: both CLIs write the same custom-title line
// into the transcript.
func (p *Process) Rename(ctx context.Context, title string) error {
	_, err := p.Control(ctx, "rename_session", map[string]any{"title": title})
	return err
}

// SetPermissionMode switches the permission mode. The CLI does not validate
// the mode: callers must.
func (p *Process) SetPermissionMode(ctx context.Context, mode string) error {
	_, err := p.Control(ctx, "set_permission_mode", map[string]any{"mode": mode})
	return err
}

// SetEffort switches the effort level for the next turns without a
// restart (control request apply_flag_settings); "" selects the model's
// default.
func (p *Process) SetEffort(ctx context.Context, effort string) error {
	var level any
	if effort != "" {
		level = effort
	}
	_, err := p.Control(ctx, "apply_flag_settings", map[string]any{"settings": map[string]any{"effortLevel": level}})
	return err
}

// Close ends the process in stages: close stdin and wait, SIGTERM the
// process group and wait, SIGKILL it. Each wait is Options.CloseTimeout. It
// returns once the process is gone; an error means it could not be ended.
func (p *Process) Close() error {
	p.closeOnce.Do(func() { p.closeErr = p.shutdown() })
	return p.closeErr
}

func (p *Process) shutdown() error {
	p.closeStdin()
	stage := p.opts.closeTimeout()
	if p.waitExited(stage) {
		return nil
	}
	p.log.Debug("claude did not exit after stdin closed; sending SIGTERM")
	_ = terminate(p.cmd.Process)
	if p.waitExited(stage) {
		return nil
	}
	p.log.Warn("claude ignored SIGTERM; killing it")
	_ = kill(p.cmd.Process)
	if p.waitExited(stage) {
		return nil
	}
	return fmt.Errorf("claude (pid %d) did not exit after SIGKILL", p.PID())
}

// Stop ends the process group now, for a CLI that does not respond: SIGTERM,
// and SIGKILL when it has not exited after grace. It returns once the
// process is gone.
func (p *Process) Stop(grace time.Duration) {
	p.closeStdin()
	_ = terminate(p.cmd.Process)
	if p.waitExited(grace) {
		return
	}
	_ = kill(p.cmd.Process)
	<-p.exited
	<-p.done
}

// Kill ends the process group at once, without a graceful stage.
func (p *Process) Kill() {
	p.closeStdin()
	_ = kill(p.cmd.Process)
}

// waitExited waits up to d for the exit and then for the output to drain.
func (p *Process) waitExited(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		<-p.done
		return true
	case <-t.C:
		return false
	}
}

// reap reaps the process, then makes sure both readers finish: tools the
// CLI started may still hold the pipes, so the group is killed and, after a
// short grace, the read ends are closed.
func (p *Process) reap(outR, errR *os.File, stderrDone <-chan struct{}) {
	procwait.AwaitExit(p.cmd.Process.Pid) // then Wait returns at once
	err := p.cmd.Wait()
	_ = kill(p.cmd.Process) // orphans in the CLI's group
	if n := KillMarked(p.marker); n > 0 {
		p.log.Debug("killed tool processes the CLI left behind", "count", n)
	}
	removePrivate(p.private)
	waitOrClose(stderrDone, errR)
	p.exitErr = p.exitError(err)
	close(p.exited)
	waitOrClose(p.readerDone, outR)
	errR.Close()
	outR.Close()
	p.closeStdin()
	p.endLife()
	p.queue.close()
	close(p.done)
	if p.exitErr != nil {
		p.log.Debug("claude exited", "err", p.exitErr)
	}
}

// waitOrClose waits a moment for a reader to finish, then closes its pipe
// to unblock it.
func waitOrClose(done <-chan struct{}, r *os.File) {
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		r.Close()
		<-done
	}
}

func (p *Process) exitError(err error) error {
	if err == nil {
		return nil
	}
	ee := &ExitError{Code: -1, StderrTail: p.stderr.String()}
	var xe *exec.ExitError
	if errors.As(err, &xe) {
		ee.Code = xe.ExitCode()
		if sig := exitSignal(xe); sig != "" {
			ee.Signal = sig
		}
	} else {
		ee.StderrTail = strings.TrimSpace(ee.StderrTail + "\n" + err.Error())
	}
	return ee
}

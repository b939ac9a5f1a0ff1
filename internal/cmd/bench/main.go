// Command bench measures the server against the real Claude Code CLI, which
// talks to the repository's fake Anthropic API (internal/testkit/fakeapi) on
// loopback with an offline environment like internal/e2eenv's:
//
//   - a warm claude_chat_query through the built server, against the same
//     turn sent to a CLI driven directly through claudeagent.Process;
//   - claude_direct_query with a matching warm spare and without one
//     (a second server with --warm-spares 0), against a cold `claude -p`;
//     and with a spare on a third server kept full (--max-live 2 with an
//     idle session), where no new spare starts while the query runs;
//   - claude_session_create with a spare and without one;
//   - the first query of a session that took a spare, against the first
//     turn of a CLI started and initialized through claudeagent.Process
//     just before (what a spare can save is bounded by that first turn);
//   - a 2 MB answer (the fake API's BIGTEXT) through the server, against the
//     same turn through claudeagent.Process, and that finalText is capped;
//   - the server's VmRSS with 10 open sessions (4 live) on the real CLI, and
//     with 10 and 200 open sessions (most dormant) on the fake CLI
//     (internal/testkit/fakecli, the claudeagent test binary).
//
// The timed variants run interleaved: every round runs each variant once,
// in a different (seeded pseudo-random) order each round, so that load on
// the machine falls on all of them alike and no variant always follows the
// same other one. A warm-up round is run first and not counted.
// p50 and p90 are nearest-rank percentiles over the rounds. For each timed
// turn the report also splits the time at the first request that reaches
// the fake API, and subtracts the CLI's own duration_ms.
//
// Waits: for a warm spare, the server's debug log line "warm spare ready"
// (its stderr); before reading VmRSS, a settle of [rssSettle]. At the end
// the driver checks /proc for processes left with this run's API URL in
// their environment.
//
// Run from the module root: `go run ./internal/cmd/bench` (scripts/bench does).
// The CLI is $CLAUDE_BIN, else the newest pinned CLI in .tools (see
// scripts/test). The report, in Markdown, goes to stdout; progress to
// stderr. Missed targets are reported, not errors: the exit status is 1
// only when something failed.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/e2eenv"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakeapi"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakecli"
)

// Settle times: the only sleeps in the driver, documented in BENCHMARKS.md.
const (
	rssSettle  = 2 * time.Second  // before reading VmRSS
	callLimit  = 2 * time.Minute  // bound for any one call or turn
	spareLimit = 60 * time.Second // bound for a warm spare to become ready
)

type config struct {
	rounds       int
	claude       string
	serverBin    string
	fakeCLI      string
	manySessions int
	maxResult    int
	skipRSS      bool
	only         string
}

func main() {
	var c config
	flag.IntVar(&c.rounds, "rounds", 20, "timed rounds (after one warm-up round)")
	flag.StringVar(&c.claude, "claude", os.Getenv("CLAUDE_BIN"), "the claude CLI (default $CLAUDE_BIN, else the newest CLI in .tools)")
	flag.StringVar(&c.serverBin, "server", "", "the server binary (default: go build -o into a temporary directory)")
	flag.StringVar(&c.fakeCLI, "fake-cli", "", "the fake CLI, the claudeagent test binary (default: go test -c into a temporary directory)")
	flag.IntVar(&c.manySessions, "sessions", 200, "open sessions for the second RSS figure (fake CLI)")
	flag.IntVar(&c.maxResult, "max-result-chars", 60000, "--max-result-chars of the servers (the product's default)")
	flag.BoolVar(&c.skipRSS, "skip-rss", false, "skip the RSS figures")
	flag.StringVar(&c.only, "only", "", "run only these timed figures (comma-separated keys such as chat_server,chat_cli)")
	flag.Parse()
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
}

func run(c config) (err error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root, err := e2eenv.ModuleRoot()
	if err != nil {
		return err
	}
	if c.claude == "" {
		c.claude = filepath.Join(root, e2eenv.InstalledCLI)
	}
	if _, err := os.Stat(c.claude); err != nil {
		return fmt.Errorf("no claude CLI at %s (run scripts/test once to install the pinned CLIs into .tools, or set CLAUDE_BIN): %w", c.claude, err)
	}
	tmp, err := os.MkdirTemp("", "claude-agent-mcp-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if c.serverBin == "" {
		c.serverBin = filepath.Join(tmp, "claude-agent-mcp")
		logf("building the server")
		if err := goCmd(ctx, root, "build", "-o", c.serverBin, "./cmd/claude-agent-mcp"); err != nil {
			return err
		}
	}
	if c.fakeCLI == "" && !c.skipRSS {
		c.fakeCLI = filepath.Join(tmp, "fakeclaude")
		logf("building the fake CLI")
		if err := goCmd(ctx, root, "test", "-c", "-o", c.fakeCLI, "./claudeagent/"); err != nil {
			return err
		}
	}
	version, err := output(ctx, c.claude, "--version")
	if err != nil {
		return fmt.Errorf("claude --version: %w", err)
	}
	api, err := fakeapi.Start()
	if err != nil {
		return err
	}
	defer api.Close()
	b := &bench{c: c, tmp: tmp, api: api, env: e2eenv.OfflineEnv(filepath.Join(tmp, "home"), api.URL()), results: map[string][]time.Duration{},
		toAPI: map[string][]time.Duration{}, apiReqs: map[string]int{}, outside: map[string][]time.Duration{}, extra: map[string][]time.Duration{}}
	api.SetHandler(b.apiLog.handle)
	b.proj = filepath.Join(tmp, "proj")
	for _, d := range []string{b.proj, b.env["HOME"]} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	defer func() {
		if lerr := b.checkLeftovers(); lerr != nil && err == nil {
			err = lerr
		}
	}()
	if err := b.timed(ctx); err != nil {
		return err
	}
	if !c.skipRSS {
		if err := b.rss(ctx); err != nil {
			return err
		}
	}
	b.report(os.Stdout, strings.TrimSpace(version))
	return nil
}

func goCmd(ctx context.Context, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

func output(ctx context.Context, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, callLimit)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).Output()
	return string(out), err
}

// environ is the inherited environment without the server's own settings
// and CLAUDECODE, with env on top.
func environ(env map[string]string) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, over := env[k]; over || strings.HasPrefix(k, "CLAUDE_AGENT_MCP_") || k == "CLAUDECODE" {
			continue
		}
		out = append(out, kv)
	}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return out
}

type bench struct {
	c    config
	tmp  string
	api  *fakeapi.Server
	env  map[string]string
	proj string

	results map[string][]time.Duration
	toAPI   map[string][]time.Duration // from the start of the timed part to the first API request
	apiReqs map[string]int             // API requests during the timed parts
	span    [2]time.Time               // the last timed part
	cliMs   int64                      // the CLI's duration_ms of the last timed turn, or -1
	outside map[string][]time.Duration // wall time minus the CLI's duration_ms
	extra   map[string][]time.Duration // untimed diagnostics, by name (warm-up round dropped)
	apiLog  apiRecorder
	notes   []string
	rssRows [][5]string
	bigInfo string
	rss10   int64
	serials int
}

// ---- the server under test ----

// server is one claude-agent-mcp process driven by the go-sdk client.
type server struct {
	once sync.Once
	name string
	cmd  *exec.Cmd
	cs   *mcp.ClientSession
	log  *logWatch
}

// logWatch keeps the server's stderr (debug level) and counts the
// "warm spare ready" lines.
type logWatch struct {
	mu      sync.Mutex
	partial []byte
	tail    []string
	spares  int
	changed chan struct{}
	file    *os.File
}

func (w *logWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, _ = w.file.Write(p)
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		line := string(w.partial[:i])
		w.partial = w.partial[i+1:]
		w.tail = append(w.tail, line)
		if len(w.tail) > 30 {
			w.tail = w.tail[1:]
		}
		if strings.Contains(line, "warm spare ready") {
			w.spares++
			close(w.changed)
			w.changed = make(chan struct{})
		}
	}
	return len(p), nil
}

// sparesReady returns how many "warm spare ready" lines were logged.
func (w *logWatch) sparesReady() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.spares
}

// waitSpares waits until at least n "warm spare ready" lines were logged.
func (w *logWatch) waitSpares(ctx context.Context, n int) error {
	ctx, cancel := context.WithTimeout(ctx, spareLimit)
	defer cancel()
	for {
		w.mu.Lock()
		got, ch := w.spares, w.changed
		w.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("waiting for warm spare #%d: %w", n, ctx.Err())
		}
	}
}

func (w *logWatch) lastLines() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.tail, "\n")
}

// startServer starts the built server in b.proj with the CLI at claude,
// the offline environment plus extra, and args after the common flags.
func (b *bench) startServer(ctx context.Context, name, claude string, extra map[string]string, args ...string) (*server, error) {
	b.serials++
	state := filepath.Join(b.tmp, fmt.Sprintf("state-%d-%s.json", b.serials, name))
	cmd := exec.Command(b.c.serverBin, append([]string{"--claude-path", claude, "--log-level", "debug",
		"--state-file", state, "--max-result-chars", strconv.Itoa(b.c.maxResult)}, args...)...)
	cmd.Dir = b.proj
	env := maps.Clone(b.env)
	maps.Copy(env, extra)
	cmd.Env = environ(env)
	f, err := os.Create(filepath.Join(b.tmp, fmt.Sprintf("server-%d-%s.log", b.serials, name)))
	if err != nil {
		return nil, err
	}
	w := &logWatch{changed: make(chan struct{}), file: f}
	cmd.Stderr = w
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cctx, cancel := context.WithTimeout(ctx, callLimit)
	defer cancel()
	cs, err := client.Connect(cctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 15 * time.Second},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		if cmd.Process != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		return nil, fmt.Errorf("connecting to the %s server: %w\n%s", name, err, w.lastLines())
	}
	return &server{name: name, cmd: cmd, cs: cs, log: w}, nil
}

// stop closes the client: the server sees stdin end, stops its sessions
// and exits (the transport signals and then kills it if it does not).
// It may be called more than once.
func (s *server) stop() {
	s.once.Do(func() {
		if err := s.cs.Close(); err != nil {
			logf("%s server: closing: %v", s.name, err)
		}
		s.log.file.Close()
	})
}

func (s *server) pid() int { return s.cmd.Process.Pid }

// call calls a tool and decodes its structured result into out.
func (s *server) call(ctx context.Context, tool string, args map[string]any, out any) error {
	ctx, cancel := context.WithTimeout(ctx, callLimit)
	defer cancel()
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return fmt.Errorf("%s on the %s server: %w\n%s", tool, s.name, err, s.log.lastLines())
	}
	if res.IsError {
		var text strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text.WriteString(tc.Text)
			}
		}
		return fmt.Errorf("%s on the %s server: tool error: %s", tool, s.name, text.String())
	}
	if out != nil {
		data, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return err
		}
		return json.Unmarshal(data, out)
	}
	return nil
}

type createOut struct {
	SessionID string `json:"sessionId"`
	Active    bool   `json:"active"`
}

type queryOut struct {
	FinalText string `json:"finalText"`
	Metadata  struct {
		DurationMs int64 `json:"durationMs"` // the CLI's duration_ms
	} `json:"metadata"`
	Status    string `json:"status"`
	Error     string `json:"error"`
	SessionID string `json:"sessionId"`
}

func (s *server) create(ctx context.Context) (string, error) {
	var out createOut
	if err := s.call(ctx, "claude_session_create", map[string]any{}, &out); err != nil {
		return "", err
	}
	if out.SessionID == "" || !out.Active {
		return "", fmt.Errorf("claude_session_create on the %s server: %+v", s.name, out)
	}
	return out.SessionID, nil
}

func (s *server) closeSession(ctx context.Context, id string) error {
	return s.call(ctx, "claude_session_close", map[string]any{"sessionId": id}, nil)
}

func (s *server) query(ctx context.Context, tool string, args map[string]any) (queryOut, error) {
	var out queryOut
	if err := s.call(ctx, tool, args, &out); err != nil {
		return out, err
	}
	if out.Status != "completed" || out.Error != "" {
		return out, fmt.Errorf("%s on the %s server: status %q, error %q", tool, s.name, out.Status, out.Error)
	}
	return out, nil
}

const hello = "Hello from fake API"

func wantHello(what, text string) error {
	if !strings.Contains(text, hello) {
		return fmt.Errorf("%s answered %q, want the fake API's greeting", what, cut(text, 200))
	}
	return nil
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// ---- the CLI driven directly ----

// startCLI starts and initializes the real CLI with the options a session
// with the default options gets from the server.
func (b *bench) startCLI(ctx context.Context) (*claudeagent.Process, error) {
	ctx, cancel := context.WithTimeout(ctx, callLimit)
	defer cancel()
	p, err := claudeagent.Start(ctx, claudeagent.Options{
		Path: b.c.claude, Cwd: b.proj, Env: b.env, PermissionPromptStdio: true,
		SessionID: uuid.NewString(), CloseTimeout: 5 * time.Second,
	})
	if err != nil {
		return nil, err
	}
	if _, err := p.Initialize(ctx, claudeagent.InitializeRequest{}); err != nil {
		_ = p.Close()
		return nil, fmt.Errorf("initialize: %w (stderr: %s)", err, p.StderrTail())
	}
	return p, nil
}

// cliTurn sends prompt and waits for the turn's result.
func cliTurn(ctx context.Context, p *claudeagent.Process, prompt string) (*claudeagent.ResultMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, callLimit)
	defer cancel()
	if err := p.SendUser(prompt); err != nil {
		return nil, err
	}
	for {
		m, err := p.Next(ctx)
		if err != nil {
			return nil, fmt.Errorf("waiting for the result: %w (stderr: %s)", err, p.StderrTail())
		}
		if r, ok := m.(*claudeagent.ResultMessage); ok {
			if r.IsError {
				return r, fmt.Errorf("turn failed: %s", r.ErrorText())
			}
			return r, nil
		}
	}
}

// coldPrint runs `claude -p hi` with the offline environment.
func (b *bench) coldPrint(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, callLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.c.claude, "-p", "hi")
	cmd.Dir = b.proj
	cmd.Env = environ(b.env)
	cmd.WaitDelay = 5 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("claude -p: %w (stderr: %s)", err, cut(stderr.String(), 500))
	}
	return wantHello("claude -p", string(out))
}

// ---- the timed, interleaved part ----

// variant is one timed step; setup and teardown around the timed part are
// the step's own business and leave the servers as they found them (a
// warm spare ready on the spares server).
type variant struct {
	key  string
	step func(ctx context.Context) (time.Duration, error)
}

// timeIt times f, and remembers when the timed part started and ended so
// that the API requests made during it can be found.
func (b *bench) timeIt(f func() error) (time.Duration, error) {
	start := time.Now()
	err := f()
	b.span = [2]time.Time{start, time.Now()}
	return b.span[1].Sub(start), err
}

// apiRecorder notes when each POST /v1/messages request reached the fake
// API (the handler runs as the request arrives; returning nil keeps the
// keyword replies).
type apiRecorder struct {
	mu    sync.Mutex
	times []time.Time
}

func (a *apiRecorder) handle(*fakeapi.Request) *fakeapi.Reply {
	a.mu.Lock()
	a.times = append(a.times, time.Now())
	a.mu.Unlock()
	return nil
}

// within returns the first arrival in span and how many arrived in it.
func (a *apiRecorder) within(span [2]time.Time) (first time.Time, n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, t := range a.times {
		if !t.Before(span[0]) && !t.After(span[1]) {
			if n == 0 {
				first = t
			}
			n++
		}
	}
	return first, n
}

func (b *bench) timed(ctx context.Context) (err error) {
	logf("starting the servers (%s)", b.c.claude)
	warm, err := b.startServer(ctx, "spares", b.c.claude, nil) // --warm-spares 1, --max-live 4: the defaults
	if err != nil {
		return err
	}
	defer warm.stop()
	cold, err := b.startServer(ctx, "no-spares", b.c.claude, nil, "--warm-spares", "0")
	if err != nil {
		return err
	}
	defer cold.stop()
	// A server kept full (--max-live 2: one idle session and the spare), so
	// that a direct query that takes the spare starts no new one until it
	// is over: the same path as direct_spare without the refill competing
	// for the CPU.
	full, err := b.startServer(ctx, "max-live-2", b.c.claude, nil, "--max-live", "2")
	if err != nil {
		return err
	}
	defer full.stop()
	for _, s := range []*server{warm, full} {
		if err := s.log.waitSpares(ctx, 1); err != nil {
			return err
		}
	}
	if _, err := full.create(ctx); err != nil { // takes the spare; a new one starts in the free place
		return err
	}
	if err := full.log.waitSpares(ctx, 2); err != nil {
		return err
	}
	// afterSpare runs f, which takes the spares server's spare, then waits
	// for the spare started behind it (untimed).
	afterSpare := func(f func() error) error {
		n := warm.log.sparesReady()
		if err := f(); err != nil {
			return err
		}
		return warm.log.waitSpares(ctx, n+1)
	}
	var chat string
	if err := afterSpare(func() (err error) { chat, err = warm.create(ctx); return err }); err != nil {
		return err
	}
	direct, err := b.startCLI(ctx)
	if err != nil {
		return err
	}
	defer direct.Close()

	variants := []variant{
		{"chat_server", func(ctx context.Context) (time.Duration, error) {
			var out queryOut
			d, err := b.timeIt(func() (err error) {
				out, err = warm.query(ctx, "claude_chat_query", map[string]any{"sessionId": chat, "prompt": "hi"})
				return err
			})
			if err == nil {
				b.cliMs, err = out.Metadata.DurationMs, wantHello("claude_chat_query", out.FinalText)
			}
			return d, err
		}},
		{"chat_cli", func(ctx context.Context) (time.Duration, error) {
			var r *claudeagent.ResultMessage
			d, err := b.timeIt(func() (err error) { r, err = cliTurn(ctx, direct, "hi"); return err })
			if err == nil {
				b.cliMs, err = r.DurationMs, wantHello("the CLI", r.Result)
			}
			return d, err
		}},
		{"direct_spare", func(ctx context.Context) (time.Duration, error) {
			var d time.Duration
			err := afterSpare(func() error {
				var out queryOut
				var err error
				d, err = b.timeIt(func() (err error) {
					out, err = warm.query(ctx, "claude_direct_query", map[string]any{"prompt": "hi"})
					return err
				})
				if err == nil {
					b.cliMs, err = out.Metadata.DurationMs, wantHello("claude_direct_query", out.FinalText)
				}
				return err
			})
			return d, err
		}},
		{"direct_spare_norefill", func(ctx context.Context) (time.Duration, error) {
			n := full.log.sparesReady()
			var out queryOut
			d, err := b.timeIt(func() (err error) {
				out, err = full.query(ctx, "claude_direct_query", map[string]any{"prompt": "hi"})
				return err
			})
			if err == nil {
				b.cliMs, err = out.Metadata.DurationMs, wantHello("claude_direct_query", out.FinalText)
			}
			if err == nil {
				// The spare starts once the query's session is gone.
				err = full.log.waitSpares(ctx, n+1)
			}
			return d, err
		}},
		{"direct_nospare", func(ctx context.Context) (time.Duration, error) {
			var out queryOut
			d, err := b.timeIt(func() (err error) {
				out, err = cold.query(ctx, "claude_direct_query", map[string]any{"prompt": "hi"})
				return err
			})
			if err == nil {
				b.cliMs, err = out.Metadata.DurationMs, wantHello("claude_direct_query", out.FinalText)
			}
			return d, err
		}},
		{"cold_p", func(ctx context.Context) (time.Duration, error) {
			return b.timeIt(func() error { return b.coldPrint(ctx) })
		}},
		{"create_spare", func(ctx context.Context) (time.Duration, error) {
			var d time.Duration
			err := afterSpare(func() error {
				var id string
				var err error
				d, err = b.timeIt(func() (err error) { id, err = warm.create(ctx); return err })
				if err != nil {
					return err
				}
				return warm.closeSession(ctx, id)
			})
			return d, err
		}},
		{"create_nospare", func(ctx context.Context) (time.Duration, error) {
			var id string
			d, err := b.timeIt(func() (err error) { id, err = cold.create(ctx); return err })
			if err == nil {
				err = cold.closeSession(ctx, id)
			}
			return d, err
		}},
		{"first_turn_server", func(ctx context.Context) (time.Duration, error) {
			// The first turn of a session that took the spare, once the
			// spare behind it is ready (nothing else starts meanwhile).
			var id string
			if err := afterSpare(func() (err error) { id, err = warm.create(ctx); return err }); err != nil {
				return 0, err
			}
			var out queryOut
			d, err := b.timeIt(func() (err error) {
				out, err = warm.query(ctx, "claude_chat_query", map[string]any{"sessionId": id, "prompt": "hi"})
				return err
			})
			if err == nil {
				b.cliMs, err = out.Metadata.DurationMs, wantHello("claude_chat_query", out.FinalText)
			}
			if cerr := warm.closeSession(ctx, id); err == nil {
				err = cerr
			}
			return d, err
		}},
		{"first_turn_cli", func(ctx context.Context) (time.Duration, error) {
			// The first turn of a CLI started and initialized just before.
			p, err := b.startCLI(ctx)
			if err != nil {
				return 0, err
			}
			defer p.Close()
			var r *claudeagent.ResultMessage
			d, err := b.timeIt(func() (err error) { r, err = cliTurn(ctx, p, "hi"); return err })
			if err == nil {
				b.cliMs, err = r.DurationMs, wantHello("the CLI", r.Result)
			}
			if err == nil {
				// Also how long the CLI takes to end after that turn (stdin
				// EOF, then its exit): what a one-shot query waits for when
				// it closes its session before answering.
				start := time.Now()
				if err = p.Close(); err == nil {
					err = p.Wait()
				}
				b.extra["cli_close"] = append(b.extra["cli_close"], time.Since(start))
			}
			return d, err
		}},
		{"bigtext_server", func(ctx context.Context) (time.Duration, error) {
			// A fresh session each round (taking the spare, untimed), so
			// that no round carries the earlier rounds' 2 MB answers.
			var id string
			if err := afterSpare(func() (err error) { id, err = warm.create(ctx); return err }); err != nil {
				return 0, err
			}
			var out queryOut
			d, err := b.timeIt(func() (err error) {
				out, err = warm.query(ctx, "claude_chat_query", map[string]any{"sessionId": id, "prompt": "BIGTEXT"})
				return err
			})
			if err == nil {
				b.cliMs, err = out.Metadata.DurationMs, b.checkCapped(out.FinalText)
			}
			if cerr := warm.closeSession(ctx, id); err == nil {
				err = cerr
			}
			return d, err
		}},
		{"bigtext_cli", func(ctx context.Context) (time.Duration, error) {
			p, err := b.startCLI(ctx)
			if err != nil {
				return 0, err
			}
			defer p.Close()
			var r *claudeagent.ResultMessage
			d, err := b.timeIt(func() (err error) { r, err = cliTurn(ctx, p, "BIGTEXT"); return err })
			if err == nil {
				b.cliMs = r.DurationMs
			}
			if err == nil && len(r.Result) < 2_000_000 {
				err = fmt.Errorf("BIGTEXT through the CLI: %d bytes, want 2 MB", len(r.Result))
			}
			return d, err
		}},
	}
	if b.c.only != "" {
		keep := strings.Split(b.c.only, ",")
		variants = slices.DeleteFunc(variants, func(v variant) bool { return !slices.Contains(keep, v.key) })
		if len(variants) == 0 {
			return fmt.Errorf("-only %s: no such figure", b.c.only)
		}
	}
	bigRounds := 0
	for round := 0; round <= b.c.rounds; round++ {
		if round == 0 {
			logf("warm-up round")
		} else {
			logf("round %d/%d", round, b.c.rounds)
		}
		// A fresh order each round (seeded, so that runs are alike): no
		// figure always follows the same other one, nor always comes first.
		order := rand.New(rand.NewPCG(1, uint64(round))).Perm(len(variants))
		if round == 1 {
			clear(b.extra) // the warm-up round's
		}
		for _, i := range order {
			v := variants[i]
			if err := ctx.Err(); err != nil {
				return err
			}
			b.cliMs = -1
			d, err := v.step(ctx)
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", round, v.key, err)
			}
			if v.key == "bigtext_server" {
				bigRounds++
			}
			if round > 0 {
				b.results[v.key] = append(b.results[v.key], d)
				first, n := b.apiLog.within(b.span)
				if n > 0 {
					b.toAPI[v.key] = append(b.toAPI[v.key], first.Sub(b.span[0]))
				}
				b.apiReqs[v.key] += n
				if b.cliMs >= 0 {
					b.outside[v.key] = append(b.outside[v.key], d-time.Duration(b.cliMs)*time.Millisecond)
				}
			}
		}
	}
	if rss, err := readStatus(warm.pid()); err == nil {
		b.notes = append(b.notes, fmt.Sprintf("The spares server after the rounds (one session and the spare live; %d 2 MB answers behind it, warm-up included): VmRSS %s, VmHWM %s.",
			bigRounds, mib(rss["VmRSS"]), mib(rss["VmHWM"])))
	}
	if err := warm.closeSession(ctx, chat); err != nil {
		return err
	}
	return nil
}

// checkCapped checks a BIGTEXT finalText: cut at --max-result-chars, with
// the marker naming the transcript.
func (b *bench) checkCapped(text string) error {
	if !strings.Contains(text, "truncated: showing") {
		return fmt.Errorf("BIGTEXT finalText of %d bytes has no truncation marker", len(text))
	}
	i := strings.Index(text, "\n\n[… truncated")
	if i > b.c.maxResult || i < b.c.maxResult-4 {
		return fmt.Errorf("BIGTEXT finalText cut at %d bytes, want %d (--max-result-chars)", i, b.c.maxResult)
	}
	b.bigInfo = fmt.Sprintf("finalText %d bytes: the first %d characters of the 2,000,000 and the marker %q",
		len(text), i, cut(text[i+2:], 60))
	return nil
}

// ---- memory ----

func readStatus(pid int) (map[string]int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || !strings.HasSuffix(v, " kB") {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(v, " kB")), 10, 64)
		if err == nil {
			out[k] = n * 1024
		}
	}
	return out, nil
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// openSessions creates sessions on s until it has n, each with one "hi"
// query, and returns their ids.
func openSessions(ctx context.Context, s *server, ids []string, n int) ([]string, error) {
	for len(ids) < n {
		id, err := s.create(ctx)
		if err != nil {
			return ids, err
		}
		ids = append(ids, id)
		out, err := s.query(ctx, "claude_chat_query", map[string]any{"sessionId": id, "prompt": "hi"})
		if err != nil {
			return ids, err
		}
		if err := wantHello("claude_chat_query", out.FinalText); err != nil {
			return ids, err
		}
	}
	return ids, nil
}

// measureRSS settles, then reads the server's VmRSS and VmHWM and lists
// its sessions to record how many are live.
func (b *bench) measureRSS(ctx context.Context, s *server, what string) (int64, error) {
	select {
	case <-time.After(rssSettle): // documented settle time
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	st, err := readStatus(s.pid())
	if err != nil {
		return 0, err
	}
	var list struct {
		Sessions []json.RawMessage `json:"sessions"`
		Live     int               `json:"liveProcesses"`
	}
	if err := s.call(ctx, "claude_session_list", map[string]any{}, &list); err != nil {
		return 0, err
	}
	b.rssRows = append(b.rssRows, [5]string{
		fmt.Sprintf("%s: %d open sessions, %d live processes", what, len(list.Sessions), list.Live),
		mib(st["VmRSS"]), mib(st["RssAnon"]), mib(st["RssFile"]), mib(st["VmHWM"]),
	})
	return st["VmRSS"], nil
}

func (b *bench) rss(ctx context.Context) error {
	logf("RSS with 10 sessions on the real CLI")
	rs, err := b.startServer(ctx, "rss-real", b.c.claude, nil, "--max-live", "4")
	if err != nil {
		return err
	}
	defer rs.stop()
	if err := rs.log.waitSpares(ctx, 1); err != nil {
		return err
	}
	if _, err := b.measureRSS(ctx, rs, "real CLI, just started (the one live process is the warm spare)"); err != nil {
		return err
	}
	ids, err := openSessions(ctx, rs, nil, 10)
	if err != nil {
		return err
	}
	rss10, err := b.measureRSS(ctx, rs, "real CLI")
	if err != nil {
		return err
	}
	b.rss10 = rss10
	for _, id := range ids {
		if err := rs.closeSession(ctx, id); err != nil {
			return err
		}
	}
	rs.stop()

	logf("RSS with 10 and %d sessions on the fake CLI", b.c.manySessions)
	streams, err := fakecli.StreamsDir()
	if err != nil {
		return err
	}
	fake, err := b.startServer(ctx, "rss-fake", b.c.fakeCLI, map[string]string{
		fakecli.EnvVar: "1", fakecli.EnvStreams: streams, fakecli.EnvSpeed: "1000000",
	}, "--max-live", "4", "--max-sessions", strconv.Itoa(max(256, b.c.manySessions)))
	if err != nil {
		return err
	}
	defer fake.stop()
	ids, err = openSessions(ctx, fake, nil, 10)
	if err != nil {
		return err
	}
	fake10, err := b.measureRSS(ctx, fake, "fake CLI")
	if err != nil {
		return err
	}
	start := time.Now()
	ids, err = openSessions(ctx, fake, ids, b.c.manySessions)
	if err != nil {
		return err
	}
	took := time.Since(start)
	fakeMany, err := b.measureRSS(ctx, fake, "fake CLI")
	if err != nil {
		return err
	}
	n := b.c.manySessions - 10
	b.notes = append(b.notes, fmt.Sprintf("Per extra (mostly dormant) session on the fake CLI: (%s − %s) / %d = %.1f KiB; creating and querying those %d sessions took %s (%.0f ms each; each create over --max-live makes the least recently used session dormant).",
		mib(fakeMany), mib(fake10), n, float64(fakeMany-fake10)/float64(n)/1024, n, took.Round(time.Millisecond), float64(took.Milliseconds())/float64(n)))
	// The server stops the rest at shutdown (fake.stop); closing 200
	// sessions one by one adds nothing to the figures.
	_ = ids
	return nil
}

// checkLeftovers reports processes that still carry this run's API URL in
// their environment (the servers, the CLIs and everything they started).
func (b *bench) checkLeftovers() error {
	if runtime.GOOS != "linux" {
		return nil
	}
	needle := []byte("ANTHROPIC_BASE_URL=" + b.api.URL() + "\x00")
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(200 * time.Millisecond) // polling /proc: nothing to wait on
	defer tick.Stop()
	for {
		var left []string
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == os.Getpid() {
				continue
			}
			env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
			if err != nil || !bytes.Contains(env, needle) {
				continue
			}
			cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			left = append(left, fmt.Sprintf("%d %s", pid, cut(string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})), 100)))
		}
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes left behind:\n%s", strings.Join(left, "\n"))
		}
		<-tick.C
	}
}

// ---- the report ----

func pct(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s))*p+0.999999) - 1
	return s[max(0, min(i, len(s)-1))]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

func (b *bench) report(w io.Writer, version string) {
	p50 := func(k string) time.Duration { return pct(b.results[k], 0.5) }
	fmt.Fprintf(w, "### Real CLI %s, %d rounds (p50 / p90, nearest rank)\n\n", version, b.c.rounds)
	fmt.Fprintln(w, "| figure | p50 | p90 |")
	fmt.Fprintln(w, "| --- | ---: | ---: |")
	names := []struct{ key, what string }{
		{"chat_server", "warm `claude_chat_query` \"hi\" through the server"},
		{"chat_cli", "the same turn sent to the CLI through claudeagent.Process"},
		{"direct_spare", "`claude_direct_query` \"hi\" with a matching warm spare"},
		{"direct_spare_norefill", "`claude_direct_query` \"hi\" with a spare, no new spare starting meanwhile (`--max-live 2`, kept full)"},
		{"direct_nospare", "`claude_direct_query` \"hi\" without a spare (`--warm-spares 0`)"},
		{"cold_p", "cold `claude -p \"hi\"`"},
		{"first_turn_server", "first `claude_chat_query` \"hi\" of a session that took the spare (spare behind it ready)"},
		{"first_turn_cli", "first turn \"hi\" of a CLI just started and initialized through claudeagent.Process"},
		{"create_spare", "`claude_session_create` with a spare"},
		{"create_nospare", "`claude_session_create` without a spare (`--warm-spares 0`)"},
		{"bigtext_server", "2 MB answer (BIGTEXT) through the server, warm session"},
		{"bigtext_cli", "the same 2 MB turn through claudeagent.Process"},
	}
	for _, n := range names {
		if len(b.results[n.key]) == 0 {
			continue
		}
		fmt.Fprintf(w, "| %s (`%s`) | %s | %s |\n", n.what, n.key, ms(p50(n.key)), ms(pct(b.results[n.key], 0.9)))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| ratio of p50s | value | target | met |")
	fmt.Fprintln(w, "| --- | ---: | ---: | --- |")
	ratio := func(what, a, bk string, target float64) {
		if len(b.results[a]) == 0 || len(b.results[bk]) == 0 {
			return
		}
		r := float64(p50(a)) / float64(p50(bk))
		t, met := "—", ""
		if target > 0 {
			t = fmt.Sprintf("≤ %.2f", target)
			met = "yes"
			if r > target {
				met = "**no**"
			}
		}
		fmt.Fprintf(w, "| %s | %.3f | %s | %s |\n", what, r, t, met)
	}
	ratio("warm chat query: server / CLI direct", "chat_server", "chat_cli", 1.05)
	ratio("direct query with a spare / cold `claude -p`", "direct_spare", "cold_p", 0.1)
	ratio("direct query without a spare / cold `claude -p`", "direct_nospare", "cold_p", 0)
	ratio("first turn: session from a spare / fresh CLI", "first_turn_server", "first_turn_cli", 0)
	ratio("direct query with a spare / first turn of a fresh CLI", "direct_spare", "first_turn_cli", 0)
	ratio("direct query with a spare: refill starting meanwhile / not", "direct_spare", "direct_spare_norefill", 0)
	ratio("create with a spare / create without", "create_spare", "create_nospare", 0)
	ratio("2 MB answer: server / CLI direct", "bigtext_server", "bigtext_cli", 0)
	if len(b.results["create_spare"]) > 0 {
		cs := p50("create_spare")
		met := "yes"
		if cs > 50*time.Millisecond {
			met = "**no**"
		}
		fmt.Fprintf(w, "\n`claude_session_create` with a spare: p50 %s, target ≤ 50 ms: %s.\n", ms(cs), met)
	}
	if c := b.extra["cli_close"]; len(c) > 0 {
		fmt.Fprintf(w, "\nClosing a CLI after its first turn (claudeagent.Process.Close, then Wait; measured after `first_turn_cli`): p50 %s, p90 %s. A one-shot query answers before this: its CLI is stopped in the background.\n",
			ms(pct(c, 0.5)), ms(pct(c, 0.9)))
	}
	if b.bigInfo != "" {
		fmt.Fprintf(w, "\n2 MB answer through the server: %s.\n", b.bigInfo)
	}
	if len(b.rssRows) > 0 {
		fmt.Fprintln(w, "\n### Server RSS (VmRSS after a 2 s settle; --max-live 4)")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| setting | VmRSS | RssAnon | RssFile | VmHWM |")
		fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: |")
		for _, r := range b.rssRows {
			fmt.Fprintf(w, "| %s |\n", strings.Join(r[:], " | "))
		}
		met := "yes"
		if b.rss10 > 15<<20 {
			met = "**no**"
		}
		fmt.Fprintf(w, "\nRSS with 10 sessions on the real CLI: %s, target ≤ 15 MiB: %s.\n", mib(b.rss10), met)
	}
	if len(b.notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range b.notes {
			fmt.Fprintf(w, "- %s\n", n)
		}
	}
	fmt.Fprintln(w, "\nWhere the time goes: from the start of the timed part to the first request at the fake API, and the rest (the API's reply, the CLI's handling of it, and what follows):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| figure | to the API, p50 | rest, p50 of totals − p50 to the API | API requests per run | outside the CLI's own duration_ms, p50 |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: |")
	for _, n := range names {
		if len(b.toAPI[n.key]) == 0 {
			continue
		}
		to := pct(b.toAPI[n.key], 0.5)
		out := "—"
		if len(b.outside[n.key]) > 0 {
			out = ms(pct(b.outside[n.key], 0.5))
		}
		fmt.Fprintf(w, "| `%s` | %s | %s | %.1f | %s |\n", n.key, ms(to), ms(p50(n.key)-to), float64(b.apiReqs[n.key])/float64(len(b.results[n.key])), out)
	}
	fmt.Fprintln(w, "\nRaw samples (ms, in round order):")
	fmt.Fprintln(w)
	for _, n := range names {
		var s []string
		for _, d := range b.results[n.key] {
			s = append(s, strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 1, 64))
		}
		if len(s) > 0 {
			fmt.Fprintf(w, "- %s: %s\n", n.key, strings.Join(s, " "))
		}
	}
}

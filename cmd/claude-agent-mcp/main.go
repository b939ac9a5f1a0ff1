// Command claude-agent-mcp is an MCP server that runs Claude Code sessions
// as sub-agents, over stdio or, with --http, streamable HTTP for teams.
// stdout carries only MCP JSON-RPC; logs go to stderr.
//
// It owns the process: flags and their environment twins, logging, the
// transports, signals, the check of the CLI at start and the watchdog. It
// holds no session or MCP logic of its own: it builds the configurations
// of sessions, mcptools and agentfile from the flags and wires them.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/lmittmann/tint"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/term"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent/ceiling"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/audit"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/stdio"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/policy"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store/backend"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store/sqlite"
)

// Stamped by goreleaser.
var (
	version = ""
	commit  = ""
	date    = ""
)

// DepthEnv carries the nesting depth to child sessions.
const DepthEnv = "CLAUDE_SUBAGENT_DEPTH"

func main() {
	ceiling.Init() // as the wrapper that starts a CLI under its ceiling, never returns
	tuneHeap()
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// commands are the subcommands, by the first argument: each is given the
// arguments after it. --help lists them with their verbs (subcommands).
// The binary's internal first arguments (watchdogArg, the ceiling's
// wrapper) begin with "__": they are not commands for a person.
var commands = map[string]func(args []string, stdin io.Reader, stdout, stderr io.Writer) int{
	storeCommand: runStore,
}

// first is args' first argument, or "".
func first(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

// run is the program: exit 0 after a clean stop, 2 for a bad flag (one
// line naming it), 1 when serving failed.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 2 && args[0] == watchdogArg {
		return runWatchdog(args[1], stdin)
	}
	if cmd, ok := commands[first(args)]; ok {
		return cmd(args[1:], stdin, stdout, stderr)
	}
	cfg, fs, err := parseFlags(args)
	if errors.Is(err, flag.ErrHelp) {
		usage(fs, stdout)
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "claude-agent-mcp:", err)
		return 2
	}
	if cfg.showVersion {
		fmt.Fprintln(stdout, "claude-agent-mcp", versionString())
		return 0
	}
	if cfg.printSetup {
		if err := printSetup(stdout, stderr, args); err != nil {
			fmt.Fprintln(stderr, "claude-agent-mcp:", err)
			return 1
		}
		return 0
	}
	st, err := cfg.check()
	if err != nil {
		fmt.Fprintln(stderr, "claude-agent-mcp:", err)
		return 2
	}
	logger, _ := newLogger(cfg.logLevel, stderr) // checked above
	if err := serve(cfg, st, stdin, stdout, logger); err != nil {
		logger.Error("server stopped", "err", err)
		return 1
	}
	return 0
}

// openStore gives the sessions their store (--store; none with
// --persist=false), importing the registry file of --state-file into an
// empty one; closeStore closes it once the sessions are stopped.
func openStore(c *config, mcfg *sessions.Config, logger *slog.Logger) (closeStore func(), err error) {
	if !c.persist {
		return func() {}, nil
	}
	ctx := context.Background()
	st, where, err := openStoreAt(ctx, c.store, c.storeRecover, logger)
	if err != nil && c.store == "" && !errors.Is(err, sqlite.ErrDamaged) && c.storeRecover == "" {
		// The default place (under the user's state directory) is not
		// the operator's choice: serve, in memory, and say so in every
		// create's result (persisted: false).
		logger.Error("the session store cannot be opened: sessions are kept in memory only and do not survive a restart (give --store a path that can be written, or --persist=false to keep them in memory on purpose)", "err", err)
		mcfg.StoreFailed = true
		return func() {}, nil
	}
	if err != nil {
		return nil, err
	}
	mcfg.Store = st
	logger.Info("sessions are kept in the session store and survive a restart (--persist=false turns this off)", "store", where)
	if err := migrateRegistry(ctx, c, st, logger); err != nil {
		logger.Error("importing the old session registry into the session store", "err", err)
	}
	return func() { st.Close() }, nil
}

// openStoreAt opens the store target names (see backend.Open); where
// names it for the log.
func openStoreAt(ctx context.Context, target, recover string, logger *slog.Logger) (st store.Store, where string, err error) {
	where = "postgres"
	if !backend.IsURL(target) {
		if target == "" {
			if target, err = sqlite.DefaultPath(); err != nil {
				return nil, "", err
			}
		}
		if target, err = filepath.Abs(target); err != nil {
			return nil, "", err
		}
		where = target
	}
	if st, err = backend.Open(ctx, target, recover, logger); err != nil {
		return nil, "", fmt.Errorf("opening --store %s: %w", where, err)
	}
	return st, where, nil
}

// migrateRegistry imports the registry file (--state-file, or its default
// path) into st when st holds no session and the file exists: moving
// from sessions.json happens once, at the first start.
func migrateRegistry(ctx context.Context, c *config, st store.Store, logger *slog.Logger) error {
	path, err := c.statePath()
	if err != nil || path == "" {
		return err
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if n, err := st.Count(ctx, ""); err != nil || n > 0 {
		return err
	}
	stats, err := st.Import(ctx, f)
	if err != nil {
		return fmt.Errorf("importing %s: %w", path, err)
	}
	if stats.Sessions+stats.Tombstones+stats.Sums > 0 {
		logger.Info("imported the old session registry into the session store (once: the file is no longer read or written)", "path", path,
			"sessions", stats.Sessions, "tombstones", stats.Tombstones)
	}
	return nil
}

// openAudit opens --audit-log (nil without it); closeFile closes its file.
func openAudit(c *config, logger *slog.Logger) (l *audit.Log, closeFile func(), err error) {
	if c.auditLog == "" {
		return nil, func() {}, nil
	}
	f, err := os.OpenFile(c.auditLog, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("opening --audit-log: %w", err)
	}
	return audit.New(f, c.auditLog, audit.Options{Prompts: c.auditPrompts, Log: logger}), func() { f.Close() }, nil
}

func versionString() string {
	v := version
	if v == "" {
		v = "(devel)"
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
			v = bi.Main.Version
		}
	}
	if commit != "" {
		v += " (" + commit
		if date != "" {
			v += ", " + date
		}
		v += ")"
	}
	return v
}

func newLogger(level string, w io.Writer) (*slog.Logger, error) {
	var l slog.Level
	switch strings.ToLower(level) {
	case "off":
		return slog.New(slog.DiscardHandler), nil
	case "debug":
		l = slog.LevelDebug
	case "info":
		l = slog.LevelInfo
	case "warn", "warning":
		l = slog.LevelWarn
	case "error":
		l = slog.LevelError
	default:
		return nil, fmt.Errorf("invalid --log-level %q: use debug, info, warn, error or off", level)
	}
	noColor := os.Getenv("NO_COLOR") != ""
	if f, ok := w.(*os.File); !ok || !term.IsTerminal(int(f.Fd())) {
		noColor = true
	}
	return slog.New(tint.NewTextHandler(w, &tint.Options{Level: l, NoColor: noColor, TimeFormat: time.TimeOnly})), nil
}

// logEnforcement says at start what enforces the policy: the gate, and
// the kernel's ceilings or why there are none.
func logEnforcement(st *settings, logger *slog.Logger) {
	if policy.HarmlessGate() {
		logger.Error("this is a test build whose policy gate checks nothing (-tags harmlessgate): never serve it")
	}
	if st.noKernel != nil {
		logger.Warn("the kernel cannot enforce the sessions' ceilings: sessions run with the policy gate alone", "reason", st.noKernel)
	} else {
		logger.Debug("the kernel enforces the sessions' ceilings", "landlock_abi", st.kernel)
	}
	if st.noJail != nil {
		logger.Warn("the kernel cannot jail the sessions' processes: each sees every process of this machine in /proc (their command lines) and keeps the capabilities of the server's user", "reason", st.noJail)
	} else {
		logger.Debug("each session's process runs in a jail of its own (user, mount and PID namespaces, no capabilities)")
	}
}

func serve(c *config, st *settings, stdin io.Reader, stdout io.Writer, logger *slog.Logger) error {
	depth, _ := strconv.Atoi(os.Getenv(DepthEnv))
	marker := uuid.NewString()
	defer startWatchdog(marker, logger)()
	mcfg := st.sessions
	mcfg.Depth, mcfg.Logger = depth, logger
	mcfg.Env = map[string]string{DepthEnv: strconv.Itoa(depth + 1), ServerMarkerEnv: marker}
	maps.Copy(mcfg.Env, st.passEnv)
	stopTracing, err := startTracing(c, &mcfg, logger)
	if err != nil {
		return err
	}
	defer stopTracing() // the last of the deferred: after the sessions' shutdown and their last spans
	heapTuning.follow(&mcfg)
	logEnforcement(st, logger)
	alerter := newNotifier(c.notify, logger)
	if alerter != nil {
		mcfg.OnAlert = alerter.onAlert
		defer alerter.close() // after the sessions' shutdown (deferred later)
	}
	closeStore, err := openStore(c, &mcfg, logger)
	if err != nil {
		return err
	}
	defer closeStore()                              // after the sessions' shutdown (deferred later)
	om, err := newOperatorMetrics(c, &mcfg, logger) // its hooks in mcfg
	if err != nil {
		return err
	}
	mgr := sessions.NewManager(mcfg)
	defer om.serve(mgr)()
	opts := st.tools
	opts.Logger = logger
	var closeAudit func()
	if opts.Audit, closeAudit, err = openAudit(c, logger); err != nil {
		return err
	}
	defer closeAudit()
	opts.Agents = newAgents(st.agents, logger) // nil without agent sources
	defer opts.Agents.Close()
	dash, stopUI, err := startUI(c, mgr, opts.Audit, logger)
	if err != nil {
		return err
	}
	defer stopUI()
	opts.Dashboard = dash
	if alerter != nil && dash != nil {
		alerter.dash.Store(dash)
	}
	srv := mcptools.NewServer(mgr, opts)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	survivePipeClose()
	// The CLI is checked in the background: serving starts at once. The
	// check ends (its CLI killed) when serving does, before the sessions
	// are shut down.
	checkCtx, endCheck := context.WithCancel(ctx)
	checked := make(chan struct{})
	go func() {
		defer close(checked)
		checkCLI(checkCtx, mgr, mcfg.Env, mcfg.PerUserConfigDir, logger)
	}()
	defer func() {
		endCheck()
		<-checked
	}()
	if c.http != "" {
		return serveHTTP(ctx, c, st, srv, mgr, opts.Audit, dash, om, logger)
	}
	logger.Info("claude-agent-mcp serving on stdio", "version", versionString(), "depth", depth, "pid", os.Getpid())
	transport := &stdio.Transport{Reader: stdin, Writer: stdout, MaxFrameBytes: c.maxFrameBytes, Logger: logger}
	runErr := make(chan error, 1)
	go func() {
		runErr <- srv.Run(ctx, transport)
	}()
	err = awaitStop(ctx, runErr, transport.InputClosed(), func() {
		endCheck() // not stop: Run, cancelled, would write no more answers
		start := time.Now()
		mgr.Shutdown()
		logger.Info("all sessions stopped", "took", time.Since(start).Round(time.Millisecond))
	}, 3*time.Second, logger)
	return stdioEnd(err)
}

// survivePipeClose keeps the server alive when stdout's reader is gone (a
// client that has gone has closed stdout too): writing an answer there
// fails (EPIPE) rather than killing the server by SIGPIPE before it has
// stopped its sessions. Notify makes it so (Ignore would not do: the CLI's
// processes would inherit it).
func survivePipeClose() {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
}

// stdioEnd is the end of serving on stdio as serve returns it: the client's
// end of the pipes (EOF, EPIPE: it has gone) and a stop are clean.
func stdioEnd(err error) error {
	for _, clean := range []error{context.Canceled, io.EOF, mcp.ErrConnectionClosed, syscall.EPIPE} {
		if errors.Is(err, clean) {
			return nil
		}
	}
	return err
}

// awaitStop waits for the end of serving on stdio: Run returning, stdin
// closing or a signal (ctx). Shutdown (stopping the sessions: their running
// turns are interrupted and the calls return) runs as soon as any of them
// happens; then Run's error is awaited for at most grace — unless Run had
// already returned, whose error is read exactly once. At stdin's end Run
// is not cancelled: the transport tells the SDK of the end only once every
// request read before it is answered (stdio.Transport), and Run
// returns then; a signal cancels Run, which answers nothing more.
func awaitStop(ctx context.Context, runErr <-chan error, inputClosed <-chan struct{}, shutdown func(), grace time.Duration, logger *slog.Logger) error {
	var err error
	ran := false
	select {
	case err = <-runErr:
		ran = true
	case <-inputClosed:
		logger.Info("stdin closed; stopping")
	case <-ctx.Done():
		logger.Info("signal received; stopping")
	}
	shutdown()
	if ran {
		return err
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case err = <-runErr:
	case <-t.C:
		logger.Warn("MCP server did not stop in time; exiting")
	}
	return err
}

// checkCLI finds the claude CLI once at start and logs its version, with a
// warning when it is missing, older than the oldest version tested, or (if
// login) not logged in. It says nothing once ctx has ended (the server
// stops).
func checkCLI(ctx context.Context, mgr *sessions.Manager, env map[string]string, perUser string, logger *slog.Logger) {
	login := true
	vctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	path, v, err := mgr.CLI(vctx)
	cancel()
	switch {
	case ctx.Err() != nil:
		return
	case err != nil:
		logger.Warn("the claude CLI is not usable; sessions cannot start until it is: install it, or name it with --claude-path ("+envName("claude-path")+")", "err", err)
		return
	case claudeagent.CompareVersions(v, claudeagent.OldestTested) < 0:
		logger.Warn("the claude CLI is older than the oldest version this server is tested with; update it", "path", path, "version", v,
			"oldest_tested", claudeagent.OldestTested, "update", "npm install -g @anthropic-ai/claude-code")
		login = false // `auth status` is not known before OldestTested
	default:
		logger.Info("claude CLI", "path", path, "version", v)
	}
	mgr.ServerStarted() // the first warm spares
	if login {
		checkLogin(ctx, path, env, perUser, logger)
	}
}

// checkLogin warns when the CLI, with the sessions' environment, is not
// logged in: every query would fail. `claude auth status` tells without an
// API call (see claudeagent.CLIAuthStatus).
// With a config directory per user (perUser), the server's own login in its
// config directory serves none of them: the check runs with an empty one,
// and a miss says what serves the users.
func checkLogin(ctx context.Context, path string, env map[string]string, perUser string, logger *slog.Logger) {
	if perUser != "" {
		empty, err := os.MkdirTemp("", "claude-agent-mcp-login-")
		if err != nil {
			return
		}
		defer os.RemoveAll(empty)
		env = maps.Clone(env)
		if env == nil {
			env = map[string]string{}
		}
		env["CLAUDE_CONFIG_DIR"] = empty
	}
	st, err := claudeagent.CLIAuthStatus(ctx, path, env)
	switch {
	case ctx.Err() != nil:
	case err != nil:
		logger.Debug("could not tell whether the claude CLI is logged in", "err", err)
	case !st.LoggedIn && perUser != "":
		logger.Warn("each user's sessions have a CLI config directory of their own (--per-user-config-dir), where the server's own login is not, and the server's environment logs none in: give the server ANTHROPIC_API_KEY, log each user in (CLAUDE_CONFIG_DIR="+filepath.Join(perUser, "<user>")+" claude auth login), or share the CLI's own with --share-config-dir", "path", path)
	case !st.LoggedIn:
		logger.Warn("the claude CLI is not logged in; every query fails (\"Not logged in\") until it is: run claude auth login (or claude, then /login) as the user the server runs as, or give the server ANTHROPIC_API_KEY", "path", path)
	default:
		logger.Debug("claude CLI login", "method", st.AuthMethod, "provider", st.APIProvider)
	}
}

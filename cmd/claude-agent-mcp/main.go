// Command claude-agent-mcp is an MCP server (stdio) that runs Claude Code
// sessions as sub-agents. stdout carries only MCP JSON-RPC; logs go to
// stderr.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
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

	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// Stamped by goreleaser.
var (
	version = ""
	commit  = ""
	date    = ""
)

// envPrefix prefixes the environment twin of every flag.
const envPrefix = "CLAUDE_AGENT_MCP_"

// DepthEnv carries the nesting depth to child sessions.
const DepthEnv = "CLAUDE_AGENT_MCP_DEPTH"

type config struct {
	claudePath        string
	logLevel          string
	maxSessions       int
	maxLive           int
	maxQueue          int
	idleTimeout       time.Duration
	queryTimeout      time.Duration
	permissionPolicy  string
	permissionTimeout time.Duration
	allowedModes      string
	allowedRoots      string
	maxDepth          int
	profiles          string
	stateFile         string
	maxResultChars    int
	defaultWait       time.Duration
	heartbeat         time.Duration
	maxFrameBytes     int
	maxPromptBytes    int
	sessionMCP        bool
	tasks             bool
	taskAfter         time.Duration
	taskTTL           time.Duration
	toolsCeiling      string
	persist           bool
	showVersion       bool
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 2 && args[0] == watchdogArg {
		return runWatchdog(args[1], stdin)
	}
	cfg, _, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
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
	logger, err := newLogger(cfg.logLevel, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "claude-agent-mcp:", err)
		return 2
	}
	if err := serve(cfg, stdin, stdout, logger); err != nil {
		logger.Error("server stopped", "err", err)
		return 1
	}
	return 0
}

func parseFlags(args []string, stderr io.Writer) (*config, *flag.FlagSet, error) {
	c := &config{}
	fs := flag.NewFlagSet("claude-agent-mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.claudePath, "claude-path", "", "path to the claude CLI (default: claude on PATH)")
	fs.StringVar(&c.logLevel, "log-level", "info", "stderr log level: debug, info, warn, error or off")
	fs.IntVar(&c.maxSessions, "max-sessions", 64, "maximum open sessions, live or dormant")
	fs.IntVar(&c.maxLive, "max-live", 4, "maximum live claude processes (~300 MB each); more make the least recently used idle session dormant")
	fs.IntVar(&c.maxQueue, "max-queue", 32, "queries that may wait for a live process when --max-live are busy; beyond it they are refused")
	fs.DurationVar(&c.idleTimeout, "idle-timeout", 15*time.Minute, "stop an idle session's process after this long (it resumes on the next query); 0 never")
	fs.DurationVar(&c.queryTimeout, "query-timeout", 0, "interrupt a query that runs longer than this; 0 means no limit")
	fs.StringVar(&c.permissionPolicy, "permission-policy", "deny", "answer to permission questions the caller cannot or does not answer: deny or allow")
	fs.DurationVar(&c.permissionTimeout, "permission-timeout", 120*time.Second, "how long to wait for the caller to answer a permission question")
	fs.StringVar(&c.allowedModes, "allowed-permission-modes", "", "comma-separated permission modes sessions may use (default: all)")
	fs.StringVar(&c.allowedRoots, "allowed-roots", "", "directories (separated by "+string(os.PathListSeparator)+") that must contain every cwd and addDir (default: anywhere)")
	fs.BoolVar(&c.sessionMCP, "allow-session-mcp-servers", true, "let sessions start the MCP servers their mcpServers entries name (commands the server runs)")
	fs.StringVar(&c.toolsCeiling, "allowed-tools-ceiling", "", "comma-separated built-in tools sessions may have, e.g. Read,Grep,Glob,Edit (default: no ceiling); sessions that name none get these")
	fs.IntVar(&c.maxDepth, "max-depth", 2, "refuse to create sessions when nested this deep in claude-agent-mcp sessions")
	fs.StringVar(&c.profiles, "profiles", "", "JSON file of backend profiles (see README)")
	fs.StringVar(&c.stateFile, "state-file", "", "session registry file (default: $XDG_STATE_HOME/claude-agent-mcp/sessions.json)")
	fs.IntVar(&c.maxResultChars, "max-result-chars", 60000, "cut a query's final text beyond this many characters (naming the transcript that holds all of it); -1 never")
	fs.DurationVar(&c.defaultWait, "default-wait", 0, "how long a query call waits before returning status running when it gives no waitSeconds (e.g. 100s for Claude Code, below its 120 s auto-background); 0 waits for the end")
	fs.DurationVar(&c.heartbeat, "heartbeat-interval", 15*time.Second, "how often a running query sends a progress notification when the call has a progress token")
	fs.IntVar(&c.maxFrameBytes, "max-frame-bytes", mcptools.DefaultMaxFrameBytes, "largest JSON-RPC message accepted on stdin, in bytes; a longer one is refused with -32600 and serving goes on")
	fs.IntVar(&c.maxPromptBytes, "max-prompt-bytes", mcptools.DefaultMaxPromptBytes, "largest prompt a query accepts, in bytes")
	fs.BoolVar(&c.tasks, "tasks", true, "offer MCP tasks (extension io.modelcontextprotocol/tasks, protocol 2026-07-28): a long query from a client that takes them is answered with a task at once")
	fs.DurationVar(&c.taskAfter, "task-after", mcptools.DefaultTaskAfter, "how long a query call waits for its turn to end before it answers with a task")
	fs.DurationVar(&c.taskTTL, "task-ttl", mcptools.DefaultTaskTTL, "how long a finished task's result is kept for tasks/get (from the task's creation)")
	fs.BoolVar(&c.persist, "persist", true, "keep sessions in the registry so they survive a restart")
	fs.BoolVar(&c.showVersion, "version", false, "print the version and exit")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: claude-agent-mcp [flags]\n\nAn MCP server (stdio) that runs Claude Code sessions as sub-agents.\nEvery flag can also be set with the environment variable %s<NAME> (e.g. %sMAX_LIVE=2).\n\nFlags:\n", envPrefix, envPrefix)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, fs, err
	}
	if fs.NArg() > 0 {
		return nil, fs, fmt.Errorf("unexpected arguments %q (see --help)", fs.Args())
	}
	if err := applyEnv(fs); err != nil {
		return nil, fs, err
	}
	return c, fs, nil
}

// applyEnv sets every flag not given on the command line from its
// environment twin.
func applyEnv(fs *flag.FlagSet) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if given[f.Name] {
			return
		}
		name := envName(f.Name)
		if v, ok := os.LookupEnv(name); ok {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("invalid %s=%q: %v", name, v, err))
			}
		}
	})
	return errors.Join(errs...)
}

func envName(flagName string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
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
		return nil, fmt.Errorf("invalid log level %q: use debug, info, warn, error or off", level)
	}
	noColor := os.Getenv("NO_COLOR") != ""
	if f, ok := w.(*os.File); !ok || !term.IsTerminal(int(f.Fd())) {
		noColor = true
	}
	return slog.New(tint.NewTextHandler(w, &tint.Options{Level: l, NoColor: noColor, TimeFormat: time.TimeOnly})), nil
}

func serve(c *config, stdin io.Reader, stdout io.Writer, logger *slog.Logger) error {
	depth, _ := strconv.Atoi(os.Getenv(DepthEnv))
	marker := uuid.NewString()
	defer startWatchdog(marker, logger)()
	mcfg := sessions.Config{
		CLIPath:           c.claudePath,
		MaxSessions:       c.maxSessions,
		MaxLive:           c.maxLive,
		MaxQueue:          c.maxQueue,
		IdleTimeout:       c.idleTimeout,
		QueryTimeout:      c.queryTimeout,
		PermissionTimeout: c.permissionTimeout,
		Depth:             depth,
		MaxDepth:          c.maxDepth,
		Env:               map[string]string{DepthEnv: strconv.Itoa(depth + 1), ServerMarkerEnv: marker},
		Logger:            logger,
	}
	switch c.permissionPolicy {
	case "deny", "allow":
		mcfg.PermissionPolicy = c.permissionPolicy
	default:
		return fmt.Errorf("invalid --permission-policy %q: use deny or allow", c.permissionPolicy)
	}
	if c.allowedModes != "" {
		for _, m := range strings.Split(c.allowedModes, ",") {
			m = strings.TrimSpace(m)
			if err := sessions.ValidatePermissionMode(m); err != nil || m == "" {
				return fmt.Errorf("invalid --allowed-permission-modes entry %q: use %s", m, strings.Join(sessions.PermissionModes, ", "))
			}
			mcfg.AllowedModes = append(mcfg.AllowedModes, m)
		}
	}
	if c.allowedRoots != "" {
		for _, r := range filepath.SplitList(c.allowedRoots) {
			abs, err := sessions.ValidateDir("--allowed-roots entry", r)
			if err != nil {
				return err
			}
			mcfg.AllowedRoots = append(mcfg.AllowedRoots, abs)
		}
	}
	mcfg.NoSessionMCPServers = !c.sessionMCP
	if c.toolsCeiling != "" {
		mcfg.ToolsCeiling = []string{}
		for _, t := range strings.Split(c.toolsCeiling, ",") {
			if t = strings.TrimSpace(t); t != "" {
				mcfg.ToolsCeiling = append(mcfg.ToolsCeiling, t)
			}
		}
		if err := sessions.ValidateToolNames("--allowed-tools-ceiling", mcfg.ToolsCeiling); err != nil {
			return err
		}
	}
	profiles, err := loadProfiles(c.profiles)
	if err != nil {
		return err
	}
	mcfg.ProfileEnv = func(name string) (map[string]string, error) {
		env, ok := profiles[name]
		if !ok {
			return nil, fmt.Errorf("unknown profile %q: this server has %s", name, profileNames(profiles))
		}
		return env, nil
	}
	if c.persist {
		path := c.stateFile
		if path == "" {
			if path, err = sessions.DefaultRegistryPath(); err != nil {
				return err
			}
		}
		mcfg.Registry = sessions.NewRegistry(path, logger)
	}
	mgr := sessions.NewManager(mcfg)
	srv := mcptools.NewServer(mgr, mcptools.Options{Version: versionString(), Logger: logger, MaxResultChars: c.maxResultChars, DefaultWait: c.defaultWait, HeartbeatInterval: c.heartbeat, MaxPromptBytes: c.maxPromptBytes,
		NoTasks: !c.tasks, TaskAfter: c.taskAfter, TaskTTL: c.taskTTL})

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger.Info("claude-agent-mcp serving on stdio", "version", versionString(), "depth", depth, "pid", os.Getpid())
	transport := &mcptools.StdioTransport{Reader: stdin, Writer: stdout, MaxFrameBytes: c.maxFrameBytes, Logger: logger}
	runErr := make(chan error, 1)
	go func() {
		runErr <- srv.Run(ctx, transport)
	}()
	// The SDK finishes in-flight calls before Run returns, so stop the
	// sessions as soon as stdin ends or a signal arrives: their running
	// turns are interrupted and the calls return.
	select {
	case err = <-runErr:
	case <-transport.InputClosed():
		logger.Info("stdin closed; stopping")
	case <-ctx.Done():
		logger.Info("signal received; stopping")
	}
	stop()
	start := time.Now()
	mgr.Shutdown()
	logger.Info("all sessions stopped", "took", time.Since(start).Round(time.Millisecond))
	select {
	case err = <-runErr:
	case <-time.After(3 * time.Second):
		logger.Warn("MCP server did not stop in time; exiting")
	}
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) && !errors.Is(err, mcp.ErrConnectionClosed) {
		return err
	}
	return nil
}

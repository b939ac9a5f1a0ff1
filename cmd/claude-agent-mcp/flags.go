package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent/agentfile"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// envPrefix prefixes the environment twin of every flag.
const envPrefix = "CLAUDE_AGENT_MCP_"

// config is the command line, with the environment twins applied.
type config struct {
	claudePath        string
	logLevel          string
	maxSessions       int
	maxLive           int
	maxQueue          int
	warmSpares        int
	idleTimeout       time.Duration
	queryTimeout      time.Duration
	permissionPolicy  string
	permissionTimeout time.Duration
	allowedModes      string
	allowedRoots      string
	sessionMCP        bool
	toolsCeiling      string
	maxDepth          int
	profiles          string
	stateFile         string
	persist           bool
	maxResultChars    int
	defaultWait       time.Duration
	heartbeat         time.Duration
	maxFrameBytes     int
	maxPromptBytes    int
	sessionBudget     float64
	totalBudget       float64
	tasks             bool
	taskAfter         time.Duration
	taskTTL           time.Duration
	showVersion       bool
	http              string
	tokensFile        string
	publicURL         string
	httpAllow         string
	userMaxSessions   int
	userMaxLive       int
	userBudget        float64
	perUserConfigDir  string
	auditLog          string
	auditPrompts      bool
	agentSources      string
	agentsDir         string
	agentsFile        string
	maxAgentTools     int
}

func newFlagSet(c *config) *flag.FlagSet {
	fs := flag.NewFlagSet("claude-agent-mcp", flag.ContinueOnError)
	fs.StringVar(&c.claudePath, "claude-path", "", "path to the claude CLI (default: claude on PATH)")
	fs.StringVar(&c.logLevel, "log-level", "info", "stderr log level: debug, info, warn, error or off")
	fs.IntVar(&c.maxSessions, "max-sessions", 64, "maximum open sessions, live or dormant")
	fs.IntVar(&c.maxLive, "max-live", 4, "maximum live claude processes (~300 MB each); more make the least recently used idle session dormant")
	fs.IntVar(&c.maxQueue, "max-queue", 32, "queries that may wait for a live process when --max-live are busy; beyond it they are refused")
	fs.IntVar(&c.warmSpares, "warm-spares", 1, "ready claude processes kept for the option sets of the latest creates and one-shot queries (they count toward --max-live and give way to sessions); 0 none")
	fs.DurationVar(&c.idleTimeout, "idle-timeout", 15*time.Minute, "stop an idle session's process after this long (it resumes on the next query); 0 never")
	fs.DurationVar(&c.queryTimeout, "query-timeout", 0, "interrupt a query that runs longer than this; 0 means no limit")
	fs.StringVar(&c.permissionPolicy, "permission-policy", "deny", "answer to permission questions the caller cannot or does not answer: deny or allow")
	fs.DurationVar(&c.permissionTimeout, "permission-timeout", 120*time.Second, "how long to wait for the caller to answer a permission question")
	fs.StringVar(&c.allowedModes, "allowed-permission-modes", "", "comma-separated permission modes sessions may use (default: all)")
	fs.StringVar(&c.allowedRoots, "allowed-roots", "", "directories (separated by "+string(os.PathListSeparator)+") that must contain every cwd and addDir (default: anywhere)")
	fs.BoolVar(&c.sessionMCP, "allow-session-mcp-servers", true, "let sessions start the MCP servers their mcpServers entries name (commands the server runs)")
	fs.StringVar(&c.toolsCeiling, "allowed-tools-ceiling", "", "comma-separated built-in tools sessions may have, e.g. Read,Grep,Glob,Edit (default: no ceiling); sessions that name none get these")
	fs.IntVar(&c.maxDepth, "max-depth", 2, "refuse to create sessions when nested this deep in claude-agent-mcp sessions")
	fs.Float64Var(&c.sessionBudget, "max-session-budget-usd", 0, "the most a session may spend, in USD (caps maxBudgetUsd, and is the budget of sessions that give none); 0 no cap")
	fs.Float64Var(&c.totalBudget, "max-total-budget-usd", 0, "the most all sessions together may spend, in USD, counted from the costs the CLI reports (across restarts when persisted); past it new turns are refused; 0 no cap")
	fs.StringVar(&c.profiles, "profiles", "", "JSON file of backend profiles (see README)")
	fs.StringVar(&c.stateFile, "state-file", "", "session registry file (default: $XDG_STATE_HOME/claude-agent-mcp/sessions.json)")
	fs.BoolVar(&c.persist, "persist", true, "keep sessions in the registry so they survive a restart")
	fs.IntVar(&c.maxResultChars, "max-result-chars", 60000, "cut a query's final text beyond this many characters (naming the transcript that holds all of it); -1 never")
	fs.DurationVar(&c.defaultWait, "default-wait", 0, "how long a query call waits before returning status running when it gives no waitSeconds (e.g. 100s for clients without MCP tasks); 0 waits for the end")
	fs.DurationVar(&c.heartbeat, "heartbeat-interval", 15*time.Second, "how often a running query sends a progress notification when the call has a progress token")
	fs.IntVar(&c.maxFrameBytes, "max-frame-bytes", mcptools.DefaultMaxFrameBytes, "largest JSON-RPC message accepted on stdin, in bytes; a longer one is refused with -32600 and serving goes on")
	fs.IntVar(&c.maxPromptBytes, "max-prompt-bytes", mcptools.DefaultMaxPromptBytes, "largest prompt a query accepts, in bytes")
	fs.BoolVar(&c.tasks, "tasks", true, "offer MCP tasks (extension io.modelcontextprotocol/tasks, protocol 2026-07-28): a long query from a client that takes them is answered with a task at once")
	fs.DurationVar(&c.taskAfter, "task-after", mcptools.DefaultTaskAfter, "how long a query call waits for its turn to end before it answers with a task")
	fs.DurationVar(&c.taskTTL, "task-ttl", mcptools.DefaultTaskTTL, "how long a finished task's result is kept for tasks/get (from the task's creation)")
	fs.StringVar(&c.http, "http", "", "serve streamable HTTP on this address (e.g. 127.0.0.1:8787) at /mcp instead of stdio")
	fs.StringVar(&c.tokensFile, "tokens-file", "", "bearer tokens for --http: one USER:SHA256HEX line per token (the SHA-256 of the token, never the token); reloaded on SIGHUP. CLAUDE_AGENT_MCP_TOKEN adds one token for user default")
	fs.StringVar(&c.publicURL, "public-url", "", "the URL clients reach --http at (default http://ADDR), for the protected resource metadata")
	fs.StringVar(&c.httpAllow, "http-allow", "", "classes of session options allowed over --http (comma-separated): reads-files, runs-programs, widens-permissions; or, as before, mcp-servers, settings, bypass, paths (= reads-files), profiles")
	fs.IntVar(&c.userMaxSessions, "user-max-sessions", 0, "open sessions a user may have over --http; 0 no limit")
	fs.IntVar(&c.userMaxLive, "user-max-live", -1, "live claude processes a user may have over --http; default (-1) half of --max-live rounded up, so that one user's endless turns leave room for others; 0 no limit")
	fs.Float64Var(&c.userBudget, "user-max-budget-usd", 0, "the most a user's sessions may spend together, in USD; 0 no cap")
	fs.StringVar(&c.perUserConfigDir, "per-user-config-dir", "", "give each --http user's sessions the CLI config directory DIR/<user> (their transcripts apart)")
	fs.StringVar(&c.auditLog, "audit-log", "", "append a JSON line per tool call to this file: time, user, tool, session, prompt size and SHA-256, outcome, duration, cost")
	fs.BoolVar(&c.auditPrompts, "audit-prompts", false, "put the prompts themselves in --audit-log")
	fs.StringVar(&c.agentSources, "agent-sources", "", "Claude Code agents served as tools, one each (see README): user, project, dirs, file, all or none (default: all on stdio, dirs,file over --http)")
	fs.StringVar(&c.agentsDir, "agents-dir", "", "further directories of agent files (separated by "+string(os.PathListSeparator)+")")
	fs.StringVar(&c.agentsFile, "agents-file", "", "operator file of agents (JSON or YAML), which may also set their session options (see README)")
	fs.IntVar(&c.maxAgentTools, "max-agent-tools", mcptools.DefaultMaxAgentTools, "most agents served as tools; the others are named in a warning")
	fs.BoolVar(&c.showVersion, "version", false, "print the version and exit")
	return fs
}

// usage prints the flags, each with its environment twin.
func usage(fs *flag.FlagSet, w io.Writer) {
	fmt.Fprintf(w, "Usage: claude-agent-mcp [flags]\n\nAn MCP server (stdio) that runs Claude Code sessions as sub-agents.\n"+
		"Every flag can also be set with its environment variable (shown in brackets); the command line wins.\n\nFlags:\n")
	fs.VisitAll(func(f *flag.Flag) {
		typ, help := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if typ != "" {
			line += " " + typ
		}
		fmt.Fprintf(w, "%s  [%s]\n    \t%s", line, envName(f.Name), help)
		if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "0s" && f.DefValue != "false" {
			fmt.Fprintf(w, " (default %s)", f.DefValue)
		}
		fmt.Fprintln(w)
	})
}

// parseFlags reads the command line and the environment twins. The error
// is one line naming the flag (the flag package's own printing is off).
func parseFlags(args []string) (*config, *flag.FlagSet, error) {
	c := &config{}
	fs := newFlagSet(c)
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, fs, err
		}
		return nil, fs, fmt.Errorf("%v (see --help)", err)
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

// settings is what serving needs, every flag checked.
type settings struct {
	sessions sessions.Config
	tools    mcptools.Options
	profiles map[string]map[string]string
	agents   agentfile.Config // Sources 0: no agent tools
}

// check validates every flag and builds the settings, before anything is
// served: a bad value is an error naming the flag.
func (c *config) check() (*settings, error) {
	var errs []error
	bad := func(flag string, v any, want string) {
		errs = append(errs, fmt.Errorf("invalid --%s %v: %s", flag, v, want))
	}
	positive := func(flag string, v int) {
		if v < 1 {
			bad(flag, v, "use a number of 1 or more")
		}
	}
	notNegative := func(flag string, d time.Duration) {
		if d < 0 {
			bad(flag, d, "use a duration of 0 or more, such as 30s or 15m")
		}
	}
	above0 := func(flag string, d time.Duration) {
		if d <= 0 {
			bad(flag, d, "use a duration above 0, such as 30s")
		}
	}
	if _, err := newLogger(c.logLevel, io.Discard); err != nil {
		errs = append(errs, err)
	}
	positive("max-sessions", c.maxSessions)
	positive("max-live", c.maxLive)
	positive("max-queue", c.maxQueue)
	if c.warmSpares < 0 {
		bad("warm-spares", c.warmSpares, "use 0 (none) or more")
	}
	notNegative("idle-timeout", c.idleTimeout)
	notNegative("query-timeout", c.queryTimeout)
	above0("permission-timeout", c.permissionTimeout)
	notNegative("default-wait", c.defaultWait)
	above0("heartbeat-interval", c.heartbeat)
	above0("task-after", c.taskAfter)
	above0("task-ttl", c.taskTTL)
	if c.sessionBudget < 0 {
		bad("max-session-budget-usd", c.sessionBudget, "use an amount in USD, or 0 for no cap")
	}
	if c.totalBudget < 0 {
		bad("max-total-budget-usd", c.totalBudget, "use an amount in USD, or 0 for no cap")
	}
	if c.userMaxSessions < 0 {
		bad("user-max-sessions", c.userMaxSessions, "use 0 (no limit) or more")
	}
	userMaxLive := c.userMaxLive
	switch {
	case userMaxLive == -1:
		userMaxLive = (c.maxLive + 1) / 2 // fair by default: others keep room
	case userMaxLive < 0:
		bad("user-max-live", c.userMaxLive, "use 0 (no limit) or more, or -1 for half of --max-live")
	}
	if c.userBudget < 0 {
		bad("user-max-budget-usd", c.userBudget, "use an amount in USD, or 0 for no cap")
	}
	allow := splitList(c.httpAllow, ",")
	for _, a := range allow {
		if !slices.Contains(sessions.HTTPAllowNames(), a) {
			bad("http-allow", a, "use "+strings.Join(sessions.HTTPAllowNames(), ", "))
		}
	}
	if c.http != "" {
		if err := c.checkHTTP(); err != nil {
			errs = append(errs, err)
		}
	} else if c.tokensFile != "" || c.httpAllow != "" || c.publicURL != "" {
		errs = append(errs, errors.New("--tokens-file, --http-allow and --public-url need --http"))
	}
	if c.maxDepth < 0 {
		bad("max-depth", c.maxDepth, "use 0 (no limit) or more")
	}
	if c.maxResultChars < -1 || c.maxResultChars == 0 {
		bad("max-result-chars", c.maxResultChars, "use a number of characters, or -1 for no cap")
	}
	if c.maxFrameBytes < 1<<10 {
		bad("max-frame-bytes", c.maxFrameBytes, "use at least 1024")
	}
	if c.maxPromptBytes < 1 || c.maxPromptBytes >= c.maxFrameBytes {
		bad("max-prompt-bytes", c.maxPromptBytes, fmt.Sprintf("use at least 1 and less than --max-frame-bytes (%d)", c.maxFrameBytes))
	}
	st := &settings{
		sessions: sessions.Config{
			// Between bursts of work the server holds little: give the
			// memory back to the system (a forced GC, about a millisecond).
			OnIdle:  debug.FreeOSMemory,
			CLIPath: c.claudePath, MaxSessions: c.maxSessions, MaxLive: c.maxLive, MaxQueue: c.maxQueue, WarmSpares: c.warmSpares,
			IdleTimeout: c.idleTimeout, QueryTimeout: c.queryTimeout, PermissionTimeout: c.permissionTimeout,
			MaxDepth: c.maxDepth, NoSessionMCPServers: !c.sessionMCP,
			MaxSessionBudgetUSD: c.sessionBudget, MaxTotalBudgetUSD: c.totalBudget,
			UserMaxSessions: c.userMaxSessions, UserMaxLive: userMaxLive, UserMaxBudgetUSD: c.userBudget, PerUserConfigDir: c.perUserConfigDir,
			Remote: c.http != "", RemoteAllow: allow,
		},
		tools: mcptools.Options{
			Version: versionString(), MaxResultChars: c.maxResultChars, DefaultWait: c.defaultWait, HeartbeatInterval: c.heartbeat,
			MaxPromptBytes: c.maxPromptBytes, NoTasks: !c.tasks, TaskAfter: c.taskAfter, TaskTTL: c.taskTTL,
		},
	}
	switch c.permissionPolicy {
	case "deny", "allow":
		st.sessions.PermissionPolicy = c.permissionPolicy
	default:
		bad("permission-policy", c.permissionPolicy, "use deny or allow")
	}
	for _, m := range splitList(c.allowedModes, ",") {
		if err := sessions.ValidatePermissionMode(m); err != nil {
			bad("allowed-permission-modes", m, "use "+strings.Join(sessions.PermissionModes, ", "))
		}
		st.sessions.AllowedModes = append(st.sessions.AllowedModes, m)
	}
	for _, r := range splitList(c.allowedRoots, string(os.PathListSeparator)) {
		abs, err := sessions.ValidateDir("--allowed-roots entry", r)
		if err != nil {
			errs = append(errs, err)
		}
		st.sessions.AllowedRoots = append(st.sessions.AllowedRoots, abs)
	}
	if c.toolsCeiling != "" {
		st.sessions.ToolsCeiling = append([]string{}, splitList(c.toolsCeiling, ",")...)
		if err := sessions.ValidateToolNames("--allowed-tools-ceiling", st.sessions.ToolsCeiling); err != nil {
			errs = append(errs, err)
		}
	}
	profiles, err := loadProfiles(c.profiles)
	if err != nil {
		errs = append(errs, err)
	}
	st.profiles = profiles
	if st.agents, err = c.agentsConfig(); err != nil {
		errs = append(errs, err)
	}
	st.sessions.ProfileEnv = func(name string) (map[string]string, error) {
		env, ok := profiles[name]
		if !ok {
			return nil, fmt.Errorf("unknown profile %q: this server has %s", name, profileNames(profiles))
		}
		return env, nil
	}
	if len(errs) > 0 {
		return nil, errs[0] // one line: the first problem
	}
	return st, nil
}

// splitList splits a flag value at sep, trimmed, without empty entries.
func splitList(v, sep string) []string {
	var out []string
	for _, s := range strings.Split(v, sep) {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// statePath is the registry file, or "" when sessions are not persisted.
func (c *config) statePath() (string, error) {
	if !c.persist {
		return "", nil
	}
	if c.stateFile != "" {
		return filepath.Abs(c.stateFile)
	}
	return sessions.DefaultRegistryPath()
}

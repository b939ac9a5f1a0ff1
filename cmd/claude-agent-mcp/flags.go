package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/nearest"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/httpserve"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/stdio"
)

// envPrefix prefixes the environment twin of every flag.
const envPrefix = "CLAUDE_AGENT_MCP_"

// noEnvTwin names the flags that are commands, not settings: they have no
// environment twin, since a variable left in a serving server's
// environment would turn it into one that prints and exits.
var noEnvTwin = map[string]bool{"version": true, "print-setup": true}

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
	maxLimitWait      time.Duration
	permissionPolicy  string
	permissionTimeout time.Duration
	unanswered        string
	allowedModes      string
	allowedRoots      string
	sessionMCP        bool
	settingSources    string
	acceptNoLandlock  bool
	toolsCeiling      string
	maxDepth          int
	profiles          string
	stateFile         string
	persist           bool
	fileCheckpoints   bool
	store             string
	storeRecover      string
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
	printSetup        bool
	http              string
	tokensFile        string
	publicURL         string
	oauthIssuer       string
	oauthUserClaim    string
	oauthScopeClasses string
	httpMaxSessions   int
	httpSessionIdle   time.Duration
	httpAllow         string
	userMaxSessions   int
	userMaxLive       int
	userBudget        float64
	perUserConfigDir  string
	shareConfigDir    bool
	passEnv           string
	auditLog          string
	auditPrompts      bool
	traceCLI          bool
	tracePrompts      bool
	agentSources      string
	agentsDir         string
	agentsFile        string
	maxAgentTools     int
	ui                string
	uiAdmins          string
	notify            urlList
	metrics           string
	metricsTokensFile string

	fromEnv map[string]string // flags set from their environment twin → the variable
}

func newFlagSet(c *config) *flag.FlagSet {
	fs := flag.NewFlagSet("claude-agent-mcp", flag.ContinueOnError)
	fs.StringVar(&c.claudePath, "claude-path", "", "path to the claude CLI (default: claude on PATH)")
	fs.StringVar(&c.logLevel, "log-level", "info", "stderr log level: debug, info, warn, error or off")
	fs.IntVar(&c.maxSessions, "max-sessions", 64, "maximum open sessions, live or dormant")
	fs.IntVar(&c.maxLive, "max-live", 4, "maximum live claude processes (about 210–300 MiB each); more make the least recently used idle session dormant")
	fs.IntVar(&c.maxQueue, "max-queue", 32, "queries that may wait for a live process when --max-live are busy; beyond it they are refused")
	fs.IntVar(&c.warmSpares, "warm-spares", 1, "ready claude processes kept for the option sets of the latest creates and one-shot queries (they count toward --max-live and give way to sessions); 0 none")
	fs.DurationVar(&c.idleTimeout, "idle-timeout", 15*time.Minute, "stop an idle session's process after this long (it resumes on the next query); 0 never")
	fs.DurationVar(&c.queryTimeout, "query-timeout", 0, "interrupt a query that runs longer than this; 0 means no limit")
	fs.DurationVar(&c.maxLimitWait, "max-limit-wait", 6*time.Hour, "the longest a query waits for the account's usage limit to reset before it goes on by itself; a later reset ends it at once; 0 never waits")
	fs.StringVar(&c.permissionPolicy, "permission-policy", "deny", "answer to permission questions the caller cannot or does not answer: deny or allow")
	fs.DurationVar(&c.permissionTimeout, "permission-timeout", 120*time.Second, "how long to wait for the caller to answer a permission question")
	fs.StringVar(&c.unanswered, "unanswered-questions", "assume", "what a session's model is told when nobody answers its clarifying questions (no form, no page open, or --permission-timeout): assume (state its assumptions and go on) or deny (they cannot be answered)")
	fs.StringVar(&c.allowedModes, "allowed-permission-modes", "", "comma-separated permission modes sessions may use (default: all)")
	fs.StringVar(&c.allowedRoots, "allowed-roots", "", "directories (separated by "+string(os.PathListSeparator)+") that must contain every cwd and addDir (default: anywhere)")
	fs.BoolVar(&c.sessionMCP, "allow-session-mcp-servers", true, "let sessions start the MCP servers their mcpServers entries name and their headersHelper commands (commands the server runs)")
	fs.StringVar(&c.settingSources, "setting-sources", "", "which of the CLI's own sources sessions load — its user, project and local settings with their hooks, agents, .mcp.json servers and CLAUDE.md files: a comma-separated list of user, project, local, or none; a caller may narrow it (default: user,project,local on stdio, none over --http)")
	fs.BoolVar(&c.acceptNoLandlock, "accept-no-landlock", false, "serve --http beyond loopback even where the kernel has no Landlock, so that sessions run without the kernel's ceilings")
	fs.StringVar(&c.toolsCeiling, "allowed-tools-ceiling", "", "comma-separated built-in tools sessions may have, e.g. Read,Grep,Glob,Edit (default: no ceiling); sessions that name none get these")
	fs.IntVar(&c.maxDepth, "max-depth", 2, "refuse to create sessions when nested this deep in claude-agent-mcp sessions")
	fs.Float64Var(&c.sessionBudget, "max-session-budget-usd", 0, "the most a session may spend, in USD (caps maxBudgetUsd, and is the budget of sessions that give none); 0 no cap")
	fs.Float64Var(&c.totalBudget, "max-total-budget-usd", 0, "the most all sessions together may spend, in USD, counted from the costs the CLI reports (across restarts when persisted); past it new turns are refused; 0 no cap")
	fs.StringVar(&c.profiles, "profiles", "", "JSON file of backend profiles (see docs/configuration.md) (default: none)")
	fs.StringVar(&c.store, "store", "", "session store: a file path (SQLite) or postgres://… (default: $XDG_STATE_HOME/claude-agent-mcp/sessions.db)")
	fs.StringVar(&c.storeRecover, "store-recover", "", "when the SQLite --store file is damaged (empty, truncated, not a database): backup restores its backup, fresh starts an empty store; either keeps the damaged file aside (default: refuse to start, naming the file and its backup)")
	fs.StringVar(&c.stateFile, "state-file", "", "old session registry imported into an empty --store at start (default: $XDG_STATE_HOME/claude-agent-mcp/sessions.json)")
	fs.BoolVar(&c.persist, "persist", true, "keep sessions in the store so they survive a restart")
	fs.BoolVar(&c.fileCheckpoints, "file-checkpoints", true, "start every claude CLI with file checkpoints (a copy of each file its tools change, per prompt, in its config directory), so that claude_session_rewind can restore the files as they were before a prompt")
	fs.IntVar(&c.maxResultChars, "max-result-chars", 60000, "cut a query's final text beyond this many characters (naming the transcript that holds all of it); -1 never")
	fs.DurationVar(&c.defaultWait, "default-wait", 0, "how long a query call waits before returning status running when it gives no waitSeconds (e.g. 100s for clients without MCP tasks); 0 waits for the end")
	fs.DurationVar(&c.heartbeat, "heartbeat-interval", 15*time.Second, "how often a running query sends a progress notification when the call has a progress token")
	fs.IntVar(&c.maxFrameBytes, "max-frame-bytes", stdio.DefaultMaxFrameBytes, "largest JSON-RPC message accepted on stdin (refused with -32600, serving goes on) or as an --http request body (413), in bytes")
	fs.IntVar(&c.maxPromptBytes, "max-prompt-bytes", mcptools.DefaultMaxPromptBytes, "largest prompt a query accepts, in bytes")
	fs.BoolVar(&c.tasks, "tasks", true, "offer MCP tasks (extension io.modelcontextprotocol/tasks, protocol 2026-07-28): a long query from a client that takes them is answered with a task at once")
	fs.DurationVar(&c.taskAfter, "task-after", mcptools.DefaultTaskAfter, "how long a query call waits for its turn to end before it answers with a task")
	fs.DurationVar(&c.taskTTL, "task-ttl", mcptools.DefaultTaskTTL, "how long a finished task's result is kept for tasks/get (from the task's creation)")
	fs.StringVar(&c.http, "http", "", "serve streamable HTTP on this address (e.g. 127.0.0.1:8787) at /mcp instead of stdio (default: none, serve stdio)")
	fs.StringVar(&c.tokensFile, "tokens-file", "", "bearer tokens for --http: one USER:SHA256HEX line per token (the SHA-256 of the token, never the token); reloaded on SIGHUP. CLAUDE_AGENT_MCP_TOKEN adds one token for user default (default: none)")
	fs.StringVar(&c.publicURL, "public-url", "", "the URL clients reach --http at (default http://ADDR), for the protected resource metadata; with --oauth-issuer, a token's audience must be it or its /mcp")
	fs.StringVar(&c.oauthIssuer, "oauth-issuer", "", "accept bearer JWTs of this OAuth/OpenID issuer over --http (its discovery document and keys are read at start; needs --public-url): signed by its keys, not expired, issued by it for this server; other tokens still go to --tokens-file (default: none)")
	fs.StringVar(&c.oauthUserClaim, "oauth-user-claim", "sub", "the claim of an --oauth-issuer token that names its user (letters, digits, '.', '_', '@', '-')")
	fs.StringVar(&c.oauthScopeClasses, "oauth-scope-classes", "", "the --http-allow classes an --oauth-issuer token's scopes grant, as scope=class,class;scope=class: a token's sessions may use only the classes of its scopes, all within --http-allow (default: none, every token has all of --http-allow)")
	fs.IntVar(&c.httpMaxSessions, "http-max-sessions", httpserve.DefaultHTTPMaxSessions, "MCP sessions (of clients before protocol 2026-07-28) that --http holds at once, a user a tenth of them (at least 10); beyond, a new one gets 503")
	fs.DurationVar(&c.httpSessionIdle, "http-session-idle", httpserve.DefaultHTTPSessionIdle, "close an MCP session of those (see --http-max-sessions) after this long without a request (its client opens a new one); 0 never")
	fs.StringVar(&c.httpAllow, "http-allow", "", "classes of session options allowed over --http (comma-separated): reads-files, runs-programs, widens-permissions, internal-urls; or, as before, mcp-servers, settings, bypass, paths (= reads-files), profiles (default: none)")
	fs.IntVar(&c.userMaxSessions, "user-max-sessions", 0, "open sessions a user may have over --http; 0 no limit")
	fs.IntVar(&c.userMaxLive, "user-max-live", -1, "live claude processes a user may have over --http; default (-1) half of --max-live rounded up, so that one user's endless turns leave room for others; 0 no limit")
	fs.Float64Var(&c.userBudget, "user-max-budget-usd", 0, "the most a user's sessions may spend together, in USD; 0 no cap")
	fs.StringVar(&c.passEnv, "pass-env", "", "further variables of the server's environment every claude CLI gets, by name (comma-separated); a CLI gets only an allow-list of it: paths, locale, proxies and certificates, ANTHROPIC_*, CLAUDE_CODE_*, AWS_* and the like, never CLAUDE_AGENT_MCP_* (see docs/security.md) (default: none)")
	fs.StringVar(&c.perUserConfigDir, "per-user-config-dir", "", "give each --http user's sessions the CLI config directory DIR/<user>: their transcripts, settings and logins apart (default over --http: $XDG_STATE_HOME/claude-agent-mcp/users; on stdio none, the CLI's own)")
	fs.BoolVar(&c.shareConfigDir, "share-config-dir", false, "over --http, let every user's sessions share the CLI's own config directory (each can then read the others' transcripts) instead of one each under --per-user-config-dir")
	fs.StringVar(&c.auditLog, "audit-log", "", "append two JSON lines per tool call to this file, 'started' before it runs (a call whose line cannot be written is refused) and its outcome: time, user, tool, session, prompt size and SHA-256, outcome, duration, cost (default: none)")
	fs.BoolVar(&c.auditPrompts, "audit-prompts", false, "put the prompts themselves in --audit-log")
	fs.BoolVar(&c.traceCLI, "trace-cli", false, "with tracing on (OTEL_EXPORTER_OTLP_ENDPOINT, see docs/tracing.md), turn on each claude CLI's own trace export (a beta of the CLI's) to the same collector, so its API calls nest under the server's spans")
	fs.BoolVar(&c.tracePrompts, "trace-prompts", false, "with tracing on, put prompts and steered messages themselves in the spans (default: their size only)")
	fs.StringVar(&c.agentSources, "agent-sources", "", "Claude Code agents served as tools, one each (see README): user, project, dirs, file, all or none (default: all on stdio, dirs,file over --http)")
	fs.StringVar(&c.agentsDir, "agents-dir", "", "further directories of agent files (separated by "+string(os.PathListSeparator)+") (default: none)")
	fs.StringVar(&c.agentsFile, "agents-file", "", "operator file of agents (JSON or YAML), which may also set their session options (see README) (default: none)")
	fs.IntVar(&c.maxAgentTools, "max-agent-tools", mcptools.DefaultMaxAgentTools, "most agents served as tools; the others are named in a warning")
	fs.StringVar(&c.ui, "ui", "", "serve a live web dashboard of the sessions: on stdio at this loopback address (on = 127.0.0.1 with a free port), its link with a secret logged at start and in claude_session_list; with --http give on: it is /ui there, signed in with a bearer token (default: none)")
	fs.Var(&c.notify, "notify", "POST a JSON alert to this `URL` when a turn finishes, fails, stops on a budget or waits for a permission answer; repeatable (an ntfy topic, a Slack incoming webhook: see README, Alerts) (default none)")
	fs.StringVar(&c.metrics, "metrics", "", "serve Prometheus metrics at /metrics on this loopback address, without authentication, e.g. 127.0.0.1:9464 (see docs/metrics.md); a port that cannot be listened on stops the server at start (default: none)")
	fs.StringVar(&c.metricsTokensFile, "metrics-tokens-file", "", "serve Prometheus metrics at /metrics on the --http listener to bearer tokens of this file: one SHA-256 hex of a token per line (NAME:SHA256HEX lines too); reloaded on SIGHUP; its tokens open nothing else, and --tokens-file's do not open the metrics (default: none)")
	fs.StringVar(&c.uiAdmins, "ui-admins", "", "users (comma-separated) whose dashboard over --http shows every user's sessions (default: none, each sees their own)")
	fs.BoolVar(&c.showVersion, "version", false, "print the version and exit")
	fs.BoolVar(&c.printSetup, "print-setup", false, "print how to register this binary with Claude Code (the claude mcp add line at user scope, and a .mcp.json entry, with its absolute path) and exit")
	return fs
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
		return nil, fs, fmt.Errorf("%v (see --help)", flagError(fs, err))
	}
	if fs.NArg() > 0 {
		return nil, fs, fmt.Errorf("unexpected arguments %q%s (see --help)", fs.Args(), boolHint(fs, args))
	}
	env, err := applyEnv(fs)
	if err != nil {
		return nil, fs, err
	}
	c.fromEnv = env
	return c, fs, nil
}

// applyEnv sets every flag not given on the command line from its
// environment twin (commands have none: noEnvTwin). It returns the flags
// it set, each with its variable, or the first bad variable.
func applyEnv(fs *flag.FlagSet) (map[string]string, error) {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	set := map[string]string{}
	var first error
	fs.VisitAll(func(f *flag.Flag) {
		if given[f.Name] || noEnvTwin[f.Name] || first != nil {
			return
		}
		name := envName(f.Name)
		if v, ok := os.LookupEnv(name); ok {
			if err := fs.Set(f.Name, v); err != nil {
				first = fmt.Errorf("invalid %s=%q: %s", name, v, useFor(f.Value, err))
				return
			}
			set[f.Name] = name
		}
	})
	return set, first
}

// Translations of the flag package's errors, which name a flag with one
// dash and do not say what a value should look like.
var (
	undefinedRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^flag provided but not defined: -(.*)$`) })
	badValueRE  = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^invalid (?:boolean )?value (".*") for (?:flag )?-([^:\s]+): (.*)$`)
	})
	needsArgRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^flag needs an argument: -(.*)$`) })
)

// flagError rewrites an error of fs.Parse: flags in their double-dash
// form, what a value should look like, and for an unknown flag the
// closest one.
func flagError(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	if m := undefinedRE().FindStringSubmatch(msg); m != nil {
		if near := closestFlag(fs, m[1]); near != "" {
			return fmt.Errorf("unknown flag --%s: did you mean --%s?", m[1], near)
		}
		return fmt.Errorf("unknown flag --%s", m[1])
	}
	if m := badValueRE().FindStringSubmatch(msg); m != nil {
		if f := fs.Lookup(m[2]); f != nil {
			v, uerr := strconv.Unquote(m[1])
			if uerr != nil {
				v = m[1]
			}
			return fmt.Errorf("invalid --%s %q: %s", f.Name, v, useFor(f.Value, errors.New(m[3])))
		}
	}
	if m := needsArgRE().FindStringSubmatch(msg); m != nil {
		if f := fs.Lookup(m[1]); f != nil {
			if want := wantFor(f.Value); want != "" {
				return fmt.Errorf("--%s needs a value: %s", f.Name, want)
			}
			return fmt.Errorf("--%s needs a value", f.Name)
		}
	}
	return err
}

// wantFor says what a flag's value looks like, by its type.
func wantFor(v flag.Value) string {
	g, ok := v.(flag.Getter)
	if !ok {
		return ""
	}
	switch g.Get().(type) {
	case time.Duration:
		return "a duration such as 30s or 15m"
	case int:
		return "a whole number such as 4"
	case float64:
		return "a number such as 2.5"
	case bool:
		return "true or false"
	}
	return ""
}

// useFor is the advice for a value that v refused with err: what to use,
// and the reason unless it is the flag package's plain "parse error".
func useFor(v flag.Value, err error) string {
	want := wantFor(v)
	if want == "" {
		return err.Error()
	}
	if reason := err.Error(); reason != "parse error" {
		return "use " + want + " (" + reason + ")"
	}
	return "use " + want
}

// boolHint explains a stray argument that follows a boolean flag: those
// take their value after '=' only (--persist=false).
func boolHint(fs *flag.FlagSet, args []string) string {
	stray := len(args) - fs.NArg() // parsing stops at the first non-flag
	if stray < 1 {
		return ""
	}
	name := strings.TrimLeft(args[stray-1], "-")
	if f := fs.Lookup(name); f != nil && isBool(f) && !strings.Contains(args[stray-1], "=") {
		example := "true"
		if f.DefValue == "true" {
			example = "false"
		}
		return fmt.Sprintf(": --%s takes true or false after '=', as in --%s=%s", name, name, example)
	}
	return ""
}

// isBool reports whether f is a true/false flag, which the flag package
// lets stand alone (--persist) and takes a value only after '='.
func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// closestFlag is the flag whose name is nearest to name (see
// nearest.Name), else "".
func closestFlag(fs *flag.FlagSet, name string) string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	return nearest.Name(name, names)
}

func envName(flagName string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
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

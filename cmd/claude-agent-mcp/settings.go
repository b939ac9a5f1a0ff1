package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent/agentfile"
	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent/ceiling"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/options"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
)

// settings is what serving needs, every flag checked.
type settings struct {
	sessions sessions.Config
	tools    mcptools.Options
	profiles map[string]map[string]string
	agents   agentfile.Config // Sources 0: no agent tools
	// oauthScopes are the --http-allow classes of each scope
	// (--oauth-scope-classes; nil: none given).
	oauthScopes map[string][]string
	// kernel is the Landlock ABI that enforces the sessions' ceilings, or
	// why there is none (noKernel); noJail says why sessions cannot be
	// jailed (nil: they are).
	kernel   int
	noKernel error
	noJail   error
	// passEnv are the --pass-env variables, with their values at start.
	passEnv map[string]string
}

// check validates every flag and builds the settings, before anything is
// served: a bad value is an error naming the flag.
func (c *config) check() (*settings, error) {
	k := &checks{}
	userMaxLive := c.checkLimits(k)
	allow := c.checkRemote(k)
	scopes := c.checkOAuth(k, allow)
	c.checkSizes(k)
	st := c.baseSettings(userMaxLive, allow)
	st.oauthScopes = scopes
	c.checkPolicy(k, &st.sessions)
	c.checkKernel(k, st)
	st.passEnv = c.checkPassEnv(k)
	st.sessions.PerUserConfigDir = c.checkConfigDirs(k)
	c.loadFiles(k, st)
	if len(k.errs) > 0 {
		return nil, c.envNote(k.errs[0]) // one line: the first problem
	}
	return st, nil
}

// checks collects the problems found in the flags, in the order checked.
type checks struct {
	errs []error
}

func (k *checks) add(err error) {
	if err != nil {
		k.errs = append(k.errs, err)
	}
}

func (k *checks) bad(flag string, v any, want string) {
	k.errs = append(k.errs, fmt.Errorf("invalid --%s %v: %s", flag, v, want))
}

func (k *checks) positive(flag string, v int) {
	if v < 1 {
		k.bad(flag, v, "use a number of 1 or more")
	}
}

func (k *checks) notNegative(flag string, d time.Duration) {
	if d < 0 {
		k.bad(flag, d, "use a duration of 0 or more, such as 30s or 15m")
	}
}

func (k *checks) above0(flag string, d time.Duration) {
	if d <= 0 {
		k.bad(flag, d, "use a duration above 0, such as 30s")
	}
}

func (k *checks) budget(flag string, usd float64) {
	if usd < 0 {
		k.bad(flag, usd, "use an amount in USD, or 0 for no cap")
	}
}

// checkLimits checks the log level, the counts, durations and budgets; it
// returns the per-user live limit, -1 being half of --max-live.
func (c *config) checkLimits(k *checks) (userMaxLive int) {
	_, err := newLogger(c.logLevel, io.Discard)
	k.add(err)
	k.positive("max-sessions", c.maxSessions)
	k.positive("max-live", c.maxLive)
	k.positive("max-queue", c.maxQueue)
	if c.warmSpares < 0 {
		k.bad("warm-spares", c.warmSpares, "use 0 (none) or more")
	}
	k.notNegative("idle-timeout", c.idleTimeout)
	k.notNegative("query-timeout", c.queryTimeout)
	k.notNegative("max-limit-wait", c.maxLimitWait)
	k.above0("permission-timeout", c.permissionTimeout)
	k.notNegative("default-wait", c.defaultWait)
	k.above0("heartbeat-interval", c.heartbeat)
	k.above0("task-after", c.taskAfter)
	k.above0("task-ttl", c.taskTTL)
	k.budget("max-session-budget-usd", c.sessionBudget)
	k.budget("max-total-budget-usd", c.totalBudget)
	k.positive("http-max-sessions", c.httpMaxSessions)
	k.notNegative("http-session-idle", c.httpSessionIdle)
	if c.userMaxSessions < 0 {
		k.bad("user-max-sessions", c.userMaxSessions, "use 0 (no limit) or more")
	}
	userMaxLive = c.userMaxLive
	switch {
	case userMaxLive == -1:
		userMaxLive = (c.maxLive + 1) / 2 // fair by default: others keep room
	case userMaxLive < 0:
		k.bad("user-max-live", c.userMaxLive, "use 0 (no limit) or more, or -1 for half of --max-live")
	}
	k.budget("user-max-budget-usd", c.userBudget)
	return userMaxLive
}

// checkRemote checks --http-allow and the flags that need --http; it
// returns the classes allowed to remote callers.
func (c *config) checkRemote(k *checks) []string {
	allow := splitList(c.httpAllow, ",")
	for _, a := range allow {
		if !slices.Contains(sessions.HTTPAllowNames(), a) {
			k.bad("http-allow", a, "use "+strings.Join(sessions.HTTPAllowNames(), ", "))
		}
	}
	if c.http != "" {
		k.add(c.checkHTTP())
	} else if c.tokensFile != "" || c.httpAllow != "" || c.publicURL != "" || c.oauthIssuer != "" {
		k.add(errors.New("--tokens-file, --oauth-issuer, --http-allow and --public-url need --http"))
	}
	k.add(c.checkUI())
	k.add(c.checkMetrics())
	return allow
}

// checkSizes checks the depth and the caps on results, frames and prompts.
func (c *config) checkSizes(k *checks) {
	if c.maxDepth < 0 {
		k.bad("max-depth", c.maxDepth, "use 0 (no limit) or more")
	}
	if c.maxResultChars < -1 || c.maxResultChars == 0 {
		k.bad("max-result-chars", c.maxResultChars, "use a number of characters, or -1 for no cap")
	}
	if c.maxFrameBytes < 1<<10 {
		k.bad("max-frame-bytes", c.maxFrameBytes, "use at least 1024")
	}
	if c.maxPromptBytes < 1 || c.maxPromptBytes >= c.maxFrameBytes {
		k.bad("max-prompt-bytes", c.maxPromptBytes, fmt.Sprintf("use at least 1 and less than --max-frame-bytes (%d)", c.maxFrameBytes))
	}
}

// limitWait is --max-limit-wait as sessions.Config.MaxLimitWait takes it:
// 0 (never wait) is negative there, where 0 is the default.
func limitWait(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// baseSettings are the settings the flags give as they are, before the
// checks that fill in the policy and the files.
func (c *config) baseSettings(userMaxLive int, allow []string) *settings {
	return &settings{
		sessions: sessions.Config{
			// Between bursts of work the server holds little: give the
			// memory back to the system (a forced GC, about a millisecond).
			OnIdle:  debug.FreeOSMemory,
			CLIPath: c.claudePath, MaxSessions: c.maxSessions, MaxLive: c.maxLive, MaxQueue: c.maxQueue, WarmSpares: c.warmSpares,
			IdleTimeout: c.idleTimeout, QueryTimeout: c.queryTimeout, PermissionTimeout: c.permissionTimeout, MaxLimitWait: limitWait(c.maxLimitWait),
			MaxDepth: c.maxDepth, NoSessionMCPServers: !c.sessionMCP, FileCheckpoints: c.fileCheckpoints,
			MaxSessionBudgetUSD: c.sessionBudget, MaxTotalBudgetUSD: c.totalBudget,
			UserMaxSessions: c.userMaxSessions, UserMaxLive: userMaxLive, UserMaxBudgetUSD: c.userBudget,
			Remote: c.http != "", RemoteAllow: allow, MaxSteerBytes: c.maxPromptBytes,
		},
		tools: mcptools.Options{
			Version: versionString(), MaxResultChars: c.maxResultChars, DefaultWait: c.defaultWait, HeartbeatInterval: c.heartbeat,
			MaxPromptBytes: c.maxPromptBytes, NoTasks: !c.tasks, TaskAfter: c.taskAfter, TaskTTL: c.taskTTL,
		},
	}
}

// checkPolicy checks the permission policy and modes, the allowed roots
// and the tools ceiling into cfg.
func (c *config) checkPolicy(k *checks, cfg *sessions.Config) {
	switch c.permissionPolicy {
	case "deny", "allow":
		cfg.PermissionPolicy = c.permissionPolicy
	default:
		k.bad("permission-policy", c.permissionPolicy, "use deny or allow")
	}
	switch c.unanswered {
	case sessions.UnansweredAssume, sessions.UnansweredDeny:
		cfg.UnansweredQuestions = c.unanswered
	default:
		k.bad("unanswered-questions", c.unanswered, "use assume or deny")
	}
	for _, m := range splitList(c.allowedModes, ",") {
		if err := options.ValidatePermissionMode(m); err != nil {
			k.bad("allowed-permission-modes", m, "use "+strings.Join(options.PermissionModes, ", "))
		}
		cfg.AllowedModes = append(cfg.AllowedModes, m)
	}
	for _, r := range splitList(c.allowedRoots, string(os.PathListSeparator)) {
		abs, err := options.ValidateDir("--allowed-roots entry", r)
		k.add(err)
		cfg.AllowedRoots = append(cfg.AllowedRoots, abs)
	}
	if c.toolsCeiling != "" {
		cfg.ToolsCeiling = append([]string{}, splitList(c.toolsCeiling, ",")...)
		k.add(options.ValidateToolNames("--allowed-tools-ceiling", cfg.ToolsCeiling))
	}
	cfg.SettingSources = c.checkSettingSources(k)
}

// checkSettingSources checks --setting-sources into the sources sessions
// load (empty loads none; nil all, the CLI's default). Its default is every source on
// stdio, where the caller is the user whose files they are, and none over
// HTTP, where a caller would run the hooks and servers of the server
// user's and a project's files.
func (c *config) checkSettingSources(k *checks) []string {
	v := c.settingSources
	switch {
	case v == "" && c.http != "":
		v = "none"
	case v == "":
		v = strings.Join(options.SettingSources, ",")
	}
	sources := []string{}
	if v == "none" {
		return sources
	}
	for _, src := range splitList(v, ",") {
		if !slices.Contains(options.SettingSources, src) {
			k.bad("setting-sources", src, "use a comma-separated list of "+strings.Join(options.SettingSources, ", ")+", or none")
			continue
		}
		if !slices.Contains(sources, src) {
			sources = append(sources, src)
		}
	}
	if len(sources) == len(options.SettingSources) {
		return nil // the CLI's own default: no flag
	}
	return sources
}

// checkConfigDirs checks --per-user-config-dir and --share-config-dir and
// returns the directory of the users' config directories: over --http one
// each by default (a session is a tenant: another user's transcripts are
// not in its directory), none on stdio, where the caller is the user.
func (c *config) checkConfigDirs(k *checks) string {
	switch {
	case c.shareConfigDir && c.perUserConfigDir != "":
		k.add(errors.New("--share-config-dir and --per-user-config-dir exclude each other: give one"))
		return ""
	case c.shareConfigDir && c.http == "":
		k.add(errors.New("--share-config-dir needs --http (on stdio the sessions share the CLI's own config directory)"))
		return ""
	case c.shareConfigDir || c.perUserConfigDir == "" && c.http == "":
		return ""
	case c.perUserConfigDir != "":
		abs, err := filepath.Abs(c.perUserConfigDir)
		k.add(err)
		return abs
	}
	dir, err := store.StateDir()
	if err != nil {
		k.add(fmt.Errorf("finding the default --per-user-config-dir: %w (give one, or --share-config-dir)", err))
		return ""
	}
	return filepath.Join(dir, "users")
}

// checkPassEnv reads the --pass-env variables from the server's
// environment (a name not set there is passed empty: the operator named
// it); the server's own variables are never passed.
func (c *config) checkPassEnv(k *checks) map[string]string {
	var env map[string]string
	for _, name := range splitList(c.passEnv, ",") {
		switch {
		case !envNameRE().MatchString(name):
			k.bad("pass-env", name, "use variable names (letters, digits and '_', not starting with a digit), comma-separated")
		case strings.HasPrefix(name, "CLAUDE_AGENT_MCP_"):
			k.bad("pass-env", name, "the server's own variables (CLAUDE_AGENT_MCP_*: its settings and token) are never passed to a session")
		default:
			if env == nil {
				env = map[string]string{}
			}
			env[name] = os.Getenv(name)
		}
	}
	return env
}

var envNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// kernelAvailable and jailAvailable are ceiling's; tests replace them.
var (
	kernelAvailable = ceiling.Available
	jailAvailable   = ceiling.JailAvailable
)

// checkKernel finds out whether the kernel can enforce the sessions'
// ceilings (Landlock) and jail their processes (namespaces). Without
// either, --http to anyone but this machine's own user is refused unless
// the operator accepts that with --accept-no-landlock.
func (c *config) checkKernel(k *checks, st *settings) {
	st.kernel, st.noKernel = kernelAvailable()
	st.noJail = jailAvailable()
	st.sessions.Kernel = st.noKernel == nil
	st.sessions.Jail = st.noJail == nil
	missing := errors.Join(st.noKernel, st.noJail)
	if missing == nil || c.http == "" || c.acceptNoLandlock {
		return
	}
	if who := c.servesOthers(); who != "" {
		k.add(fmt.Errorf("--http serves %s, but %v, so sessions would run without the kernel's ceilings or jail: run on Linux 5.13 or later with Landlock enabled (lsm=landlock) and user namespaces allowed, or accept it with --accept-no-landlock", who, missing))
	}
}

// servesOthers says whom --http serves besides this machine's own user:
// callers beyond loopback (its address, or --public-url on another host,
// a proxy's), or the several users of --tokens-file or --oauth-issuer; ""
// for none.
func (c *config) servesOthers() string {
	if host, _, err := net.SplitHostPort(c.http); err != nil || !loopback(host) {
		return "beyond this machine (" + c.http + ")"
	}
	if u, err := url.Parse(c.publicURL); c.publicURL != "" && (err != nil || !loopback(u.Hostname())) {
		return "remote callers through --public-url " + c.publicURL
	}
	if c.tokensFile != "" || c.oauthIssuer != "" {
		return "the users of --tokens-file or --oauth-issuer"
	}
	return ""
}

// loadFiles reads the profiles and the agent sources into st.
func (c *config) loadFiles(k *checks, st *settings) {
	profiles, err := loadProfiles(c.profiles)
	k.add(err)
	st.profiles = profiles
	st.agents, err = c.agentsConfig()
	k.add(err)
	st.sessions.ProfileEnv = func(name string) (map[string]string, error) {
		env, ok := profiles[name]
		if !ok {
			return nil, fmt.Errorf("unknown profile %q: this server has %s", name, profileNames(profiles))
		}
		return env, nil
	}
}

var flagNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`--([a-z][a-z0-9-]*)`) })

// envNote adds to err the environment variable that set a flag it names,
// so that a bad value nobody typed can be found.
func (c *config) envNote(err error) error {
	for _, m := range flagNameRE().FindAllStringSubmatch(err.Error(), -1) {
		if name, ok := c.fromEnv[m[1]]; ok {
			return fmt.Errorf("%w (set by %s)", err, name)
		}
	}
	return err
}

// statePath is the registry file, or "" when sessions are not persisted.
func (c *config) statePath() (string, error) {
	if !c.persist {
		return "", nil
	}
	if c.stateFile != "" {
		return filepath.Abs(c.stateFile)
	}
	dir, err := store.StateDir()
	return filepath.Join(dir, "sessions.json"), err
}

// Package policy is the one gate of the operator's policy: every path that
// starts a session's process or changes what a session may do — create,
// one-shot query, every start (resume, restore, adopt, wake from
// dormancy), model, mode and effort switches, images by path — passes
// [Gate.Check], and nothing else decides. The gate breaks the options down
// into uses (classes.go: one classifier per option; fields.go: the
// classes of the fields of the CLI's documents — settings keys, agent
// fields, MCP server entries by transport — read from the CLI's own
// schemas by TestCLISchemaClassified) and checks each use against the
// operator's ceilings and, for a remote caller, against --http-allow
// (urls.go: whether an MCP server's URL is internal). An option or a field
// that has no class is refused wherever a ceiling or a remote caller is
// in play: a new option cannot slip past the gate by being forgotten.
//
// It knows the session options (package options) and the operator's
// policy ([Config]); it must not know sessions, processes, the store or
// MCP: what it needs of them — who made a conversation, a profile's
// environment — it is given as functions.
package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/beneath"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/options"
)

// Config is the operator's policy, and what the gate asks the rest of the
// server. Zero values allow: no ceilings, a local caller.
type Config struct {
	// Depth is how deeply this server is nested in claude-agent-mcp
	// sessions; at MaxDepth or beyond (when set) nothing runs.
	Depth, MaxDepth int
	// AllowedRoots, when set, must contain every path a session reaches.
	AllowedRoots []string
	// AllowedModes restricts permission modes; nil allows all.
	AllowedModes []string
	// ToolsCeiling, when non-nil, is every built-in tool a session may
	// have.
	ToolsCeiling []string
	// NoSessionMCPServers refuses MCP server entries that run a command.
	NoSessionMCPServers bool
	// Remote marks callers who are others (over HTTP): the uses of options
	// that read files, run programs or widen permissions are refused
	// unless RemoteAllow names their class (see HTTPAllowNames), and a
	// resume must name the caller's own conversation.
	Remote      bool
	RemoteAllow []string
	// MaxSessionBudgetUSD caps a session's maxBudgetUsd; 0 means no cap.
	MaxSessionBudgetUSD float64
	// PerUserConfigDir, when set, gives each user a CLI config directory of
	// their own: the CLI finds only their own conversations.
	PerUserConfigDir string
	// Env is added to every CLI's environment (IS_SANDBOX makes
	// bypassPermissions available as root).
	Env map[string]string
	// ProfileEnv returns the CLI environment of a named profile; nil when
	// the server has no profiles.
	ProfileEnv func(name string) (map[string]string, error)
	// ConversationOwner reports who made a Claude conversation, as far as
	// the server knows ("" is a session made over stdio).
	ConversationOwner func(claudeSessionID string) (owner string, known bool)
	// SettingSources are the CLI's own sources (user, project, local
	// settings with their agents, .mcp.json and CLAUDE.md) sessions may
	// load: a session's settingSources must lie within them; nil leaves
	// the CLI's default.
	SettingSources []string
	// Kernel makes the kernel enforce the ceilings too ([Gate.Ceiling]):
	// set where Landlock is available.
	Kernel bool
	// LookupHost resolves the host name of an MCP server's URL for a
	// remote caller (InternalURLs); nil is the system's resolver.
	LookupHost func(ctx context.Context, host string) ([]netip.Addr, error)
}

// Gate is the one policy check. It is safe for concurrent use.
type Gate struct {
	cfg Config
}

// New returns the gate of cfg.
func New(cfg Config) *Gate { return &Gate{cfg: cfg} }

// ErrDepthExceeded is the error of a server nested too deeply to run
// sessions (--max-depth).
var ErrDepthExceeded = errors.New("nesting depth exceeded")

// ConversationError is the refusal of a resume or fork of a conversation
// the caller did not make (over HTTP).
type ConversationError struct {
	ResumeSessionID string
}

func (e *ConversationError) Error() string {
	return fmt.Sprintf("resumeSessionId %s names no conversation of yours that this server knows: over HTTP a session continues only conversations its user made here", e.ResumeSessionID)
}

// usd renders an amount of dollars with the digits that matter.
func usd(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// Use is one thing an option does, as the gate checks it. Only the gate
// makes them (and ImagePath).
type Use struct {
	option string // the session option it is part of (its JSON name)
	what   string // the option and the part of it: `agents["x"].hooks`
	value  string // the value, when the messages name it (a mode, a path)
	class  Class
	also   string // a --http-allow name of earlier releases that allows it too
	// unclassified marks a part no table knows: refused under any ceiling
	// and from remote callers (unless --http-allow names its option).
	unclassified bool
	paths        []string // must lie within --allowed-roots
	dirs         bool     // paths must be existing directories
	modes        []string // permission modes: allowed, and bypass available
	tools        []string // built-in tools or rules: within --allowed-tools-ceiling
	beyond       []string // tools that must lie within the session's own tool set
	program      bool     // starts a program as the server's user
	mcpCommand   bool     // an MCP server command (--allow-session-mcp-servers)
	// agent marks the agent a settings document runs the session as
	// (settings.agent), named by value; badAgent, one that is no name.
	agent, badAgent bool
	url             string // an MCP server's URL: InternalURLs when internal
}

// Change is what a caller changes in a session other than its options:
// extra uses the gate checks along with the options.
type Change struct {
	Creating bool  // a create: the conversation to resume must be the caller's
	Extra    []Use // images by path
}

// ImagePath is the use of an image file a query sends (what names it,
// such as "images[0] path"): it reads a file of the server.
func ImagePath(what, path string) Use {
	return Use{what: what, value: path, class: ReadsFiles, also: "paths", paths: []string{path}}
}

// Check is the one policy check: it checks o as it is now against the
// operator's policy (see the package comment) and returns the CLI
// environment of the session's profile. It runs at create and before
// every process start (so a session made under a looser policy does not
// run under a stricter one), and for every change of a session's options:
// the caller applies the change to a copy of the options and passes that.
func (g *Gate) Check(o *options.CreateOptions, ch Change) (map[string]string, error) {
	if g.cfg.MaxDepth > 0 && g.cfg.Depth >= g.cfg.MaxDepth {
		return nil, fmt.Errorf("%w: this server runs inside %d nested claude-agent-mcp session(s) and --max-depth is %d, so it runs no sessions (this stops unbounded fan-out); do the work directly instead", ErrDepthExceeded, g.cfg.Depth, g.cfg.MaxDepth)
	}
	if harmlessGate {
		return nil, nil // a test build: see harmless_gate.go
	}
	allow := g.remoteAllow(o)
	if o.SettingsFile != "" {
		// Before the file is read: whether a file outside the roots, or
		// one the caller may not read, exists is none of its business.
		if err := g.admitUse(settingsFileUse(o.SettingsFile), nil, allow, o); err != nil {
			return nil, err
		}
	}
	uses, err := optionUses(o)
	if err != nil {
		return nil, err
	}
	uses = append(uses, ch.Extra...)
	if o.PermissionMode == "" {
		// No mode is the CLI's default mode, which the operator may have
		// left out.
		uses = append(uses, Use{what: "permissionMode", modes: []string{"default"}})
	}
	effective := g.effectiveTools(o)
	for _, u := range uses {
		if err := g.checkUse(u, effective, allow, o); err != nil {
			return nil, err
		}
	}
	if err := g.checkSources(o, uses); err != nil {
		return nil, err
	}
	if ch.Creating && o.ResumeSessionID != "" {
		if err := g.checkConversation(o); err != nil {
			return nil, err
		}
	}
	if ceiling := g.cfg.MaxSessionBudgetUSD; ceiling > 0 && o.MaxBudgetUSD > ceiling {
		return nil, fmt.Errorf("maxBudgetUsd $%s is more than this server lets a session spend ($%s, --max-session-budget-usd)", usd(o.MaxBudgetUSD), usd(ceiling))
	}
	if o.Profile == "" {
		return nil, nil
	}
	if g.cfg.ProfileEnv == nil {
		return nil, fmt.Errorf("unknown profile %q: this server has no profiles (start it with --profiles FILE)", o.Profile)
	}
	return g.cfg.ProfileEnv(o.Profile)
}

// checkUse checks one use of o's: admitUse, then that its directories
// exist, last, so that whether a path exists is told only of paths the
// caller may use.
func (g *Gate) checkUse(u Use, effective, allow []string, o *options.CreateOptions) error {
	if err := g.admitUse(u, effective, allow, o); err != nil {
		return err
	}
	if u.dirs {
		for _, p := range u.paths {
			if _, err := options.ValidateDir(u.what, p); err != nil {
				return err
			}
		}
	}
	return nil
}

// admitUse checks one use of o's: the ceilings first (they bind every
// caller; the roots before anything else: what lies outside them is not
// described), then, for a remote caller, its class against allow
// (--http-allow as the session's grant narrows it; see remoteAllow),
// unless the operator chose the option's value (o.Operator).
func (g *Gate) admitUse(u Use, effective, allow []string, o *options.CreateOptions) error {
	cfg := &g.cfg
	for _, p := range u.paths {
		if err := g.CheckPath(u.what, p); err != nil {
			return err
		}
	}
	for _, mode := range u.modes {
		if err := g.checkMode(u.what, mode); err != nil {
			return err
		}
	}
	if cfg.ToolsCeiling != nil {
		for _, t := range u.tools {
			name, _, _ := strings.Cut(t, "(")
			if !strings.HasPrefix(name, "mcp__") && !slices.Contains(cfg.ToolsCeiling, name) {
				verb := "names a tool"
				if name == t {
					verb = "is"
				}
				return fmt.Errorf("%s entry %q %s beyond the tools this server allows (--allowed-tools-ceiling %s)", u.what, t, verb, strings.Join(cfg.ToolsCeiling, ","))
			}
		}
	}
	if effective != nil {
		for _, t := range u.beyond {
			if !slices.Contains(effective, t) {
				return fmt.Errorf("%s entry %q is beyond the session's own tools (%s): an agent may only narrow them", u.what, t, strings.Join(effective, ","))
			}
		}
	}
	if u.mcpCommand && cfg.NoSessionMCPServers {
		return fmt.Errorf("%s runs a command, and this server does not let sessions start MCP servers or their helpers (--allow-session-mcp-servers=false): use an http server entry without one, or ask the operator", u.what)
	}
	if (u.program || u.unclassified) && cfg.ToolsCeiling != nil && !slices.Contains(cfg.ToolsCeiling, "Bash") {
		why := "runs a program"
		if u.unclassified {
			why = "is not known to this server's policy"
		}
		return fmt.Errorf("%s %s, and this server lets sessions run no programs (--allowed-tools-ceiling %s has no Bash)", u.what, why, strings.Join(cfg.ToolsCeiling, ","))
	}
	if !cfg.Remote || slices.Contains(o.Operator, u.option) {
		return nil
	}
	if u.url != "" && g.internalURL(u.url) {
		u.class |= InternalURLs
	}
	if u.class == Harmless && !u.unclassified {
		return nil
	}
	if g.remoteAllowed(u, allow) {
		return nil
	}
	if g.remoteAllowed(u, g.cfg.RemoteAllow) {
		return fmt.Errorf("%s is off for this session: the operator allows it over HTTP (--http-allow), but the scopes of the OAuth token that created it do not grant it (--oauth-scope-classes); create the session with a token that has such a scope", u.what)
	}
	return refusal(u)
}

// remoteAllow is --http-allow as o's grant narrows it: the names both
// hold (an OAuth token's scopes; CreateOptions.Grant).
func (g *Gate) remoteAllow(o *options.CreateOptions) []string {
	if o.Grant == nil {
		return g.cfg.RemoteAllow
	}
	return slices.DeleteFunc(slices.Clone(g.cfg.RemoteAllow), func(n string) bool { return !slices.Contains(*o.Grant, n) })
}

// remoteAllowed reports whether allow (see remoteAllow) opens u to remote
// callers. Reading files is open without it when --allowed-roots bounds
// every path (checked above).
func (g *Gate) remoteAllowed(u Use, allow []string) bool {
	if u.also != "" && slices.Contains(allow, u.also) {
		return true
	}
	if u.unclassified {
		return false
	}
	for _, n := range classNames {
		if u.class&n.c == 0 {
			continue
		}
		ok := slices.Contains(allow, n.name) ||
			(n.c == ReadsFiles && (slices.Contains(allow, "paths") || (len(g.cfg.AllowedRoots) > 0 && len(u.paths) > 0)))
		if !ok {
			return false
		}
	}
	return true
}

// refusal is the error for a use a remote caller may not make.
func refusal(u Use) error {
	if u.value != "" {
		u.what += " " + u.value
	}
	if u.unclassified {
		hint := ""
		if u.also != "" {
			hint = fmt.Sprintf(" (--http-allow %s opens it)", u.also)
		}
		return fmt.Errorf("%s is not known to this server's policy, so it is refused over HTTP%s", u.what, hint)
	}
	var names []string
	for _, n := range classNames {
		if u.class&n.c != 0 {
			names = append(names, n.name)
		}
	}
	how := "--http-allow " + strings.Join(names, ",")
	if u.also != "" {
		how += " (or " + u.also + ")"
	}
	if u.class&ReadsFiles != 0 && len(u.paths) > 0 {
		how += ", or bound the paths with --allowed-roots"
	}
	where := " on the server as its user"
	if u.class == InternalURLs {
		where = ""
	}
	return fmt.Errorf("%s is off over HTTP: it %s%s; the operator enables it with %s", u.what, classVerb(u.class), where, how)
}

// effectiveTools is the built-in tool set a session runs with: its tools,
// else the ceiling, else nil (the CLI's default: all).
func (g *Gate) effectiveTools(o *options.CreateOptions) []string {
	if o.Tools != nil {
		return o.Tools
	}
	return g.cfg.ToolsCeiling
}

// checkMode checks a permission mode against --allowed-permission-modes
// and whether bypassPermissions can run here.
func (g *Gate) checkMode(what, mode string) error {
	if err := options.ValidatePermissionMode(mode); err != nil {
		return err
	}
	if !g.modeAllowed(mode) {
		if mode == "default" {
			return fmt.Errorf("the default permission mode is not allowed by this server (allowed: %s; --allowed-permission-modes): pass permissionMode as one of them", strings.Join(g.cfg.AllowedModes, ", "))
		}
		return fmt.Errorf("%s %q is not allowed by this server (allowed: %s; --allowed-permission-modes)", what, mode, strings.Join(g.cfg.AllowedModes, ", "))
	}
	if mode == claudeagent.ModeBypass && !g.BypassAvailable() {
		return fmt.Errorf("permissionMode bypassPermissions is unavailable: the server runs as root and the claude CLI refuses it there unless IS_SANDBOX=1 is set in the server's environment")
	}
	return nil
}

// modeClass is the class of a permission mode: the modes that let the
// session act without asking (looser than default) widen permissions.
func modeClass(mode string) (Class, string) {
	switch rank := claudeagent.ModeStrictness(mode); {
	case mode == "" || rank >= 0 && rank <= claudeagent.ModeStrictness("default"):
		return Harmless, ""
	case mode == claudeagent.ModeBypass:
		return WidensPermissions, "bypass"
	}
	return WidensPermissions, ""
}

// checkConversation refuses a resume or fork of another user's
// conversation: over HTTP the conversation must be one this server knows
// its caller made, whether the users share the CLI's config directory or
// have one each (where a stranger's id would only fail later, in the CLI).
func (g *Gate) checkConversation(o *options.CreateOptions) error {
	if !g.cfg.Remote {
		return nil
	}
	if g.cfg.ConversationOwner != nil {
		if owner, known := g.cfg.ConversationOwner(o.ResumeSessionID); known && owner == o.Owner {
			return nil
		}
	}
	return &ConversationError{ResumeSessionID: o.ResumeSessionID}
}

// jsonNames lists the JSON names of the fields of a struct type, embedded
// structs flattened, "-" left out.
func jsonNames(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		switch {
		case name == "-":
		case f.Anonymous && name == "":
			names = append(names, jsonNames(f.Type)...)
		case name == "":
			names = append(names, f.Name)
		default:
			names = append(names, name)
		}
	}
	return names
}

// setOptions are the JSON names of o's options that are set (non-zero).
func setOptions(o *options.CreateOptions) ([]string, error) {
	raw, err := json.Marshal(o)
	if err != nil {
		return nil, fmt.Errorf("reading the session options: %w", err)
	}
	var set map[string]json.RawMessage
	if err := json.Unmarshal(raw, &set); err != nil {
		return nil, fmt.Errorf("reading the session options: %w", err)
	}
	names := make([]string, 0, len(set))
	for k := range set {
		names = append(names, k)
	}
	slices.Sort(names)
	return names, nil
}

// readSettingsFile reads a settings file for the gate (at most 1 MiB).
func readSettingsFile(path string) (map[string]json.RawMessage, error) {
	real, err := beneath.Real(path)
	var data []byte
	if err == nil {
		// Opened at its resolved path, no link followed since: the file
		// the roots were checked for is the file read.
		data, err = beneath.ReadFile(real, 1<<20)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, beneath.ErrNotRegular):
		return nil, fmt.Errorf("invalid settingsFile %q: no such file (pass an existing settings file, or the settings as an object in settings)", path)
	case err != nil:
		return nil, fmt.Errorf("settings file %s: %v", path, err)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		return nil, fmt.Errorf("settings file %s is not a JSON object this server can check: %v", path, err)
	}
	return obj, nil
}

// errUnclassified is wrapped by the error for an option without a
// classifier (a programming error that the tests catch).
var errUnclassified = errors.New("no policy class")

// BypassAvailable reports whether sessions may use bypassPermissions: the
// mode is allowed, and the CLI will accept the flag (as root it refuses
// without IS_SANDBOX=1).
func (g *Gate) BypassAvailable() bool {
	if !g.modeAllowed(claudeagent.ModeBypass) {
		return false
	}
	if os.Geteuid() == 0 && os.Getenv("IS_SANDBOX") == "" && g.cfg.Env["IS_SANDBOX"] == "" {
		return false
	}
	return true
}
func (g *Gate) modeAllowed(mode string) bool {
	return g.cfg.AllowedModes == nil || slices.Contains(g.cfg.AllowedModes, mode)
}

// CheckDir checks a directory: it exists, and lies within the allowed
// roots (see CheckPath).
func (g *Gate) CheckDir(what, dir string) error {
	if err := g.CheckPath(what, dir); err != nil {
		return err
	}
	_, err := options.ValidateDir(what, dir)
	return err
}

// CheckPath checks that path lies within the allowed roots, resolving
// symlinks as they are now: a directory swapped for a link that leads
// elsewhere is caught at the next start.
func (g *Gate) CheckPath(what, path string) error {
	if len(g.cfg.AllowedRoots) == 0 {
		return nil
	}
	real, resolveErr := filepath.EvalSymlinks(path)
	if resolveErr != nil {
		// A path that does not resolve is judged as written: outside
		// the roots it gets the same error as one that exists, so that
		// the answer says nothing of what lies outside.
		real = filepath.Clean(path)
	}
	for _, root := range g.cfg.AllowedRoots {
		r, err := filepath.EvalSymlinks(root)
		if err != nil {
			continue
		}
		if inside(r, real) {
			return nil // what does not exist is said by the use's own check
		}
	}
	return fmt.Errorf("%s %q is outside the directories this server allows (--allowed-roots %s): pass a path inside one of them", what, path, strings.Join(g.cfg.AllowedRoots, string(filepath.ListSeparator)))
}

// inside reports whether path p lies in dir, as written (both resolved by
// the caller where they should be).
func inside(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

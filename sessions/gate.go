package sessions

import (
	"errors"
	"fmt"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/policy"
)

// The policy gate lives in package policy. The manager holds one
// (Manager.policy), made from its Config; Manager.gate is the one call
// into it: never check an option outside it. A change of a session's
// options (mode, model, effort) is gated as the options it would leave
// (Session.gateChange).

// HTTPAllowNames are the values --http-allow takes (see
// policy.HTTPAllowNames).
func HTTPAllowNames() []string { return policy.HTTPAllowNames() }

// GrantKey is the key, in the Extra of a request's auth.TokenInfo (the
// go-sdk's), of the --http-allow classes its OAuth token's scopes grant
// ([]string; absent: all of --http-allow). The HTTP transport sets it; the
// tools make it the CreateOptions.Grant of the sessions the caller
// creates.
const GrantKey = "claude-agent-mcp.grant"

// newPolicy is the gate of cfg; its questions about conversations go to m.
func newPolicy(m *Manager, cfg Config) *policy.Gate {
	return policy.New(policy.Config{
		Depth: cfg.Depth, MaxDepth: cfg.MaxDepth,
		AllowedRoots: cfg.AllowedRoots, AllowedModes: cfg.AllowedModes, ToolsCeiling: cfg.ToolsCeiling,
		NoSessionMCPServers: cfg.NoSessionMCPServers, Remote: cfg.Remote, RemoteAllow: cfg.RemoteAllow,
		MaxSessionBudgetUSD: cfg.MaxSessionBudgetUSD, PerUserConfigDir: cfg.PerUserConfigDir, Env: cfg.Env,
		ProfileEnv: cfg.ProfileEnv, ConversationOwner: m.ConversationOwner,
		SettingSources: cfg.SettingSources, Kernel: cfg.Kernel,
	})
}

// gate checks o against the server's policy (policy.Gate.Check) and
// returns the CLI environment of the session's profile. A resume of
// another user's conversation is refused as not found.
func (m *Manager) gate(o *CreateOptions, ch policy.Change) (map[string]string, error) {
	env, err := m.policy.Check(o, ch)
	if ce := (*policy.ConversationError)(nil); errors.As(err, &ce) {
		return nil, fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return env, err
}

// admit checks opts against the server's policy as it is now (the gate)
// before a process starts: at create, and again before every start
// (resume, restore, wake from dormancy), so a session made under a looser
// policy does not run under a stricter one. It returns the CLI
// environment of the session's profile.
func (m *Manager) admit(opts *CreateOptions) (map[string]string, error) {
	return m.gate(opts, policy.Change{})
}

// BypassAvailable reports whether sessions may use bypassPermissions: the
// mode is allowed, and the CLI will accept the flag (as root it refuses
// without IS_SANDBOX=1).
func (m *Manager) BypassAvailable() bool { return m.policy.BypassAvailable() }

// checkDir checks a directory: it exists, and lies within the allowed
// roots (see checkPath).
func (m *Manager) checkDir(what, dir string) error { return m.policy.CheckDir(what, dir) }

// checkPath checks that path lies within the allowed roots, resolving
// symlinks as they are now.
func (m *Manager) checkPath(what, path string) error { return m.policy.CheckPath(what, path) }

package claudeagent

import "slices"

// The CLI's permission modes and effort levels, defined here once: the
// session options, agent files, the policy gate and the agent tools use
// these.

// permissionModes are the CLI's permission modes (--permission-mode) in
// the order its documentation lists them, each with its strictness: plan
// (plans only, runs nothing) 0, dontAsk (runs only what the rules allow,
// asks nothing) 1, default (asks before risky tools) 2, acceptEdits (edits
// without asking) 3, auto (a classifier approves) 4, bypassPermissions (no
// checks) 5.
var permissionModes = []permissionMode{
	{"default", 2},
	{"acceptEdits", 3},
	{"plan", 0},
	{ModeBypass, 5},
	{"dontAsk", 1},
	{"auto", 4},
}

type permissionMode struct {
	name       string
	strictness int
}

// ModeBypass is the permission mode without checks.
const ModeBypass = "bypassPermissions"

// PermissionModes are the CLI's permission modes, in the order documented.
var PermissionModes = modeNames(func(a, b int) int { return 0 })

// ModesByStrictness are the CLI's permission modes from the strictest
// (plan) to the loosest (bypassPermissions).
var ModesByStrictness = modeNames(func(a, b int) int { return a - b })

// ModeStrictness is mode's place in ModesByStrictness: 0 for the strictest;
// -1 for a mode the CLI does not have.
func ModeStrictness(mode string) int {
	for _, m := range permissionModes {
		if m.name == mode {
			return m.strictness
		}
	}
	return -1
}

// modeNames lists the modes' names, stably sorted by strictness with cmp.
func modeNames(cmp func(a, b int) int) []string {
	ms := slices.Clone(permissionModes)
	slices.SortStableFunc(ms, func(a, b permissionMode) int {
		return cmp(a.strictness, b.strictness)
	})
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.name
	}
	return out
}

// EffortLevels are the CLI's --effort values, from the lowest.
var EffortLevels = []string{"low", "medium", "high", "xhigh", "max"}

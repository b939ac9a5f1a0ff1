package policy

import (
	"path/filepath"
	"slices"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent/ceiling"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/options"
)

// Ceiling is what the kernel lets the process of a session with options o,
// running in cwd, do: the operator's ceilings again, enforced by the
// kernel instead of predicted from the options, so that what the
// classification misses is refused all the same (nil when Config.Kernel is
// off). The CLI's own needs are added where it starts
// ([claudeagent.CLINeeds]).
//
//   - No programs but the CLI's own when the session may run none: the
//     tools ceiling has no Bash, or a remote caller without
//     runs-programs has a tool set without Bash.
//   - Files only within the allowed roots, when they are set; for a
//     remote caller without reads-files, only the session's own
//     directories (cwd, addDirs) and the files its options name.
func (g *Gate) Ceiling(o *options.CreateOptions, cwd string) *ceiling.Ceiling {
	if !g.cfg.Kernel {
		return nil
	}
	c := &ceiling.Ceiling{NoPrograms: !g.MayRunPrograms(o)}
	switch {
	case g.cfg.Remote && !g.remoteClass(o, ReadsFiles):
		c.Files = true
		c.Write = append(c.Write, cwd, o.Cwd)
		c.Write = append(c.Write, o.AddDirs...)
		c.Read = append(c.Read, o.Plugins...)
		if o.SettingsFile != "" {
			c.Read = append(c.Read, o.SettingsFile)
		}
	case len(g.cfg.AllowedRoots) > 0:
		c.Files = true
		for _, r := range g.cfg.AllowedRoots {
			if real, err := filepath.EvalSymlinks(r); err == nil {
				r = real
			}
			c.Write = append(c.Write, r)
		}
	}
	c.Write = slices.DeleteFunc(c.Write, func(p string) bool { return p == "" })
	return c
}

// MayRunPrograms reports whether a session with o may start programs
// beyond the CLI's own: its tool set has Bash, and no ceiling says
// otherwise.
func (g *Gate) MayRunPrograms(o *options.CreateOptions) bool {
	if t := g.cfg.ToolsCeiling; t != nil && !slices.Contains(t, "Bash") {
		return false
	}
	if g.cfg.Remote && !g.remoteClass(o, RunsPrograms) {
		if t := g.effectiveTools(o); t != nil && !slices.Contains(t, "Bash") {
			return false
		}
	}
	return true
}

// remoteClass reports whether --http-allow, as o's grant narrows it,
// opens class c as a whole to remote callers (by its name, or an earlier
// release's name for all of it).
func (g *Gate) remoteClass(o *options.CreateOptions, c Class) bool {
	allow := g.remoteAllow(o)
	for _, n := range classNames {
		if n.c == c && slices.Contains(allow, n.name) {
			return true
		}
	}
	return c == ReadsFiles && slices.Contains(allow, "paths")
}

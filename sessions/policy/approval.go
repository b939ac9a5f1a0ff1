package policy

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/options"
)

// Approval is a tool use a caller (or the permission policy) allowed: the
// paths it reaches and the permission updates that would outlive it.
type Approval struct {
	Tool    string
	Paths   []string // the blocked path and the paths of the tool's input
	Updates []claudeagent.PermissionUpdate
}

// ApprovalOf gathers what req's tool use reaches, relative paths taken
// within cwd.
func ApprovalOf(req *claudeagent.CanUseToolRequest, cwd string, updates []claudeagent.PermissionUpdate) Approval {
	a := Approval{Tool: req.ToolName, Updates: updates}
	var input map[string]json.RawMessage
	_ = json.Unmarshal(req.Input, &input)
	for _, key := range []string{"file_path", "path", "notebook_path"} {
		var p string
		if json.Unmarshal(input[key], &p) == nil && p != "" {
			a.Paths = append(a.Paths, p)
		}
	}
	if req.BlockedPath != "" {
		a.Paths = append(a.Paths, req.BlockedPath)
	}
	for i, p := range a.Paths {
		if !filepath.IsAbs(p) {
			a.Paths[i] = filepath.Join(cwd, p)
		}
	}
	return a
}

// CheckApproval bounds an approval by the ceilings: an answer cannot give
// a session what the operator's policy would refuse in its options. A
// path outside --allowed-roots (or, for a remote caller without
// reads-files, outside the session's own directories) refuses the
// approval; permission updates that would outlast the tool use are kept
// only where the same option would pass the gate — allow rules within the
// tools ceiling (and, over HTTP, with widens-permissions), directories
// within the roots — and the rest are dropped, so the use is allowed once.
func (g *Gate) CheckApproval(o *options.CreateOptions, cwd string, a Approval) ([]claudeagent.PermissionUpdate, error) {
	for _, p := range a.Paths {
		if err := g.approvedPath(o, cwd, p); err != nil {
			return nil, fmt.Errorf("%s reaches %s: %w", a.Tool, p, err)
		}
	}
	var kept []claudeagent.PermissionUpdate
	for _, u := range a.Updates {
		if g.updateAllowed(o, cwd, u) {
			kept = append(kept, u)
		}
	}
	return kept, nil
}

// approvedPath checks a path an approved tool use reaches.
func (g *Gate) approvedPath(o *options.CreateOptions, cwd, p string) error {
	if err := g.CheckPath("the path", p); err != nil {
		return err
	}
	if !g.cfg.Remote || g.remoteClass(o, ReadsFiles) {
		return nil
	}
	own := append([]string{cwd, o.Cwd}, o.AddDirs...)
	for _, dir := range own {
		if dir != "" && within(dir, p) {
			return nil
		}
	}
	return fmt.Errorf("it is outside the session's own directories, and this server does not let remote callers reach others (--http-allow reads-files)")
}

// updateAllowed reports whether a permission update may last for the
// session.
func (g *Gate) updateAllowed(o *options.CreateOptions, cwd string, u claudeagent.PermissionUpdate) bool {
	var body struct {
		Rules []struct {
			ToolName string `json:"toolName"`
		} `json:"rules"`
		Directories []string `json:"directories"`
	}
	if json.Unmarshal(u.Raw, &body) != nil {
		return false
	}
	switch {
	case u.Type == "addRules" && (u.Behavior == "allow" || u.Behavior == ""):
		if g.cfg.Remote && !g.remoteClass(o, WidensPermissions) {
			return false
		}
		for _, r := range body.Rules {
			name, _, _ := strings.Cut(r.ToolName, "(")
			if c := g.cfg.ToolsCeiling; c != nil && !strings.HasPrefix(name, "mcp__") && !slices.Contains(c, name) {
				return false
			}
		}
		return true
	case u.Type == "addDirectories":
		for _, d := range body.Directories {
			if g.approvedPath(o, cwd, d) != nil {
				return false
			}
		}
		return true
	}
	return false // modes, removals, replacements: never through an answer
}

// within reports whether p lies in dir (resolved through links where they
// exist).
func within(dir, p string) bool {
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		dir = r
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	return inside(dir, p)
}

// Bound keeps an allow within the ceilings (CheckApproval), whoever gave
// it — the caller through elicitation or the dashboard, or the permission
// policy: a path beyond them turns it into a denial, and permission
// updates beyond them are dropped (the use is allowed once). why says what
// was changed, for the log ("" for nothing).
func (g *Gate) Bound(o *options.CreateOptions, cwd string, c *claudeagent.CanUseToolRequest, res *claudeagent.PermissionResult) (out *claudeagent.PermissionResult, why string) {
	if res.Behavior != "allow" {
		return res, ""
	}
	kept, err := g.CheckApproval(o, cwd, ApprovalOf(c, cwd, res.UpdatedPermissions))
	if err != nil {
		return claudeagent.Deny(fmt.Sprintf("Permission to use %s was denied by the server's policy, whoever allowed it: %v.", c.ToolName, err)),
			"an approval reaches beyond the server's policy; denied: " + err.Error()
	}
	if len(kept) < len(res.UpdatedPermissions) {
		why = "an approval's lasting permissions reach beyond the server's policy; allowed once"
	}
	bounded := *res
	bounded.UpdatedPermissions = kept
	return &bounded, why
}

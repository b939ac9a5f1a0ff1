package policy

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/options"
)

func update(t *testing.T, v map[string]any) claudeagent.PermissionUpdate {
	t.Helper()
	raw, _ := json.Marshal(v)
	var u claudeagent.PermissionUpdate
	if err := json.Unmarshal(raw, &u); err != nil {
		t.Fatal(err)
	}
	return u
}

// TestCheckApproval: an approval cannot reach beyond the ceilings
// (docs/security.md's "What they cannot" says --allowed-roots and --http-allow bound
// what a caller approves too).
func TestCheckApproval(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	bash := update(t, map[string]any{"type": "addRules", "behavior": "allow", "destination": "session", "rules": []any{map[string]any{"toolName": "Bash", "ruleContent": "git:*"}}})
	read := update(t, map[string]any{"type": "addRules", "behavior": "allow", "destination": "session", "rules": []any{map[string]any{"toolName": "Read"}}})
	dirIn := update(t, map[string]any{"type": "addDirectories", "destination": "session", "directories": []string{root}})
	dirOut := update(t, map[string]any{"type": "addDirectories", "destination": "session", "directories": []string{outside}})
	mode := update(t, map[string]any{"type": "setMode", "mode": "bypassPermissions", "destination": "session"})
	readOf := func(p string) *claudeagent.CanUseToolRequest {
		in, _ := json.Marshal(map[string]string{"file_path": p})
		return &claudeagent.CanUseToolRequest{ToolName: "Read", Input: in}
	}
	o := &options.CreateOptions{Cwd: root}
	for _, tc := range []struct {
		name    string
		cfg     Config
		req     *claudeagent.CanUseToolRequest
		updates []claudeagent.PermissionUpdate
		kept    int
		err     string
	}{
		{"local, no ceilings", Config{}, readOf(filepath.Join(outside, "f")), []claudeagent.PermissionUpdate{read, dirOut}, 2, ""},
		{"outside the roots", Config{AllowedRoots: []string{root}}, readOf(filepath.Join(outside, "f")), nil, 0, "is outside the directories this server allows"},
		{"relative path out of the roots", Config{AllowedRoots: []string{root}}, readOf("../" + filepath.Base(outside) + "/f"), nil, 0, "is outside"},
		{"blocked path outside", Config{AllowedRoots: []string{root}}, &claudeagent.CanUseToolRequest{ToolName: "Bash", Input: json.RawMessage(`{}`), BlockedPath: outside}, nil, 0, "is outside"},
		{"inside the roots", Config{AllowedRoots: []string{root}}, readOf(filepath.Join(root, "f")), []claudeagent.PermissionUpdate{read, dirIn, dirOut, mode}, 2, ""},
		{"rule beyond the tools ceiling", Config{ToolsCeiling: []string{"Read"}}, readOf(filepath.Join(root, "f")), []claudeagent.PermissionUpdate{bash, read}, 1, ""},
		{"remote without widens-permissions", Config{Remote: true}, readOf(filepath.Join(root, "f")), []claudeagent.PermissionUpdate{read, dirIn}, 1, ""},
		{"remote with widens-permissions", Config{Remote: true, RemoteAllow: []string{"widens-permissions"}}, readOf(filepath.Join(root, "f")), []claudeagent.PermissionUpdate{read}, 1, ""},
		{"remote outside its directories", Config{Remote: true}, readOf(filepath.Join(outside, "f")), nil, 0, "outside the session's own directories"},
		{"remote with reads-files", Config{Remote: true, RemoteAllow: []string{"reads-files"}}, readOf(filepath.Join(outside, "f")), nil, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kept, err := New(tc.cfg).CheckApproval(o, root, ApprovalOf(tc.req, root, tc.updates))
			if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("CheckApproval = %v, want %q", err, tc.err)
			}
			if len(kept) != tc.kept {
				t.Errorf("kept %d updates (%v), want %d", len(kept), kept, tc.kept)
			}
			for _, u := range kept {
				if u.Type == "setMode" {
					t.Errorf("a mode change was kept")
				}
			}
		})
	}
}

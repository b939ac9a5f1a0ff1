package policy

import (
	"reflect"
	"strings"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent/ceiling"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/options"
)

// TestGrantNarrowsHTTPAllow: a session's grant (the classes its creator's
// OAuth token's scopes map to) narrows --http-allow, in the gate and in
// the kernel's ceiling alike, and never widens it; the refusal of what
// --http-allow would open names --oauth-scope-classes. No grant is all of
// --http-allow.
func TestGrantNarrowsHTTPAllow(t *testing.T) {
	cwd, other := t.TempDir(), t.TempDir()
	cfg := Config{Kernel: true, Remote: true, RemoteAllow: []string{"reads-files"}}
	grant := func(g ...string) *[]string { return &g }
	for _, tc := range []struct {
		name    string
		allow   []string
		grant   *[]string
		refused string // "" allowed
		files   bool   // the ceiling bounds files to the session's own
	}{
		{"no grant", cfg.RemoteAllow, nil, "", false},
		{"grant within", cfg.RemoteAllow, grant("reads-files"), "", false},
		{"empty grant", cfg.RemoteAllow, grant(), "--oauth-scope-classes", true},
		{"grant of another class", cfg.RemoteAllow, grant("runs-programs"), "--oauth-scope-classes", true},
		{"grant beyond --http-allow", nil, grant("reads-files"), "--http-allow reads-files", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cfg
			c.RemoteAllow = tc.allow
			g := New(c)
			o := options.CreateOptions{Cwd: other, Grant: tc.grant}
			_, err := g.Check(&o, Change{})
			switch {
			case tc.refused == "" && err != nil:
				t.Errorf("Check = %v, want allowed", err)
			case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)):
				t.Errorf("Check = %v, want refused naming %s", err, tc.refused)
			}
			got := g.Ceiling(&options.CreateOptions{Grant: tc.grant, SessionOptions: claudeagent.SessionOptions{}}, cwd)
			want := &ceiling.Ceiling{}
			if tc.files {
				want = &ceiling.Ceiling{Files: true, Write: []string{cwd}}
			}
			if len(got.Write) == 0 {
				got.Write = nil
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Ceiling = %+v, want %+v", got, want)
			}
		})
	}
}

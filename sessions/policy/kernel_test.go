package policy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent/ceiling"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/options"
)

// TestCeiling: the kernel's ceiling of a session follows the operator's
// policy: no programs under a tools ceiling without Bash, or for a remote
// caller without runs-programs whose tools lack Bash; files within the
// roots, or only the session's own directories for a remote caller
// without reads-files.
func TestCeiling(t *testing.T) {
	root, cwd, extra := t.TempDir(), t.TempDir(), t.TempDir()
	settings := filepath.Join(extra, "s.json")
	for _, tc := range []struct {
		name string
		cfg  Config
		opts options.CreateOptions
		want *ceiling.Ceiling
	}{
		{"kernel off", Config{ToolsCeiling: []string{"Read"}}, options.CreateOptions{}, nil},
		{"no policy", Config{Kernel: true}, options.CreateOptions{}, &ceiling.Ceiling{}},
		{"tools ceiling without Bash", Config{Kernel: true, ToolsCeiling: []string{"Read", "Grep"}}, options.CreateOptions{}, &ceiling.Ceiling{NoPrograms: true}},
		{"tools ceiling with Bash", Config{Kernel: true, ToolsCeiling: []string{"Read", "Bash"}}, options.CreateOptions{}, &ceiling.Ceiling{}},
		{"local tools without Bash", Config{Kernel: true}, options.CreateOptions{SessionOptions: claudeagent.SessionOptions{Tools: []string{"Read"}}}, &ceiling.Ceiling{}},
		{"roots", Config{Kernel: true, AllowedRoots: []string{root}}, options.CreateOptions{Cwd: root}, &ceiling.Ceiling{Files: true, Write: []string{root}}},
		{"remote without reads-files", Config{Kernel: true, Remote: true}, options.CreateOptions{Cwd: extra, SessionOptions: claudeagent.SessionOptions{AddDirs: []string{root}, SettingsFile: settings}},
			&ceiling.Ceiling{Files: true, Write: []string{cwd, extra, root}, Read: []string{settings}}},
		{"remote with reads-files", Config{Kernel: true, Remote: true, RemoteAllow: []string{"reads-files"}}, options.CreateOptions{}, &ceiling.Ceiling{}},
		{"remote with reads-files and roots", Config{Kernel: true, Remote: true, RemoteAllow: []string{"reads-files"}, AllowedRoots: []string{root}}, options.CreateOptions{}, &ceiling.Ceiling{Files: true, Write: []string{root}}},
		{"remote tools without Bash", Config{Kernel: true, Remote: true, RemoteAllow: []string{"paths"}}, options.CreateOptions{SessionOptions: claudeagent.SessionOptions{Tools: []string{"Read"}}}, &ceiling.Ceiling{NoPrograms: true}},
		{"remote tools without Bash, runs-programs", Config{Kernel: true, Remote: true, RemoteAllow: []string{"paths", "runs-programs"}}, options.CreateOptions{SessionOptions: claudeagent.SessionOptions{Tools: []string{"Read"}}}, &ceiling.Ceiling{}},
		{"remote default tools", Config{Kernel: true, Remote: true, RemoteAllow: []string{"paths"}}, options.CreateOptions{}, &ceiling.Ceiling{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := New(tc.cfg).Ceiling(&tc.opts, cwd)
			if got != nil && len(got.Write) == 0 {
				got.Write = nil
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Ceiling = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestSettingSourcesNarrowOnly: a session's settingSources lie within the
// operator's --setting-sources; none given, the operator's apply.
func TestSettingSourcesNarrowOnly(t *testing.T) {
	dir := t.TempDir()
	g := New(Config{SettingSources: []string{"user"}})
	for _, tc := range []struct {
		sources []string
		want    string
	}{
		{nil, ""},
		{[]string{}, ""},
		{[]string{"user"}, ""},
		{[]string{"user", "project"}, `settingSources entry "project" is beyond the sources this server lets sessions load (--setting-sources user)`},
	} {
		o := options.CreateOptions{Cwd: dir, SessionOptions: claudeagent.SessionOptions{SettingSources: tc.sources}}
		_, err := g.Check(&o, Change{})
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("settingSources %v: %v, want %q", tc.sources, err, tc.want)
		}
	}
	if got := g.SettingSources(&options.CreateOptions{}); !reflect.DeepEqual(got, []string{"user"}) {
		t.Errorf("sources of a session that names none: %v", got)
	}
	none := New(Config{SettingSources: []string{}})
	o := options.CreateOptions{Cwd: dir, SessionOptions: claudeagent.SessionOptions{SettingSources: []string{"local"}}}
	if _, err := none.Check(&o, Change{}); err == nil || !strings.Contains(err.Error(), "--setting-sources none") {
		t.Errorf("a source under --setting-sources none: %v", err)
	}
}

// TestOutsideRootsOneError: a path outside the roots gets the same error
// whether or not it exists (an error that differs tells a caller what
// lies outside).
func TestOutsideRootsOneError(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	file := filepath.Join(outside, "s.json")
	if err := os.WriteFile(file, []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	g := New(Config{AllowedRoots: []string{root}})
	errText := func(o options.CreateOptions) string {
		_, err := g.Check(&o, Change{})
		if err == nil {
			t.Fatalf("%+v passed the gate", o)
		}
		return strings.ReplaceAll(err.Error(), "missing", "s.json")
	}
	for _, pair := range [][2]options.CreateOptions{
		{{Cwd: outside}, {Cwd: filepath.Join(outside, "missing")}},
		{{Cwd: root, SessionOptions: claudeagent.SessionOptions{AddDirs: []string{outside}}}, {Cwd: root, SessionOptions: claudeagent.SessionOptions{AddDirs: []string{filepath.Join(outside, "missing")}}}},
		{{Cwd: root, SessionOptions: claudeagent.SessionOptions{SettingsFile: file}}, {Cwd: root, SessionOptions: claudeagent.SessionOptions{SettingsFile: filepath.Join(outside, "missing")}}},
	} {
		exists, missing := errText(pair[0]), errText(pair[1])
		if pair[0].Cwd == outside {
			exists = strings.ReplaceAll(exists, outside, filepath.Join(outside, "s.json"))
		}
		if len(pair[0].AddDirs) > 0 {
			exists = strings.ReplaceAll(exists, outside, filepath.Join(outside, "s.json"))
		}
		if exists != missing {
			t.Errorf("outside the roots:\n exists:  %s\n missing: %s", exists, missing)
		}
	}
}

// TestAgentOwnOnly: agent and settings.agent name one of the session's own
// agents, never one the CLI would load from a directory.
func TestAgentOwnOnly(t *testing.T) {
	dir := t.TempDir()
	own, _ := json.Marshal(map[string]any{"r": map[string]any{"description": "d", "prompt": "p"}})
	file := filepath.Join(dir, "settings.json")
	if err := os.WriteFile(file, []byte(`{"agent":"evil"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	g := New(Config{})
	for _, tc := range []struct {
		so   claudeagent.SessionOptions
		want string
	}{
		{claudeagent.SessionOptions{Agent: "r", Agents: own}, ""},
		{claudeagent.SessionOptions{Agent: "evil"}, `agent "evil" is not one of the session's own agents`},
		{claudeagent.SessionOptions{Agent: "evil", Agents: own}, `agent "evil" is not one of the session's own agents`},
		{claudeagent.SessionOptions{Settings: json.RawMessage(`{"agent":"evil"}`)}, `settings.agent "evil"`},
		{claudeagent.SessionOptions{Settings: json.RawMessage(`{"agent":"r"}`), Agents: own}, ""},
		{claudeagent.SessionOptions{Settings: json.RawMessage(`{"agent":5}`)}, "settings.agent must be the name"},
		{claudeagent.SessionOptions{SettingsFile: file}, `settings.agent "evil"`},
	} {
		o := options.CreateOptions{Cwd: dir, SessionOptions: tc.so}
		_, err := g.Check(&o, Change{})
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.so, err, tc.want)
		}
	}
}

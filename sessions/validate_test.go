package sessions

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
)

// ---------------------------------------------------------------------------
// Validation

func TestValidateModel(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"", "opus", "sonnet", "haiku", "claude-sonnet-4-5", "claude-opus-4-8[1m]", "claude-3.5_x", strings.Repeat("a", 100)} {
		if err := ValidateModel(ok); err != nil {
			t.Errorf("ValidateModel(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"has space", "semi;colon", "quote\"", "new\nline", "slash/x", strings.Repeat("a", 101), "émoji"} {
		err := ValidateModel(bad)
		if err == nil || !strings.Contains(err.Error(), "invalid model") || !strings.Contains(err.Error(), "opus, sonnet, haiku") {
			t.Errorf("ValidateModel(%q) = %v", bad, err)
		}
	}
}

func TestValidatePermissionMode(t *testing.T) {
	t.Parallel()
	for _, ok := range append([]string{""}, PermissionModes...) {
		if err := ValidatePermissionMode(ok); err != nil {
			t.Errorf("ValidatePermissionMode(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"Default", "bypass", "yolo", " plan", "acceptedits"} {
		err := ValidatePermissionMode(bad)
		if err == nil || !strings.Contains(err.Error(), strings.Join(PermissionModes, ", ")) {
			t.Errorf("ValidatePermissionMode(%q) = %v", bad, err)
		}
	}
}

func TestValidateDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		in, want, errPart string
	}{
		{dir, dir, ""},
		{dir + "/./sub/..", dir, ""},
		{dir + "/", dir, ""},
		{"relative/dir", "", "not an absolute path"},
		{"", "", "not an absolute path"},
		{filepath.Join(dir, "missing"), "", "does not exist"},
		{file, "", "not a directory"},
	} {
		got, err := ValidateDir("cwd", tc.in)
		switch {
		case tc.errPart == "" && (err != nil || got != tc.want):
			t.Errorf("ValidateDir(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		case tc.errPart != "" && (err == nil || !strings.Contains(err.Error(), tc.errPart) || !strings.HasPrefix(err.Error(), "cwd ")):
			t.Errorf("ValidateDir(%q) = %q, %v; want an error about %q", tc.in, got, err, tc.errPart)
		}
	}
}

func TestValidateToolRules(t *testing.T) {
	t.Parallel()
	if err := ValidateToolRules("allowedTools", []string{"Bash", "Bash(git:*)", "Edit", "mcp__srv__tool", "Read(./src/**)", "WebFetch(domain:example.com)", "*"}); err != nil {
		t.Errorf("valid rules: %v", err)
	}
	if err := ValidateToolRules("allowedTools", nil); err != nil {
		t.Errorf("no rules: %v", err)
	}
	for _, bad := range []string{"", "Bash git", "Bash(x)y", "Bash(\n)", "Ba,sh", "(x)", "Bash;rm"} {
		err := ValidateToolRules("disallowedTools", []string{"Edit", bad})
		if err == nil || !strings.Contains(err.Error(), "invalid disallowedTools entry") {
			t.Errorf("ValidateToolRules(%q) = %v", bad, err)
		}
	}
}

func TestValidateMCPServers(t *testing.T) {
	t.Parallel()
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	for _, tc := range []struct {
		name    string
		servers map[string]json.RawMessage
		errPart string
	}{
		{"none", nil, ""},
		{"stdio", map[string]json.RawMessage{"fs": raw(`{"command":"npx","args":["-y","srv"],"env":{"A":"b"}}`)}, ""},
		{"stdio_typed", map[string]json.RawMessage{"fs": raw(`{"type":"stdio","command":"srv"}`)}, ""},
		{"http", map[string]json.RawMessage{"web": raw(`{"type":"http","url":"https://example.com/mcp"}`)}, ""},
		{"sse", map[string]json.RawMessage{"web": raw(`{"type":"sse","url":"http://localhost:1/sse"}`)}, ""},
		{"no_command", map[string]json.RawMessage{"fs": raw(`{"args":["x"]}`)}, `a stdio server needs "command"`},
		{"http_no_url", map[string]json.RawMessage{"web": raw(`{"type":"http"}`)}, `needs an http(s) "url"`},
		{"http_bad_url", map[string]json.RawMessage{"web": raw(`{"type":"http","url":"ftp://x"}`)}, `needs an http(s) "url"`},
		{"bad_type", map[string]json.RawMessage{"x": raw(`{"type":"websocket","url":"https://x"}`)}, "not one of stdio, http, sse"},
		{"not_object", map[string]json.RawMessage{"x": raw(`"npx srv"`)}, `invalid mcpServers["x"]`},
		{"bad_args", map[string]json.RawMessage{"x": raw(`{"command":"a","args":"b"}`)}, `invalid mcpServers["x"]`},
		{"empty_name", map[string]json.RawMessage{"": raw(`{"command":"a"}`)}, "empty name"},
	} {
		err := ValidateMCPServers(tc.servers)
		doc := mcpConfig(tc.servers, false)
		if tc.errPart != "" {
			if err == nil || !strings.Contains(err.Error(), tc.errPart) {
				t.Errorf("%s: err = %v, want %q", tc.name, err, tc.errPart)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if len(tc.servers) == 0 {
			if doc != "" {
				t.Errorf("%s: doc = %q", tc.name, doc)
			}
			continue
		}
		var parsed struct {
			MCPServers map[string]json.RawMessage `json:"mcpServers"`
		}
		if err := json.Unmarshal([]byte(doc), &parsed); err != nil || len(parsed.MCPServers) != len(tc.servers) {
			t.Errorf("%s: doc = %s (%v)", tc.name, doc, err)
		}
		for k, v := range tc.servers {
			var a, b any
			_ = json.Unmarshal(v, &a)
			_ = json.Unmarshal(parsed.MCPServers[k], &b)
			if !reflect.DeepEqual(a, b) {
				t.Errorf("%s: server %q = %s, want %s", tc.name, k, parsed.MCPServers[k], v)
			}
		}
	}
}

func TestValidateCreateOptions(t *testing.T) {
	t.Parallel()
	m := NewManager(Config{})
	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		opts    CreateOptions
		errPart string
	}{
		{"ok", CreateOptions{SessionOptions: claudeagent.SessionOptions{Model: "sonnet", PermissionMode: "plan", AllowedTools: []string{"Bash(git:*)"}}, Cwd: dir}, ""},
		{"bad_mode", CreateOptions{SessionOptions: claudeagent.SessionOptions{PermissionMode: "yolo"}, Cwd: dir}, "invalid permissionMode"},
		{"bad_allowed", CreateOptions{SessionOptions: claudeagent.SessionOptions{AllowedTools: []string{"a b"}}, Cwd: dir}, "invalid allowedTools entry"},
		{"bad_disallowed", CreateOptions{SessionOptions: claudeagent.SessionOptions{DisallowedTools: []string{"a b"}}, Cwd: dir}, "invalid disallowedTools entry"},
		{"neg_turns", CreateOptions{SessionOptions: claudeagent.SessionOptions{MaxTurns: -1}, Cwd: dir}, "invalid maxTurns"},
		{"fork_alone", CreateOptions{Cwd: dir, ForkSession: true}, "forkSession needs resumeSessionId"},
		{"bad_resume", CreateOptions{Cwd: dir, ResumeSessionID: "--help"}, "invalid resumeSessionId"},
		{"relative_cwd", CreateOptions{Cwd: "x"}, "cwd \"x\" is not an absolute path"},
		{"bad_add_dir", CreateOptions{SessionOptions: claudeagent.SessionOptions{AddDirs: []string{"/does/not/exist"}}, Cwd: dir}, "addDirs entry"},
	} {
		opts := tc.opts
		err := m.Validate(&opts)
		if (err == nil) != (tc.errPart == "") || (err != nil && !strings.Contains(err.Error(), tc.errPart)) {
			t.Errorf("%s: Validate = %v, want %q", tc.name, err, tc.errPart)
		}
	}
	opts := CreateOptions{}
	if err := m.Validate(&opts); err != nil || opts.Cwd == "" {
		t.Errorf("empty cwd: %v, cwd %q (want the server's)", err, opts.Cwd)
	}
}

func TestAllowedRoots(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	inside := filepath.Join(root, "project")
	outside := t.TempDir()
	sibling := root + "-evil" // shares root's prefix
	for _, d := range []string{inside, sibling, filepath.Join(outside, "sub")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { os.RemoveAll(sibling) })
	escape := filepath.Join(root, "escape")
	if err := os.Symlink(outside, escape); err != nil {
		t.Skipf("symlinks: %v", err)
	}
	m := newManager(t, Config{AllowedRoots: []string{root}})
	for _, dir := range []string{root, inside} {
		opts := CreateOptions{Cwd: dir}
		if err := m.Validate(&opts); err != nil {
			t.Errorf("cwd %s: %v", dir, err)
		}
	}
	for _, dir := range []string{outside, escape, sibling, filepath.Join(escape, "sub")} {
		opts := CreateOptions{Cwd: dir}
		err := m.Validate(&opts)
		if err == nil || !strings.Contains(err.Error(), "outside the directories this server allows") || !strings.Contains(err.Error(), root) {
			t.Errorf("cwd %s: %v, want a refusal naming the root", dir, err)
		}
	}
	opts := CreateOptions{SessionOptions: claudeagent.SessionOptions{AddDirs: []string{inside, escape}}, Cwd: inside}
	if err := m.Validate(&opts); err == nil || !strings.Contains(err.Error(), "addDirs entry") {
		t.Errorf("addDirs escaping: %v", err)
	}
	if _, err := m.Create(ctxFor(t), CreateOptions{Cwd: escape}); err == nil {
		t.Errorf("Create accepted a cwd outside the roots")
	}
	if n := m.Count(); n != 0 {
		t.Errorf("Count = %d after refusals", n)
	}
	s := create(t, m, CreateOptions{Cwd: inside})
	if got := s.Info().Cwd; got != inside {
		t.Errorf("Cwd = %q", got)
	}
}

func TestMaxDepth(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		depth, max int
		refused    bool
	}{{0, 0, false}, {5, 0, false}, {1, 2, false}, {2, 2, true}, {3, 2, true}} {
		m := newManager(t, Config{Depth: tc.depth, MaxDepth: tc.max})
		s, err := m.Create(ctxFor(t), CreateOptions{Cwd: t.TempDir()})
		if tc.refused {
			if !errors.Is(err, ErrDepthExceeded) || !strings.Contains(err.Error(), fmt.Sprintf("--max-depth is %d", tc.max)) {
				t.Errorf("depth %d max %d: %v, want ErrDepthExceeded", tc.depth, tc.max, err)
			}
			if m.Count() != 0 || m.LiveCount() != 0 {
				t.Errorf("depth %d max %d: a refused create left a session", tc.depth, tc.max)
			}
			continue
		}
		if err != nil || s == nil {
			t.Errorf("depth %d max %d: %v", tc.depth, tc.max, err)
		}
	}
}

func TestAllowedModes(t *testing.T) {
	t.Parallel()
	m := newManager(t, Config{AllowedModes: []string{"default", "plan"}})
	_, err := m.Create(ctxFor(t), CreateOptions{SessionOptions: claudeagent.SessionOptions{PermissionMode: "acceptEdits"}, Cwd: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), `permissionMode "acceptEdits" is not allowed by this server (allowed: default, plan; --allowed-permission-modes)`) {
		t.Errorf("Create(acceptEdits): %v", err)
	}
	if m.BypassAvailable() {
		t.Errorf("BypassAvailable with bypassPermissions not allowed")
	}
	s := create(t, m, CreateOptions{SessionOptions: claudeagent.SessionOptions{PermissionMode: "plan"}})
	if got := s.Info().PermissionMode; got != "plan" {
		t.Errorf("PermissionMode = %q", got)
	}
	if err := s.SetPermissionMode(ctxFor(t), "acceptEdits"); err == nil || !strings.Contains(err.Error(), "not allowed") {
		t.Errorf("SetPermissionMode(acceptEdits): %v", err)
	}
	if err := s.SetPermissionMode(ctxFor(t), "default"); err != nil {
		t.Errorf("SetPermissionMode(default): %v", err)
	}
	if got := s.Info().PermissionMode; got != "default" {
		t.Errorf("PermissionMode = %q after switching", got)
	}
}

// Not parallel: it changes the process environment.
func TestBypassAvailability(t *testing.T) {
	t.Setenv("IS_SANDBOX", "")
	plain := NewManager(Config{})
	sandboxed := NewManager(Config{Env: map[string]string{"IS_SANDBOX": "1"}})
	if !sandboxed.BypassAvailable() {
		t.Errorf("with IS_SANDBOX=1 in the CLI env, bypassPermissions is unavailable")
	}
	opts := CreateOptions{SessionOptions: claudeagent.SessionOptions{PermissionMode: "bypassPermissions"}, Cwd: t.TempDir()}
	err := plain.Validate(&opts)
	if os.Geteuid() != 0 {
		if !plain.BypassAvailable() || err != nil {
			t.Errorf("not root: BypassAvailable %v, Validate %v", plain.BypassAvailable(), err)
		}
		return
	}
	if plain.BypassAvailable() {
		t.Errorf("as root without IS_SANDBOX, BypassAvailable = true")
	}
	if err == nil || !strings.Contains(err.Error(), "IS_SANDBOX=1") || !strings.Contains(err.Error(), "root") {
		t.Errorf("Validate(bypassPermissions) as root = %v", err)
	}
	t.Setenv("IS_SANDBOX", "1")
	if !plain.BypassAvailable() {
		t.Errorf("with IS_SANDBOX=1 in the server env, bypassPermissions is unavailable")
	}
}

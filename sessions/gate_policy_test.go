package sessions

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/images"
)

// raw is a JSON value for tests.
func raw(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// hookAgent is an agent that runs commands: a SessionStart hook and a
// command MCP server (the adversarial pass's payload).
var hookAgent = map[string]any{"x": map[string]any{
	"description": "d", "prompt": "p",
	"hooks":      map[string]any{"SessionStart": []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": "touch /tmp/pwned"}}}}},
	"mcpServers": []any{map[string]any{"evil": map[string]any{"command": "/bin/sh", "args": []string{"-c", "touch /tmp/pwned2"}}}},
}}

// TestGateCeilingsInsideAgentsAndSettings: the operator's ceilings apply
// inside agents and settings, on stdio as over HTTP (defect 2: an agent's
// hooks and MCP servers ran past every ceiling).
func TestGateCeilingsInsideAgentsAndSettings(t *testing.T) {
	strict := Config{ToolsCeiling: []string{"Read", "Grep", "Glob"}, NoSessionMCPServers: true, AllowedModes: []string{"default", "plan"}}
	settingsFile := filepath.Join(t.TempDir(), "settings.json")
	if err := os.WriteFile(settingsFile, raw(map[string]any{"statusLine": map[string]any{"type": "command", "command": "id"}}), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		opts claudeagent.SessionOptions
		want string // "" is allowed
	}{
		{"agent hooks under a ceiling", strict, claudeagent.SessionOptions{Agents: raw(map[string]any{"x": map[string]any{"description": "d", "prompt": "p", "hooks": map[string]any{}}}), Agent: "x"}, `agents["x"].hooks runs a program`},
		{"agent command MCP server", Config{NoSessionMCPServers: true}, claudeagent.SessionOptions{Agents: raw(hookAgent)}, `agents["x"].mcpServers["evil"] (a command) runs a command`},
		{"the adversarial payload", strict, claudeagent.SessionOptions{Agents: raw(hookAgent), Agent: "x"}, `agents["x"].hooks`},
		{"agent bypass mode", strict, claudeagent.SessionOptions{Agents: raw(map[string]any{"x": map[string]any{"description": "d", "prompt": "p", "permissionMode": "bypassPermissions"}})}, `agents["x"].permissionMode "bypassPermissions" is not allowed`},
		{"agent tools beyond the ceiling", strict, claudeagent.SessionOptions{Agents: raw(map[string]any{"x": map[string]any{"description": "d", "prompt": "p", "tools": []string{"Read", "Bash"}}})}, `agents["x"].tools entry "Bash" is beyond the tools this server allows`},
		{"agent tools beyond the session's", Config{}, claudeagent.SessionOptions{Tools: []string{"Read"}, Agents: raw(map[string]any{"x": map[string]any{"description": "d", "prompt": "p", "tools": []string{"Edit"}}})}, `is beyond the session's own tools`},
		{"agent tools within the session's", Config{}, claudeagent.SessionOptions{Tools: []string{"Read", "Grep"}, Agents: raw(map[string]any{"x": map[string]any{"description": "d", "prompt": "p", "tools": []string{"Grep"}}})}, ""},
		{"agent unknown field under a ceiling", strict, claudeagent.SessionOptions{Agents: raw(map[string]any{"x": map[string]any{"description": "d", "prompt": "p", "spawnsThings": true}})}, `agents["x"].spawnsThings is not known to this server's policy`},
		{"harmless agent under a ceiling", strict, claudeagent.SessionOptions{Agents: raw(map[string]any{"x": map[string]any{"description": "d", "prompt": "p", "model": "haiku", "tools": []string{"Read"}}}), Agent: "x"}, ""},
		{"settings hooks under a ceiling", strict, claudeagent.SessionOptions{Settings: raw(map[string]any{"hooks": map[string]any{}})}, `settings.hooks runs a program`},
		{"settings file with a status line", strict, claudeagent.SessionOptions{SettingsFile: settingsFile}, `settings.statusLine runs a program`},
		{"settings file given as settings", strict, claudeagent.SessionOptions{Settings: raw(settingsFile)}, `settings.statusLine runs a program`},
		{"settings file given twice", Config{}, claudeagent.SessionOptions{Settings: raw(settingsFile), SettingsFile: settingsFile}, `settings and settingsFile both given`},
		{"settings allow beyond the ceiling", strict, claudeagent.SessionOptions{Settings: raw(map[string]any{"permissions": map[string]any{"allow": []string{"Bash(rm:*)"}}})}, `settings.permissions.allow entry "Bash(rm:*)" names a tool beyond`},
		{"settings default mode", strict, claudeagent.SessionOptions{Settings: raw(map[string]any{"permissions": map[string]any{"defaultMode": "acceptEdits"}})}, `settings.permissions.defaultMode "acceptEdits" is not allowed`},
		{"settings deny rules under a ceiling", strict, claudeagent.SessionOptions{Settings: raw(map[string]any{"permissions": map[string]any{"deny": []string{"Bash"}}})}, ""},
		{"settings unknown key under a ceiling", strict, claudeagent.SessionOptions{Settings: raw(map[string]any{"brandNewHelper": "x"})}, `settings.brandNewHelper is not known to this server's policy`},
		{"settings unknown key without ceilings", Config{}, claudeagent.SessionOptions{Settings: raw(map[string]any{"brandNewHelper": "x"})}, ""},
		{"plugins under a ceiling", strict, claudeagent.SessionOptions{Plugins: []string{os.TempDir()}}, `plugins runs a program`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newManager(t, tc.cfg)
			opts := CreateOptions{Cwd: t.TempDir(), SessionOptions: tc.opts}
			err := m.Validate(&opts)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
	// A session persisted before settingsFile holds the file's path in
	// settings; every start of its process is gated on the file's content.
	m := newManager(t, strict)
	opts := CreateOptions{Cwd: t.TempDir(), SessionOptions: claudeagent.SessionOptions{Settings: raw(settingsFile)}}
	if _, err := m.admit(&opts); err == nil || !strings.Contains(err.Error(), `settings.statusLine runs a program`) {
		t.Errorf("a persisted settings path: admit = %v, want the file's status line refused", err)
	}
}

// TestGateRemote: a remote caller gets only harmless options unless
// --http-allow names the class (or an earlier release's name for it);
// paths are open when --allowed-roots bounds them.
func TestGateRemote(t *testing.T) {
	root := t.TempDir()
	wd, _ := os.Getwd()
	denyFile, envFile := filepath.Join(root, "deny.json"), filepath.Join(root, "env.json")
	for file, settings := range map[string]any{denyFile: map[string]any{"permissions": map[string]any{"deny": []string{"Bash"}}}, envFile: map[string]any{"env": map[string]any{"A": "b"}}} {
		if err := os.WriteFile(file, raw(settings), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name  string
		allow []string
		roots []string
		opts  CreateOptions
		want  string
	}{
		{"harmless options", nil, nil, CreateOptions{SessionOptions: claudeagent.SessionOptions{Model: "haiku", Effort: "low", Tools: []string{"Read"}, DisallowedTools: []string{"Bash"}, Name: "n"}}, ""},
		{"cwd elsewhere", nil, nil, CreateOptions{Cwd: root}, "--http-allow reads-files (or paths), or bound the paths with --allowed-roots"},
		{"cwd within the roots", nil, []string{root}, CreateOptions{Cwd: root}, ""},
		{"addDirs with paths", []string{"paths"}, nil, CreateOptions{Cwd: root, SessionOptions: claudeagent.SessionOptions{AddDirs: []string{root}}}, ""},
		{"allowedTools", nil, nil, CreateOptions{SessionOptions: claudeagent.SessionOptions{AllowedTools: []string{"Bash"}}}, "allowedTools is off over HTTP"},
		{"allowedTools allowed", []string{"widens-permissions"}, nil, CreateOptions{SessionOptions: claudeagent.SessionOptions{AllowedTools: []string{"Bash"}}}, ""},
		{"acceptEdits", nil, nil, CreateOptions{SessionOptions: claudeagent.SessionOptions{PermissionMode: "acceptEdits"}}, "permissionMode acceptEdits is off over HTTP"},
		{"plan", nil, nil, CreateOptions{SessionOptions: claudeagent.SessionOptions{PermissionMode: "plan"}}, ""},
		{"agent hooks", nil, nil, CreateOptions{SessionOptions: claudeagent.SessionOptions{Agents: raw(hookAgent), Agent: "x"}}, `agents["x"].hooks is off over HTTP`},
		{"agent hooks with runs-programs", []string{"runs-programs"}, nil, CreateOptions{SessionOptions: claudeagent.SessionOptions{Agents: raw(hookAgent), Agent: "x"}}, ""},
		{"agent MCP server with mcp-servers only", []string{"mcp-servers"}, nil, CreateOptions{SessionOptions: claudeagent.SessionOptions{Agents: raw(hookAgent)}}, `agents["x"].hooks is off over HTTP`},
		{"settings deny rules", nil, nil, CreateOptions{SessionOptions: claudeagent.SessionOptions{Settings: raw(map[string]any{"permissions": map[string]any{"deny": []string{"Bash"}}})}}, ""},
		{"settings env", nil, nil, CreateOptions{SessionOptions: claudeagent.SessionOptions{Settings: raw(map[string]any{"env": map[string]any{"NODE_OPTIONS": "--require /tmp/x.js"}})}}, "settings.env is off over HTTP"},
		{"settings env with settings", []string{"settings"}, nil, CreateOptions{SessionOptions: claudeagent.SessionOptions{Settings: raw(map[string]any{"env": map[string]any{"A": "b"}})}}, ""},
		{"settings unknown key", []string{"runs-programs", "reads-files", "widens-permissions"}, nil, CreateOptions{SessionOptions: claudeagent.SessionOptions{Settings: raw(map[string]any{"brandNewHelper": "x"})}}, "settings.brandNewHelper is not known to this server's policy, so it is refused over HTTP (--http-allow settings opens it)"},
		{"settings file outside the roots", []string{"reads-files"}, nil, CreateOptions{SessionOptions: claudeagent.SessionOptions{SettingsFile: denyFile}}, "settings file " + strconv.Quote(denyFile) + " is outside the directories this server allows"},
		{"settings file in the roots", nil, []string{root}, CreateOptions{SessionOptions: claudeagent.SessionOptions{SettingsFile: denyFile}}, ""},
		{"settings file with env", nil, []string{root}, CreateOptions{SessionOptions: claudeagent.SessionOptions{SettingsFile: envFile}}, "settings.env is off over HTTP"},
		{"plugins", nil, nil, CreateOptions{SessionOptions: claudeagent.SessionOptions{Plugins: []string{wd}}}, "plugins is off over HTTP: it reaches files and runs programs"},
		{"plugins outside the roots", []string{"runs-programs", "reads-files"}, nil, CreateOptions{SessionOptions: claudeagent.SessionOptions{Plugins: []string{root}}}, "outside the directories this server allows"},
		{"plugins in the roots", []string{"runs-programs"}, []string{root}, CreateOptions{SessionOptions: claudeagent.SessionOptions{Plugins: []string{root}}}, ""},
		{"profile", nil, nil, CreateOptions{Profile: "p"}, "--http-allow widens-permissions (or profiles)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			roots := tc.roots
			if tc.opts.Cwd == "" {
				roots = append(roots, wd)
			}
			m := newManager(t, Config{Remote: true, RemoteAllow: tc.allow, AllowedRoots: roots})
			opts := tc.opts
			opts.Owner = "alice"
			err := m.Validate(&opts)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// TestGateMCPServerFields: an MCP server entry is classified field by field
// (issue 27, defect 1: the headersHelper of an http or sse entry, a shell
// command the CLI runs at session start, ran under the strictest flags,
// through the session's mcpServers and an agent's), and an entry's URL to
// an internal address needs --http-allow internal-urls over HTTP.
func TestGateMCPServerFields(t *testing.T) {
	strict := Config{ToolsCeiling: []string{"Read", "Grep", "Glob"}, NoSessionMCPServers: true, AllowedModes: []string{"default", "plan"}}
	helper := map[string]json.RawMessage{"h": raw(map[string]any{"type": "http", "url": "https://mcp.example.com/mcp", "headersHelper": "id > /tmp/F"})}
	sse := map[string]json.RawMessage{"h": raw(map[string]any{"type": "sse", "url": "https://mcp.example.com/sse", "headersHelper": "id > /tmp/F"})}
	agent := raw(map[string]any{"x": map[string]any{"description": "d", "prompt": "p", "mcpServers": []any{map[string]any{"h": map[string]any{"type": "http", "url": "https://mcp.example.com/mcp", "headersHelper": "id"}}}}})
	metadata := map[string]json.RawMessage{"m": raw(map[string]any{"type": "http", "url": "http://169.254.169.254/latest/meta-data/"})}
	wd, _ := os.Getwd()
	for _, tc := range []struct {
		name string
		cfg  Config
		opts CreateOptions
		want string // "" is allowed
	}{
		{"http headersHelper, strict flags", strict, CreateOptions{MCPServers: helper}, `mcpServers["h"].headersHelper runs a command`},
		{"sse headersHelper, tools ceiling", Config{ToolsCeiling: []string{"Read"}}, CreateOptions{MCPServers: sse}, `mcpServers["h"].headersHelper runs a program`},
		{"agent's http headersHelper, strict flags", strict, CreateOptions{SessionOptions: claudeagent.SessionOptions{Agents: agent}}, `agents["x"].mcpServers["h"].headersHelper runs a command`},
		{"http headersHelper over HTTP", Config{Remote: true, AllowedRoots: []string{wd}}, CreateOptions{Owner: "alice", MCPServers: helper}, `mcpServers["h"].headersHelper is off over HTTP: it runs programs`},
		{"metadata URL over HTTP", Config{Remote: true, AllowedRoots: []string{wd}}, CreateOptions{Owner: "alice", MCPServers: metadata}, `mcpServers["m"].url 169.254.169.254 is off over HTTP: it reaches the server's own machine or internal network; the operator enables it with --http-allow internal-urls`},
		{"metadata URL with internal-urls", Config{Remote: true, RemoteAllow: []string{"internal-urls"}, AllowedRoots: []string{wd}}, CreateOptions{Owner: "alice", MCPServers: metadata}, ""},
		{"metadata URL on stdio", strict, CreateOptions{MCPServers: metadata}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newManager(t, tc.cfg)
			opts := tc.opts
			if tc.cfg.Remote {
				opts.Cwd = wd
			} else {
				opts.Cwd = t.TempDir()
			}
			err := m.Validate(&opts)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// TestGateModeSwitch: a mode switch passes the same gate as create: over
// HTTP a mode that skips questions needs --http-allow, and the allowed
// modes bind everyone (defect 2: claude_chat_mode to bypassPermissions was
// accepted over HTTP).
func TestGateModeSwitch(t *testing.T) {
	dir := t.TempDir()
	m := newManager(t, Config{Remote: true, AllowedRoots: []string{dir}})
	s := create(t, m, CreateOptions{Cwd: dir, Owner: "alice"})
	for _, mode := range []string{"bypassPermissions", "acceptEdits", "auto"} {
		if err := s.SetPermissionMode(ctxFor(t), mode); err == nil || !strings.Contains(err.Error(), "off over HTTP") {
			t.Errorf("switching to %s over HTTP = %v, want refused", mode, err)
		}
	}
	if got := s.Info().PermissionMode; got != "default" {
		t.Errorf("mode after refused switches = %s", got)
	}
	if err := s.SetPermissionMode(ctxFor(t), "plan"); err != nil {
		t.Errorf("switching to plan: %v", err)
	}

	m2 := newManager(t, Config{Remote: true, RemoteAllow: []string{"widens-permissions"}, AllowedRoots: []string{dir}, AllowedModes: []string{"default", "plan", "acceptEdits"}})
	s2 := create(t, m2, CreateOptions{Cwd: dir, Owner: "alice"})
	if err := s2.SetPermissionMode(ctxFor(t), "acceptEdits"); err != nil {
		t.Errorf("acceptEdits with --http-allow widens-permissions: %v", err)
	}
	if err := s2.SetPermissionMode(ctxFor(t), "bypassPermissions"); err == nil || !strings.Contains(err.Error(), "--allowed-permission-modes") {
		t.Errorf("bypassPermissions beyond the allowed modes = %v", err)
	}
}

// TestGateQueryChanges: a query's effort and image files pass the gate.
func TestGateQueryChanges(t *testing.T) {
	dir := t.TempDir()
	m := newManager(t, Config{Remote: true, AllowedRoots: []string{dir}})
	s := create(t, m, CreateOptions{Cwd: dir, Owner: "alice"})
	outside := filepath.Join(t.TempDir(), "x.png")
	if err := os.WriteFile(outside, []byte("\x89PNG\r\n\x1a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LoadImages([]images.Input{{Path: outside}}); err == nil || !strings.Contains(err.Error(), "--allowed-roots") {
		t.Errorf("an image outside the roots = %v", err)
	}
	if _, err := s.Query(ctxFor(t), "hi", QueryOptions{Effort: "huge"}); err == nil || !strings.Contains(err.Error(), "invalid effort") {
		t.Errorf("a query with an invalid effort = %v", err)
	}
}

// TestGateResumeOwnConversation: over HTTP a resume or fork must name a
// conversation its caller made here (defect 3: user B resumed user A's
// conversation and read it through the history).
func TestGateResumeOwnConversation(t *testing.T) {
	dir := t.TempDir()
	m := newManager(t, Config{Remote: true, AllowedRoots: []string{dir}})
	a := create(t, m, CreateOptions{Cwd: dir, Owner: "alice"})
	query(t, a, "hi", QueryOptions{})
	conv := a.Info().ClaudeSessionID
	for _, fork := range []bool{false, true} {
		opts := CreateOptions{Cwd: dir, Owner: "bob", ResumeSessionID: conv, ForkSession: fork}
		if _, err := m.Create(ctxFor(t), opts); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "no conversation of yours") {
			t.Errorf("bob resuming alice's conversation (fork %v) = %v, want refused", fork, err)
		}
	}
	unknown := CreateOptions{Cwd: dir, Owner: "bob", ResumeSessionID: "6f1c2a51-1d7e-4d2b-9a43-0a8f5a2f7e11"}
	if _, err := m.Create(ctxFor(t), unknown); !errors.Is(err, ErrNotFound) {
		t.Errorf("bob resuming a conversation nobody made here = %v, want refused", err)
	}
	fork := create(t, m, CreateOptions{Cwd: dir, Owner: "alice", ResumeSessionID: conv, ForkSession: true})
	if fork.Info().Owner != "alice" {
		t.Fatal("alice's fork has another owner")
	}
	// Closed, the conversation is still alice's.
	if _, err := m.Close(a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Create(ctxFor(t), CreateOptions{Cwd: dir, Owner: "bob", ResumeSessionID: conv}); !errors.Is(err, ErrNotFound) {
		t.Errorf("bob resuming alice's closed conversation = %v, want refused", err)
	}
	create(t, m, CreateOptions{Cwd: dir, Owner: "alice", ResumeSessionID: conv})

	// With a config directory each, the check is the same (the CLI would
	// fail later, with a session left failed).
	own := newManager(t, Config{Remote: true, AllowedRoots: []string{dir}, PerUserConfigDir: t.TempDir()})
	opts := CreateOptions{Cwd: dir, Owner: "bob", ResumeSessionID: conv}
	if err := own.Validate(&opts); !errors.Is(err, ErrNotFound) {
		t.Errorf("a resume of a stranger's conversation with --per-user-config-dir: %v, want refused", err)
	}
	// On stdio the one user may resume any conversation.
	local := newManager(t, Config{})
	opts = CreateOptions{Cwd: dir, ResumeSessionID: conv}
	if err := local.Validate(&opts); err != nil {
		t.Errorf("a resume on stdio: %v", err)
	}
}

// TestGateOperatorOptions: options the operator chose (an agent of the
// operator's file) need no --http-allow from a remote caller; the ceilings
// still bind them.
func TestGateOperatorOptions(t *testing.T) {
	wd, _ := os.Getwd()
	m := newManager(t, Config{Remote: true, AllowedRoots: []string{wd}})
	opts := CreateOptions{Owner: "alice", SessionOptions: claudeagent.SessionOptions{Agents: raw(hookAgent), Agent: "x", PermissionMode: "acceptEdits"}}
	if err := m.Validate(&opts); err == nil {
		t.Fatal("a caller's agent hooks were accepted over HTTP")
	}
	opts = CreateOptions{Owner: "alice", Operator: []string{"agents", "permissionMode"}, SessionOptions: claudeagent.SessionOptions{Agents: raw(hookAgent), Agent: "x", PermissionMode: "acceptEdits"}}
	if err := m.Validate(&opts); err != nil {
		t.Errorf("the operator's agent over HTTP: %v", err)
	}
	strict := newManager(t, Config{Remote: true, AllowedRoots: []string{wd}, ToolsCeiling: []string{"Read"}})
	opts = CreateOptions{Owner: "alice", Operator: []string{"agents"}, SessionOptions: claudeagent.SessionOptions{Agents: raw(hookAgent), Agent: "x"}}
	if err := strict.Validate(&opts); err == nil || !strings.Contains(err.Error(), "runs a program") {
		t.Errorf("the operator's agent hooks under a tools ceiling without Bash = %v, want refused", err)
	}
}

// TestGateOperatorModeSwitched: a mode the operator chose does not make a
// caller's switch of it operator-chosen: over HTTP a switch to a wider mode
// needs --http-allow, now and after the switch.
func TestGateOperatorModeSwitched(t *testing.T) {
	wd, _ := os.Getwd()
	m := newManager(t, Config{Remote: true, AllowedRoots: []string{wd, os.TempDir()}})
	s := create(t, m, CreateOptions{Owner: "alice", Operator: []string{"permissionMode"}, SessionOptions: claudeagent.SessionOptions{PermissionMode: "plan"}})
	if err := s.SetPermissionMode(ctxFor(t), "acceptEdits"); err == nil || !strings.Contains(err.Error(), "off over HTTP") {
		t.Errorf("a caller's switch of the operator's mode to acceptEdits = %v, want refused", err)
	}
	if err := s.SetPermissionMode(ctxFor(t), "default"); err != nil {
		t.Fatalf("switching to default: %v", err)
	}
	s.mu.Lock()
	op := slices.Clone(s.opts.Operator)
	s.mu.Unlock()
	if slices.Contains(op, "permissionMode") {
		t.Errorf("after a caller's switch the mode is still the operator's: %v", op)
	}
}

// TestGateGrantKept: a session's grant (its creator's OAuth scopes) binds
// its later changes — a mode switch that --http-allow would open but the
// grant does not is refused naming --oauth-scope-classes — and goes with
// the session into its stored record and back.
func TestGateGrantKept(t *testing.T) {
	wd, _ := os.Getwd()
	m := newManager(t, Config{Remote: true, RemoteAllow: []string{"widens-permissions"}, AllowedRoots: []string{wd, os.TempDir()}})
	grant := []string{"reads-files"}
	s := create(t, m, CreateOptions{Owner: "alice", Grant: &grant})
	if err := s.SetPermissionMode(ctxFor(t), "acceptEdits"); err == nil || !strings.Contains(err.Error(), "--oauth-scope-classes") {
		t.Errorf("switching to acceptEdits with a grant without widens-permissions = %v, want refused naming --oauth-scope-classes", err)
	}
	s.mu.Lock()
	e := s.entryLocked()
	s.mu.Unlock()
	if e.Grant == nil || !slices.Equal(*e.Grant, grant) {
		t.Fatalf("the stored record's grant = %v, want %v", e.Grant, grant)
	}
	e.Options.Grant = nil // as the entry is read back: the field is not in the options' JSON
	restored := newSession(m, e.Options)
	restored.applyEntryLocked(e)
	if g := restored.opts.Grant; g == nil || !slices.Equal(*g, grant) {
		t.Errorf("the restored session's grant = %v, want %v", g, grant)
	}
	other := create(t, m, CreateOptions{Owner: "bob"})
	if err := other.SetPermissionMode(ctxFor(t), "acceptEdits"); err != nil {
		t.Errorf("switching to acceptEdits without a grant, --http-allow widens-permissions: %v", err)
	}
}

// TestNoProbeOutside: what a create says of a path the caller may not use
// is the same whether it exists, is missing or is a file (defect 15 of
// issue 43: Validate stat'ed before the gate, so /etc said "outside",
// /etc/nope "does not exist" and /etc/passwd "is not a directory"): with
// --allowed-roots, and over HTTP without them, where a cwd other than the
// server's is off; a path the caller may use still says what is wrong with
// it.
func TestNoProbeOutside(t *testing.T) {
	t.Parallel()
	root, outside := t.TempDir(), t.TempDir()
	file := filepath.Join(outside, "passwd")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		cwd  string // of the addDirs and settingsFile cases: one the caller may use
	}{
		{"roots", Config{AllowedRoots: []string{root}}, root},
		{"http without roots", Config{Remote: true}, ""}, // the server's
	} {
		m := newManager(t, tc.cfg)
		says := func(o CreateOptions) string {
			t.Helper()
			o.Owner = "alice"
			err := m.Validate(&o)
			if err == nil {
				t.Fatalf("%s: %+v passed", tc.name, o)
			}
			for _, p := range []string{filepath.Join(outside, "nope"), file, outside} {
				if strings.Contains(err.Error(), p) {
					return strings.ReplaceAll(err.Error(), p, "PATH")
				}
			}
			return err.Error()
		}
		for _, of := range []func(string) CreateOptions{
			func(p string) CreateOptions { return CreateOptions{Cwd: p} },
			func(p string) CreateOptions {
				return CreateOptions{Cwd: tc.cwd, SessionOptions: claudeagent.SessionOptions{AddDirs: []string{p}}}
			},
			func(p string) CreateOptions {
				return CreateOptions{Cwd: tc.cwd, SessionOptions: claudeagent.SessionOptions{SettingsFile: p}}
			},
		} {
			exists, missing, notDir := says(of(outside)), says(of(filepath.Join(outside, "nope"))), says(of(file))
			if !strings.Contains(exists, "PATH") {
				t.Errorf("%s: the refusal %q is not about the path", tc.name, exists)
			}
			if exists != missing || missing != notDir {
				t.Errorf("%s: the answers tell the paths apart:\n exists:  %s\n missing: %s\n a file:  %s", tc.name, exists, missing, notDir)
			}
		}
	}
	// Inside the roots the answer says what is wrong.
	m := newManager(t, Config{AllowedRoots: []string{root}})
	o := CreateOptions{Cwd: filepath.Join(root, "nope")}
	if err := m.Validate(&o); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("a missing cwd inside the roots: %v", err)
	}
}

package sessions

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
)

// ---------------------------------------------------------------------------
// Validation

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

package sessions

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
)

// TestPolicyAfterRestart: sessions made under a loose policy are listed as
// refused after a restart under a stricter one, every query on them says
// which flag refuses them, nothing is deleted, and a session that the new
// policy allows runs as before.
func TestPolicyAfterRestart(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	inside := filepath.Join(root, "ok")
	if err := os.Mkdir(inside, 0o700); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	path := filepath.Join(t.TempDir(), "sessions.db")

	m1 := newManager(t, Config{Store: storeAt(t, path)})
	good := create(t, m1, CreateOptions{Cwd: inside, SessionOptions: claudeagent.SessionOptions{PermissionMode: "plan"}})
	escaped := create(t, m1, CreateOptions{Cwd: outside, SessionOptions: claudeagent.SessionOptions{PermissionMode: "plan"}})
	addDir := create(t, m1, CreateOptions{Cwd: inside, SessionOptions: claudeagent.SessionOptions{PermissionMode: "plan", AddDirs: []string{outside}}})
	badMode := create(t, m1, CreateOptions{Cwd: inside, SessionOptions: claudeagent.SessionOptions{PermissionMode: "acceptEdits"}})
	noMode := create(t, m1, CreateOptions{Cwd: inside})
	mcpSrv := create(t, m1, CreateOptions{Cwd: inside, SessionOptions: claudeagent.SessionOptions{PermissionMode: "plan"},
		MCPServers: map[string]json.RawMessage{"srv": json.RawMessage(`{"command":"/bin/true"}`)}})
	bash := create(t, m1, CreateOptions{Cwd: inside, SessionOptions: claudeagent.SessionOptions{PermissionMode: "plan", AllowedTools: []string{"Bash(git:*)"}}})
	for _, s := range []*Session{good, escaped, badMode} {
		query(t, s, "hi", QueryOptions{})
	}
	m1.Shutdown()

	m2 := newManager(t, Config{Store: storeAt(t, path), AllowedRoots: []string{root}, AllowedModes: []string{"plan"},
		NoSessionMCPServers: true, ToolsCeiling: []string{"Read", "Grep"}})
	if n := m2.Count(); n != 7 {
		t.Fatalf("the store holds %d sessions after a restart, want all 7", n)
	}
	for _, tc := range []struct {
		s    *Session
		flag string
	}{
		{escaped, "--allowed-roots"}, {addDir, "--allowed-roots"}, {badMode, "--allowed-permission-modes"},
		{noMode, "--allowed-permission-modes"}, {mcpSrv, "--allow-session-mcp-servers"}, {bash, "--allowed-tools-ceiling"},
	} {
		s, err := m2.Get(tc.s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if in := s.Info(); in.State != state.Refused || !strings.Contains(in.Failure, tc.flag) {
			t.Errorf("restored session (%s): state %s, failure %q; want refused naming %s", tc.flag, in.State, in.Failure, tc.flag)
		}
		_, err = s.Query(ctxFor(t), "hi", QueryOptions{})
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tc.flag) || !strings.Contains(err.Error(), s.ID) {
			t.Errorf("query on a refused session (%s): %v", tc.flag, err)
		}
	}
	if n := m2.LiveCount(); n != 0 {
		t.Errorf("refused sessions started %d process(es)", n)
	}
	// Nothing was deleted: the store still holds every session.
	if got := storedRecords(t, path); len(got) != 7 {
		t.Errorf("the store holds %d sessions, want 7", len(got))
	}
	// The session the new policy allows runs and continues its conversation.
	s, _ := m2.Get(good.ID)
	if r := query(t, s, "hi", QueryOptions{}); r.IsError || r.ClaudeSessionID != good.Info().ClaudeSessionID {
		t.Errorf("allowed session after the restart: %+v", r)
	}
}

// TestPolicyAtEveryStart: the policy is checked again whenever a process
// starts, not only at create: a cwd swapped for a symlink that leads out of
// the allowed roots, or deleted, refuses the session at its next wake-up;
// once the directory is back, it runs again.
func TestPolicyAtEveryStart(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	outside := t.TempDir()
	cwd := filepath.Join(root, "proj")
	if err := os.Mkdir(cwd, 0o700); err != nil {
		t.Fatal(err)
	}
	m := newManager(t, Config{AllowedRoots: []string{root}})
	s := create(t, m, CreateOptions{Cwd: cwd})
	query(t, s, "hi", QueryOptions{})

	if !s.makeDormant("test") {
		t.Fatal("could not make the session dormant")
	}
	if err := os.Remove(cwd); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, cwd); err != nil {
		t.Skipf("symlinks: %v", err)
	}
	_, err := s.Query(ctxFor(t), "hi", QueryOptions{})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "--allowed-roots") {
		t.Fatalf("query after the cwd became a link out of the roots: %v", err)
	}
	if in := s.Info(); in.State != state.Refused {
		t.Errorf("state %s, want refused", in.State)
	}

	if err := os.Remove(cwd); err != nil {
		t.Fatal(err)
	}
	_, err = s.Query(ctxFor(t), "hi", QueryOptions{})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "no longer does: deleted or moved") {
		t.Fatalf("query after the cwd was deleted: %v", err)
	}

	if err := os.Mkdir(cwd, 0o700); err != nil {
		t.Fatal(err)
	}
	if r := query(t, s, "hi", QueryOptions{}); r.IsError {
		t.Fatalf("query after the cwd came back: %+v", r)
	}
	if in := s.Info(); in.State != state.Idle || in.Failure != "" {
		t.Errorf("after a good start: state %s, failure %q", in.State, in.Failure)
	}
}

// TestMaxSessionsRestore: --max-sessions counts the stored sessions after
// a restart, none of which is loaded until asked for.
func TestMaxSessionsRestore(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sessions.db")
	m1 := newManager(t, Config{Store: storeAt(t, path)})
	var made []*Session
	for range 4 {
		s := create(t, m1, CreateOptions{})
		query(t, s, "hi", QueryOptions{}) // distinct lastUsed, in order
		made = append(made, s)
	}
	m1.Shutdown()
	m2 := newManager(t, Config{Store: storeAt(t, path), MaxSessions: 4})
	if n := m2.Count(); n != 4 {
		t.Fatalf("the store holds %d sessions after a restart, want 4", n)
	}
	if n := len(m2.List()); n != 0 {
		t.Errorf("%d sessions loaded at the start, want none", n)
	}
	for _, s := range made {
		if _, err := m2.Get(s.ID); err != nil {
			t.Errorf("a stored session was not loaded: %v", err)
		}
	}
	if _, err := m2.Create(ctxFor(t), CreateOptions{Cwd: t.TempDir()}); !errors.Is(err, ErrTooMany) {
		t.Errorf("create beyond --max-sessions with stored sessions: %v", err)
	}
}

// TestToolsCeiling: tools and allowedTools beyond the ceiling are refused;
// a session that names no tools gets the ceiling as its tool set.
func TestToolsCeiling(t *testing.T) {
	t.Parallel()
	m := newManager(t, Config{ToolsCeiling: []string{"Read", "Grep"}})
	for _, tc := range []struct {
		opts claudeagent.SessionOptions
		want string
	}{
		{claudeagent.SessionOptions{Tools: []string{"Read", "Bash"}}, `tools entry "Bash" is beyond`},
		{claudeagent.SessionOptions{AllowedTools: []string{"Bash(git:*)"}}, `allowedTools entry "Bash(git:*)" names a tool beyond`},
		{claudeagent.SessionOptions{Tools: []string{"not a tool"}}, `invalid tools entry`},
	} {
		if _, err := m.Create(ctxFor(t), CreateOptions{Cwd: t.TempDir(), SessionOptions: tc.opts}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Create(%+v) = %v, want %q", tc.opts, err, tc.want)
		}
	}
	var pr probe
	s := create(t, m, CreateOptions{SessionOptions: claudeagent.SessionOptions{AllowedTools: []string{"Read", "mcp__srv__x"}}})
	query(t, s, "hi", QueryOptions{OnEvent: pr.onEvent(s)})
	pr.checkArg(t, "--tools=Read,Grep", true)
	var pr2 probe
	s2 := create(t, m, CreateOptions{SessionOptions: claudeagent.SessionOptions{Tools: []string{}}})
	query(t, s2, "hi", QueryOptions{OnEvent: pr2.onEvent(s2)})
	pr2.checkArg(t, "--tools=", true)
}

// TestControlCharacters: NUL and other control bytes are refused in paths
// and names before anything reaches the CLI's arguments.
func TestControlCharacters(t *testing.T) {
	t.Parallel()
	m := newManager(t, Config{})
	dir := t.TempDir()
	for _, opts := range []CreateOptions{
		{Cwd: dir + "\x00/x"},
		{Cwd: dir, SessionOptions: claudeagent.SessionOptions{AddDirs: []string{dir + "\n"}}},
		{Cwd: dir, SessionOptions: claudeagent.SessionOptions{Model: "opus\x00"}},
		{Cwd: dir, SessionOptions: claudeagent.SessionOptions{Tools: []string{"Read\x00"}}},
	} {
		if err := m.Validate(&opts); err == nil {
			t.Errorf("Validate accepted %#v", opts)
		}
	}
}

// TestProfileModel: a session of a profile that sets the model reports that
// model, not the CLI's default.
func TestProfileModel(t *testing.T) {
	t.Parallel()
	m := newManager(t, Config{ProfileEnv: func(name string) (map[string]string, error) {
		return map[string]string{"ANTHROPIC_MODEL": "sonnet"}, nil
	}})
	s := create(t, m, CreateOptions{Profile: "gateway"})
	if got := s.Info().Model; got != "claude-sonnet-5" {
		t.Errorf("model of a profile session = %q, want the profile's sonnet resolved (claude-sonnet-5)", got)
	}
	s2 := create(t, m, CreateOptions{Profile: "gateway", SessionOptions: claudeagent.SessionOptions{Model: "haiku"}})
	if got := s2.Info().Model; got != "claude-haiku-4-5-20251001" {
		t.Errorf("an explicit model beside a profile = %q, want haiku's id", got)
	}
}

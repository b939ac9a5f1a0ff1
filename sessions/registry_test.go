package sessions

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
)

// ---------------------------------------------------------------------------
// Registry

func TestRegistryRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "state", "sessions.json")
	r := NewRegistry(path, nil)
	if got := r.Load(); len(got) != 0 {
		t.Fatalf("Load of a missing file = %+v", got)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	entries := []RegistryEntry{
		{SessionID: "s1", ClaudeSessionID: "c1", Resumable: true, Model: "claude-sonnet-5", Created: at, LastUsed: at.Add(time.Hour),
			Queries: 3, CostUSD: 0.125, Usage: Usage{1, 2, 3, 4},
			Options: CreateOptions{SessionOptions: claudeagent.SessionOptions{Model: "sonnet", PermissionMode: "plan", AllowedTools: []string{"Bash(git:*)"}, MaxTurns: 4, AddDirs: []string{"/y"}}, Cwd: "/x", MCPServers: map[string]json.RawMessage{"fs": json.RawMessage(`{"command":"srv"}`)}, StrictMCPConfig: true, Profile: "work"}},
		{SessionID: "s2", ClaudeSessionID: "c2", Created: at, LastUsed: at},
	}
	if err := r.Save(entries, 0.5, map[string]float64{"alice": 0.5}); err != nil {
		t.Fatal(err)
	}
	if err := r.Save(entries, 0.5, map[string]float64{"alice": 0.5}); err != nil { // unchanged: no rewrite
		t.Fatal(err)
	}
	got := NewRegistry(path, nil).Load()
	for _, e := range got { // the file is indented, and so are its raw values
		for k, v := range e.Options.MCPServers {
			var b bytes.Buffer
			_ = json.Compact(&b, v)
			e.Options.MCPServers[k] = b.Bytes()
		}
	}
	if !reflect.DeepEqual(got, entries) {
		t.Errorf("Load = %+v\nwant %+v", got, entries)
	}
	files, _ := os.ReadDir(filepath.Dir(path))
	if len(files) != 1 {
		t.Errorf("state dir holds %d files (temp files left?)", len(files))
	}
	if st, err := os.Stat(filepath.Dir(path)); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("state dir: %v %v", st.Mode(), err)
	}
}

// TestRegistryVersion1 reads a file written before the options had JSON
// names: Go field names, and the MCP servers as an --mcp-config document.
func TestRegistryVersion1(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sessions.json")
	v1 := `{"version":1,"sessions":[{"sessionId":"s1","claudeSessionId":"c1","resumable":true,"options":{"Cwd":"/x","Model":"sonnet","PermissionMode":"plan","AllowedTools":["Bash"],"MaxTurns":2,"AddDirs":["/y"],"MCPConfig":"{\"mcpServers\":{\"fs\":{\"command\":\"srv\"}}}","StrictMCPConfig":true,"ResumeSessionID":"r","ForkSession":true,"Env":null,"Profile":"work","Temporary":false}}]}`
	if err := os.WriteFile(path, []byte(v1), 0o600); err != nil {
		t.Fatal(err)
	}
	got := NewRegistry(path, nil).Load()
	want := CreateOptions{SessionOptions: claudeagent.SessionOptions{Model: "sonnet", PermissionMode: "plan", AllowedTools: []string{"Bash"}, MaxTurns: 2, AddDirs: []string{"/y"}},
		Cwd: "/x", MCPServers: map[string]json.RawMessage{"fs": json.RawMessage(`{"command":"srv"}`)}, StrictMCPConfig: true, ResumeSessionID: "r", ForkSession: true, Profile: "work"}
	if len(got) != 1 || !reflect.DeepEqual(got[0].Options, want) {
		t.Errorf("Load = %+v\nwant options %+v", got, want)
	}
}

func TestRegistryCorrupt(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sessions.json")
	if err := os.WriteFile(path, []byte(`{"version":1,"sessions":[{"sessionId":`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := NewRegistry(path, nil)
	if got := r.Load(); len(got) != 0 {
		t.Errorf("Load of a corrupt file = %+v", got)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the corrupt file is still in place: %v", err)
	}
	aside, _ := filepath.Glob(path + ".corrupt-*")
	if len(aside) != 1 {
		t.Fatalf("moved-aside files: %v", aside)
	}
	if b, _ := os.ReadFile(aside[0]); !strings.HasPrefix(string(b), `{"version":1`) {
		t.Errorf("moved-aside content = %q", b)
	}
	// A manager over it starts empty and writes a good file.
	m := newManager(t, Config{Registry: r})
	if n := m.Count(); n != 0 {
		t.Errorf("Count = %d", n)
	}
	create(t, m, CreateOptions{})
	if got := NewRegistry(path, nil).Load(); len(got) != 1 {
		t.Errorf("after a create the registry holds %+v", got)
	}
}

func TestRegistryRestore(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sessions.json")
	m1 := newManager(t, Config{Registry: NewRegistry(path, nil), ProfileEnv: func(name string) (map[string]string, error) {
		return map[string]string{"PROFILE_MARKER": "secret-first"}, nil
	}})
	s := create(t, m1, CreateOptions{Profile: "work"})
	broken := create(t, m1, CreateOptions{Profile: "gone"})
	create(t, m1, CreateOptions{Temporary: true})
	r := query(t, s, "hi", QueryOptions{})
	before := s.Info()
	m1.Shutdown()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "secret-first") {
		t.Errorf("the registry holds a profile's environment:\n%s", data)
	}

	m2 := newManager(t, Config{Registry: NewRegistry(path, nil), ProfileEnv: func(name string) (map[string]string, error) {
		if name == "work" {
			return map[string]string{"PROFILE_MARKER": "restored"}, nil
		}
		return nil, fmt.Errorf("no profile %q", name)
	}})
	if n := m2.Count(); n != 2 {
		t.Fatalf("restored %d sessions, want 2 (the temporary one is not kept)", n)
	}
	rs, err := m2.Get(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	in := rs.Info()
	if in.State != StateDormant || in.PID != 0 || in.ClaudeSessionID != before.ClaudeSessionID || in.Queries != 1 ||
		!approx(in.CostUSD, plainCost) || in.Model != defaultModel || in.Profile != "work" || in.Cwd != before.Cwd || in.Usage != r.Usage {
		t.Errorf("restored = %+v\nbefore   = %+v", in, before)
	}
	if m2.LiveCount() != 0 {
		t.Errorf("restoring started processes")
	}
	var pr probe
	r2 := query(t, rs, "hi", QueryOptions{OnEvent: pr.onEvent(rs)})
	if r2.FinalText != hello || r2.ClaudeSessionID != before.ClaudeSessionID {
		t.Errorf("restored query: %+v", r2)
	}
	pr.checkArg(t, "--resume="+before.ClaudeSessionID, true)
	if pr.ok && !strings.Contains(pr.environ, "PROFILE_MARKER=restored") {
		t.Errorf("the resumed CLI lacks the profile's environment")
	}
	if got := rs.Info(); got.Queries != 2 || got.State != StateIdle {
		t.Errorf("after the query: %+v", got)
	}

	b, err := m2.Get(broken.ID)
	if err != nil {
		t.Fatal(err)
	}
	if in := b.Info(); in.State != StateRefused || !strings.Contains(in.Failure, `no profile "gone"`) {
		t.Errorf("session with a missing profile: %+v", in)
	}
	if _, err := b.Query(ctxFor(t), "hi", QueryOptions{}); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), `no profile "gone"`) {
		t.Errorf("query on a refused session: %v", err)
	}
	if m2.LiveCount() != 1 {
		t.Errorf("a refused session started a process")
	}
	if _, err := m2.Close(broken.ID); err != nil {
		t.Errorf("closing a refused session: %v", err)
	}
	if got := NewRegistry(path, nil).Load(); len(got) != 1 || got[0].SessionID != s.ID || got[0].Queries != 2 {
		t.Errorf("registry after close = %+v", got)
	}
}

package sessions

import (
	"encoding/json"
	"path/filepath"
	"testing"
)

// TestAgentToolPersisted: the agent tool that started a session survives a
// restart (the stored record), and another instance sharing the store
// sees it too; it is never a session option a caller can set (json "-").
func TestAgentToolPersisted(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sessions.db")
	m1 := newManager(t, Config{Store: storeAt(t, path)})
	s := create(t, m1, CreateOptions{Cwd: t.TempDir(), AgentTool: "reviewer"})
	plain := create(t, m1, CreateOptions{Cwd: t.TempDir()})
	query(t, s, "hi", QueryOptions{})
	if got := s.Info().AgentTool; got != "reviewer" {
		t.Fatalf("AgentTool = %q", got)
	}
	m1.Shutdown()

	entries := storedRecords(t, path)
	if len(entries) != 2 {
		t.Fatalf("the store holds %d sessions, want 2", len(entries))
	}
	for _, e := range entries {
		want := map[string]string{s.ID: "reviewer", plain.ID: ""}[e.SessionID]
		if e.AgentTool != want {
			t.Errorf("entry %s: agentTool %q, want %q", e.SessionID, e.AgentTool, want)
		}
	}
	m2 := newManager(t, Config{Store: storeAt(t, path)})
	for id, want := range map[string]string{s.ID: "reviewer", plain.ID: ""} {
		got, err := m2.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		if in := got.Info(); in.AgentTool != want {
			t.Errorf("restored session %s: AgentTool %q, want %q", id, in.AgentTool, want)
		}
	}
	// A create from a tool's arguments never sets it.
	b, err := json.Marshal(&CreateOptions{AgentTool: "reviewer"})
	if err != nil {
		t.Fatal(err)
	}
	var set map[string]json.RawMessage
	if err := json.Unmarshal(b, &set); err != nil {
		t.Fatal(err)
	}
	for n := range set {
		if n != "cwd" {
			t.Errorf("AgentTool shows as the session option %q", n)
		}
	}
}

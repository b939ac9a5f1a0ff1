package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/pgtest"
)

// TestStoreCommand: `store import` then `store export` through run, the
// binary's entry.
func TestStoreCommand(t *testing.T) {
	db := filepath.Join(t.TempDir(), "sessions.db")
	var out, errb bytes.Buffer
	if code := run([]string{"store", "import", "--store", db, "-"}, strings.NewReader(`{"sessionId":"s1","claudeSessionId":"c1","state":"dormant"}`), &out, &errb); code != 0 {
		t.Fatalf("store import: exit %d: %s", code, errb.String())
	}
	out.Reset()
	if code := run([]string{"store", "export", "--store", db}, nil, &out, &errb); code != 0 {
		t.Fatalf("store export: exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), `"sessionId":"s1"`) || !strings.Contains(out.String(), `"claudeSessionId":"c1"`) {
		t.Fatalf("export: %s", out.String())
	}
	if code := run([]string{"store"}, nil, &out, &errb); code != 2 {
		t.Fatalf("store without a verb: exit %d", code)
	}
}

// runStoreOK runs the command and fails the test unless it exits 0.
func runStoreOK(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := runStore(args, strings.NewReader(stdin), &out, &errb); code != 0 {
		t.Fatalf("store %v: exit %d: %s", args, code, errb.String())
	}
	return out.String()
}

// TestStoreRoundTrip: the registry file fixture imported into the embedded
// store, exported, imported into PostgreSQL (from stdin), exported again:
// the same lines.
func TestStoreRoundTrip(t *testing.T) {
	db := filepath.Join(t.TempDir(), "sessions.db")
	runStoreOK(t, "", "import", "--store", db, "testdata/store-sessions.json")
	first := runStoreOK(t, "", "export", "--store", db)
	lines := strings.Split(strings.TrimSpace(first), "\n")
	if len(lines) != 2+1+3 {
		t.Fatalf("export of the fixture has %d lines:\n%s", len(lines), first)
	}
	var rec struct {
		SessionID, ClaudeSessionID, State, Owner string
		Worktree                                 struct{ Branch string }
	}
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatal(err)
	}
	if rec.SessionID != "9b2f6a0e-1111-4c3e-8d6a-000000000001" || rec.ClaudeSessionID == "" || rec.State != "dormant" || rec.Owner != "ann@example.com" || rec.Worktree.Branch != "claude/fuzz" {
		t.Fatalf("first session line: %s", lines[0])
	}
	url := pgtest.New(t)
	runStoreOK(t, first, "import", "--store", url, "-")
	if second := runStoreOK(t, "", "export", "--store", url); second != first {
		t.Fatalf("PostgreSQL's export differs:\n%s\nwant\n%s", second, first)
	}
	// A second import of the registry file changes nothing.
	runStoreOK(t, "", "import", "--store", db, "testdata/store-sessions.json")
	if again := runStoreOK(t, "", "export", "--store", db); again != first {
		t.Fatalf("a second import changed the store:\n%s", again)
	}
}

func TestStoreUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"frobnicate"}, {"import"}, {"export", "extra"}, {"export", "--nope"}} {
		var out, errb bytes.Buffer
		if code := runStore(args, strings.NewReader(""), &out, &errb); code != 2 || !strings.Contains(errb.String(), "usage:") {
			t.Errorf("store %v: exit %d, stderr %q; want 2 with the usage", args, code, errb.String())
		}
	}
	var errb bytes.Buffer
	if code := runStore([]string{"import", "--store", filepath.Join(t.TempDir(), "s.db"), "/no/such/file"}, nil, os.Stdout, &errb); code != 1 {
		t.Errorf("import of a missing file: exit %d", code)
	}
}

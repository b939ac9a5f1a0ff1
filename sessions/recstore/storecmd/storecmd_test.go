package storecmd

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// runOK runs the command and fails the test unless it exits 0.
func runOK(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := Run(args, strings.NewReader(stdin), &out, &errb); code != 0 {
		t.Fatalf("store %v: exit %d: %s", args, code, errb.String())
	}
	return out.String()
}

// TestRoundTrip: the registry file fixture imported into the embedded
// store, exported, imported into PostgreSQL (from stdin), exported again:
// the same lines.
func TestRoundTrip(t *testing.T) {
	db := filepath.Join(t.TempDir(), "sessions.db")
	runOK(t, "", "import", "--store", db, "testdata/sessions.json")
	first := runOK(t, "", "export", "--store", db)
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
	runOK(t, first, "import", "--store", url, "-")
	if second := runOK(t, "", "export", "--store", url); second != first {
		t.Fatalf("PostgreSQL's export differs:\n%s\nwant\n%s", second, first)
	}
	// A second import of the registry file changes nothing.
	runOK(t, "", "import", "--store", db, "testdata/sessions.json")
	if again := runOK(t, "", "export", "--store", db); again != first {
		t.Fatalf("a second import changed the store:\n%s", again)
	}
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"frobnicate"}, {"import"}, {"export", "extra"}, {"export", "--nope"}} {
		var out, errb bytes.Buffer
		if code := Run(args, strings.NewReader(""), &out, &errb); code != 2 || !strings.Contains(errb.String(), "usage:") {
			t.Errorf("store %v: exit %d, stderr %q; want 2 with the usage", args, code, errb.String())
		}
	}
	var errb bytes.Buffer
	if code := Run([]string{"import", "--store", filepath.Join(t.TempDir(), "s.db"), "/no/such/file"}, nil, os.Stdout, &errb); code != 1 {
		t.Errorf("import of a missing file: exit %d", code)
	}
}

package e2e_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/pgtest"
)

// TestE2EFleet: two servers on one PostgreSQL database, each with its own
// HOME and CLI config directory (nothing shared but the database): a
// session made and run on A, stopped there, resumes on B with its
// conversation — the transcript A stored is written into B's config
// directory before --resume —; then the store's export names it, and
// imports into an embedded store.
func TestE2EFleet(t *testing.T) {
	t.Parallel()
	url := pgtest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	a := startE2E(t, e2eOptions{args: []string{"--store", url}})
	sid, _ := a.create(t, ctx, nil)
	res, out := a.query(t, ctx, sid, "remember the word PELICAN")
	if res.IsError {
		t.Fatalf("query on A: %s", text(res))
	}
	csid, _ := out["claudeSessionId"].(string)
	a.stdin.Close()
	select {
	case <-a.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("A did not exit after stdin closed")
	}

	b := startE2E(t, e2eOptions{args: []string{"--store", url}})
	if b.home == a.home {
		t.Fatal("the servers share a HOME")
	}
	res, out = b.query(t, ctx, sid, "which word did I ask you to remember?")
	if res.IsError {
		t.Fatalf("query on B: %s", text(res))
	}
	checkResumedOnB(t, b, out, csid)

	bin := serverBinary(t)
	exported, err := exec.CommandContext(ctx, bin, "store", "export", "--store", url).Output()
	if err != nil || !strings.Contains(string(exported), `"sessionId":"`+sid+`"`) || !strings.Contains(string(exported), csid) {
		t.Fatalf("store export (%v):\n%s", err, tail(string(exported), 2000))
	}
	file := filepath.Join(t.TempDir(), "export.jsonl")
	if err := os.WriteFile(file, exported, 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "sessions.db")
	if msg, err := exec.CommandContext(ctx, bin, "store", "import", "--store", db, file).CombinedOutput(); err != nil {
		t.Fatalf("store import: %v\n%s", err, msg)
	}
	again, err := exec.CommandContext(ctx, bin, "store", "export", "--store", db).Output()
	if err != nil || !strings.Contains(string(again), `"sessionId":"`+sid+`"`) || !strings.Contains(string(again), csid) {
		t.Errorf("the embedded store's export after the import (%v):\n%s", err, tail(string(again), 2000))
	}
}

// checkResumedOnB checks that B answered "which word…" in conversation
// csid, which A held (resumed, not replayed), with A's turn in its request.
func checkResumedOnB(t *testing.T, b *e2e, out map[string]any, csid string) {
	t.Helper()
	if out["claudeSessionId"] != csid {
		t.Errorf("claudeSessionId on B = %v, want %s (resumed, not replayed)", out["claudeSessionId"], csid)
	}
	remembered := false
	for _, m := range requestFor(t, b.api, "which word").Messages {
		if m.Role == "user" && strings.Contains(m.Text(), "remember the word PELICAN") {
			remembered = true
		}
	}
	if !remembered {
		t.Error("B's request lacks the conversation A held")
	}
}

//go:build linux

package e2e_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit"
)

// TestE2ERewindCopiesHidden: a session's file checkpoints (copies of its
// files, in the CLI config directory's file-history/) are hidden from
// another session's jailed CLI, which could read them, or change what a
// rewind restores — one that took a warm spare too; the victim's own
// rewind works as before.
func TestE2ERewindCopiesHidden(t *testing.T) {
	requireJail(t)
	t.Parallel()
	// A client that cannot be asked and a policy that allows: a session
	// of the default options (which a warm spare serves) may run Bash.
	e := startE2E(t, e2eOptions{protocol: "2025-11-25", args: []string{"--permission-policy", "allow"}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := filepath.Join(e.home, "victim")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "keep.txt"), []byte(keepOriginal), 0o644); err != nil {
		t.Fatal(err)
	}
	e.api.SetHandler(rewindModel(dir))
	// The lookers first: one of the default options takes the warm spare
	// the server started for them, before the victim's options are the
	// ones spares are kept for.
	testkit.Until(t, time.Minute, "a warm spare", func() bool {
		log, _ := os.ReadFile(e.logPath)
		return strings.Contains(string(log), "warm spare ready")
	})
	var lookers []string
	for _, opts := range []map[string]any{nil, {"permissionMode": "bypassPermissions"}} {
		sid, _ := e.create(t, ctx, opts)
		lookers = append(lookers, sid)
	}
	victim, _ := e.create(t, ctx, map[string]any{"cwd": dir, "permissionMode": "acceptEdits"})
	var conv string
	for _, p := range []string{"REWIND-ONE", "REWIND-TWO"} {
		res, out := e.query(t, ctx, victim, p)
		if res.IsError {
			t.Fatalf("%s: %s", p, text(res))
		}
		conv, _ = out["claudeSessionId"].(string)
	}
	copies := filepath.Join(e.home, ".claude", "file-history", conv)
	if entries, err := os.ReadDir(copies); err != nil || len(entries) == 0 {
		t.Fatalf("the victim's CLI kept no copies in %s (%v): the test proves nothing", copies, err)
	}

	for i, other := range lookers {
		res, out := e.query(t, ctx, other, fmt.Sprintf("TOOL_BASH[ls -a %s; ls -a %s 2>&1 | head -3]", filepath.Dir(copies), copies))
		said := fmt.Sprint(out["finalText"])
		if res.IsError || !strings.HasPrefix(said, "Tool said:") {
			t.Fatalf("the probe of looker %d did not run: %s", i, text(res))
		}
		if strings.Contains(said, conv) && !strings.Contains(said, "No such file") {
			t.Errorf("looker %d sees the victim's copies: %s", i, said)
		}
	}
	if log, _ := os.ReadFile(e.logPath); !strings.Contains(string(log), "took a warm spare") {
		t.Errorf("no session took a warm spare: the spare's view is not tested")
	}
	res, out := e.call(t, ctx, "claude_session_rewind", map[string]any{"sessionId": victim, "prompt": 1, "dryRun": true}, nil)
	if files := rewindFiles(t, dir, out); res.IsError || strings.Join(files, " ") != "a.txt keep.txt sub/b.txt" {
		t.Errorf("the victim's own dry run: %s %v", text(res), files)
	}
}

// TestE2ERewindFork: a fork of a session whose turns edited files rewinds
// to before a prompt of its parent's, though its jailed CLI sees only its
// own conversation's checkpoints: the server copied its parent's in.
func TestE2ERewindFork(t *testing.T) {
	requireJail(t)
	t.Parallel()
	e := startE2E(t, e2eOptions{protocol: "2025-11-25", elicit: noElicitation(t)})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	keep, fileA, fileB := filepath.Join(e.cwd, "keep.txt"), filepath.Join(e.cwd, "a.txt"), filepath.Join(e.cwd, "sub", "b.txt")
	if err := os.WriteFile(keep, []byte(keepOriginal), 0o644); err != nil {
		t.Fatal(err)
	}
	e.api.SetHandler(rewindModel(e.cwd))
	parent, _ := e.create(t, ctx, map[string]any{"permissionMode": "acceptEdits"})
	var conv string
	for _, p := range []string{"REWIND-ONE", "REWIND-TWO"} {
		res, out := e.query(t, ctx, parent, p)
		if res.IsError {
			t.Fatalf("%s: %s", p, text(res))
		}
		conv, _ = out["claudeSessionId"].(string)
	}
	fork, _ := e.create(t, ctx, map[string]any{"permissionMode": "acceptEdits", "resumeSessionId": conv, "forkSession": true})
	res, out := e.call(t, ctx, "claude_session_rewind", map[string]any{"sessionId": fork, "prompt": 2, "dryRun": true}, nil)
	if files := rewindFiles(t, e.cwd, out); res.IsError || strings.Join(files, " ") != "a.txt keep.txt" {
		t.Errorf("the fork's dry run to before its parent's prompt 2: %s %v, want a.txt keep.txt", text(res), files)
	}
	if res, _ := e.call(t, ctx, "claude_session_rewind", map[string]any{"sessionId": fork, "prompt": 2}, nil); res.IsError {
		t.Fatalf("the fork's rewind: %s", text(res))
	}
	wantContents(t, "the fork rewound to before prompt 2", map[string]*string{keep: ptrTo(keepOriginal), fileA: ptrTo(aFirst), fileB: ptrTo(bFirst)})
}

package e2e_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakeapi"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/mcptest"
)

// The contents the rewind tests' turns write: bytes a careless copy would
// change (CRLF, no final newline, a NUL-free binary-ish run, UTF-8).
const (
	keepOriginal = "keep: café\r\nline two  \r\n\tlast, no newline"
	aFirst       = "alpha ✓\n\x01\x02\x7f raw\n"
	aSecond      = "alpha ✓ EDITED\n\x01\x02\x7f raw\n"
	aThird       = "rewritten\r\n"
	bFirst       = "beta\n"
)

// rewindModel answers the rewind tests' prompts as a model that writes and
// edits files in dir would, one tool call per API call (an Edit comes
// after the Read of its file); a slow prompt streams for long. Anything
// else gets the fake API's keywords.
func rewindModel(dir string) func(r *fakeapi.Request) *fakeapi.Reply {
	steps := map[string][]fakeapi.Block{
		"REWIND-ONE": {
			fakeapi.ToolUse("toolu_r1_write_a", "Write", map[string]any{"file_path": filepath.Join(dir, "a.txt"), "content": aFirst}),
			fakeapi.ToolUse("toolu_r1_write_b", "Write", map[string]any{"file_path": filepath.Join(dir, "sub", "b.txt"), "content": bFirst}),
		},
		"REWIND-TWO": {
			fakeapi.ToolUse("toolu_r2_read_keep", "Read", map[string]any{"file_path": filepath.Join(dir, "keep.txt")}),
			fakeapi.ToolUse("toolu_r2_edit_keep", "Edit", map[string]any{"file_path": filepath.Join(dir, "keep.txt"), "old_string": "line two", "new_string": "LINE 2"}),
			fakeapi.ToolUse("toolu_r2_edit_a", "Edit", map[string]any{"file_path": filepath.Join(dir, "a.txt"), "old_string": "alpha ✓", "new_string": "alpha ✓ EDITED"}),
		},
		"REWIND-THREE": {
			fakeapi.ToolUse("toolu_r3_write_a", "Write", map[string]any{"file_path": filepath.Join(dir, "a.txt"), "content": aThird}),
		},
	}
	return func(r *fakeapi.Request) *fakeapi.Reply {
		if !r.IsMainConversation() {
			return nil
		}
		if strings.Contains(r.LastUserText(), "REWIND-SLOW") {
			return &fakeapi.Reply{Blocks: []fakeapi.Block{{Type: "text", Text: strings.Repeat("slowly ", 40)}}, Deltas: 40, DeltaDelay: 500 * time.Millisecond}
		}
		// The prompt of the turn, and how far its calls got: the next
		// call after the last result, else the first.
		var calls []fakeapi.Block
		for prompt, c := range steps {
			if requestHolds(r, prompt) {
				calls = c
			}
		}
		if calls == nil {
			return nil
		}
		next := 0
		if trs := r.LastToolResults(); len(trs) > 0 {
			next = len(calls)
			for i, c := range calls {
				if c.ID == trs[len(trs)-1].ToolUseID {
					next = i + 1
				}
			}
		}
		if next >= len(calls) {
			return fakeapi.TextReply("done")
		}
		return fakeapi.ToolUseReply("", calls[next])
	}
}

// requestHolds reports whether the last prompt of r's conversation (its
// last user message with text, not a tool result) is prompt.
func requestHolds(r *fakeapi.Request, prompt string) bool {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		m := r.Messages[i]
		if m.Role != "user" {
			continue
		}
		if t, _ := fakeapi.StripSystemReminders(m.Text()); strings.TrimSpace(t) != "" {
			return strings.TrimSpace(t) == prompt
		}
	}
	return false
}

// readFile is the file's content; "" with gone true when it does not exist.
func readFile(t *testing.T, path string) (content string, gone bool) {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", true
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b), false
}

// wantContents checks each file's bytes; a nil want means it must not exist.
func wantContents(t *testing.T, when string, want map[string]*string) {
	t.Helper()
	for path, w := range want {
		got, gone := readFile(t, path)
		switch {
		case w == nil && !gone:
			t.Errorf("%s: %s exists (%q), want it gone", when, filepath.Base(path), got)
		case w != nil && (gone || got != *w):
			t.Errorf("%s: %s = %q (gone %v), want %q byte for byte", when, filepath.Base(path), got, gone, *w)
		}
	}
}

func ptrTo(s string) *string { return &s }

// rewindFiles are the names, relative to dir, of a rewind result's files,
// sorted.
func rewindFiles(t *testing.T, dir string, out map[string]any) []string {
	t.Helper()
	var names []string
	for _, f := range out["files"].([]any) {
		rel, err := filepath.Rel(dir, f.(string))
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, rel)
	}
	slices.Sort(names)
	return names
}

// TestE2ERewind: a session whose turns write and edit files (the real CLI,
// with the server's default file checkpoints) is rewound by prompt number:
// a dry run lists the files each rewind would restore, a rewind restores
// their bytes exactly (files the turns created are removed), a rewind is
// refused while a turn runs, and a restarted server (its CLI resumed from
// the transcript) still rewinds.
func TestE2ERewind(t *testing.T) {
	t.Parallel()
	a := startE2E(t, e2eOptions{protocol: "2025-11-25", elicit: noElicitation(t)})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := a.cwd
	keep, fileA, fileB := filepath.Join(dir, "keep.txt"), filepath.Join(dir, "a.txt"), filepath.Join(dir, "sub", "b.txt")
	if err := os.WriteFile(keep, []byte(keepOriginal), 0o644); err != nil {
		t.Fatal(err)
	}
	a.api.SetHandler(rewindModel(dir))
	sid, _ := a.create(t, ctx, map[string]any{"permissionMode": "acceptEdits"})
	for _, p := range []string{"REWIND-ONE", "REWIND-TWO", "REWIND-THREE"} {
		if res, out := a.query(t, ctx, sid, p); res.IsError || out["finalText"] != "done" {
			t.Fatalf("%s: %s", p, text(res))
		}
	}
	keepEdited := strings.Replace(keepOriginal, "line two", "LINE 2", 1)
	wantContents(t, "after the turns", map[string]*string{keep: &keepEdited, fileA: ptrTo(aThird), fileB: ptrTo(bFirst)})
	res, _ := a.call(t, ctx, "claude_session_history", map[string]any{"sessionId": sid}, nil)
	for _, p := range []string{"[prompt 1] REWIND-ONE", "[prompt 2] REWIND-TWO", "[prompt 3] REWIND-THREE"} {
		if !strings.Contains(text(res), p) {
			t.Errorf("the history does not number %q:\n%s", p, text(res))
		}
	}

	dry := func(e *e2e, n int, want ...string) {
		t.Helper()
		res, out := e.call(t, ctx, "claude_session_rewind", map[string]any{"sessionId": sid, "prompt": n, "dryRun": true}, nil)
		if got := rewindFiles(t, dir, out); res.IsError || !slices.Equal(got, want) || out["dryRun"] != true {
			t.Errorf("dry run to before prompt %d: %s; files %v, want %v", n, text(res), got, want)
		}
	}
	dry(a, 3, "a.txt")
	dry(a, 2, "a.txt", "keep.txt")
	dry(a, 1, "a.txt", "keep.txt", "sub/b.txt")
	wantContents(t, "after the dry runs", map[string]*string{keep: &keepEdited, fileA: ptrTo(aThird), fileB: ptrTo(bFirst)})

	// Refused while a turn runs: the call's error says to wait or interrupt.
	slow := a.queryInBackground(t, ctx, map[string]any{"sessionId": sid, "prompt": "REWIND-SLOW"}, nil)
	testkit.Until(t, time.Minute, "the slow turn to run", func() bool { return a.info(t, ctx, sid)["state"] == "running" })
	_, _, err := a.callErr(ctx, "claude_session_rewind", map[string]any{"sessionId": sid, "prompt": 1}, nil)
	mcptest.WantRPCError(t, "a rewind during a turn", err, jsonrpc.CodeInvalidParams, "wait for it to finish (claude_chat_wait) or call claude_chat_interrupt")
	if st := a.info(t, ctx, sid)["state"]; st != "running" {
		t.Errorf("the turn ended (%v) before the refusal was checked: the test proves nothing", st)
	}
	a.call(t, ctx, "claude_chat_interrupt", map[string]any{"sessionId": sid}, nil)
	<-slow
	wantContents(t, "after the refused rewind", map[string]*string{keep: &keepEdited, fileA: ptrTo(aThird), fileB: ptrTo(bFirst)})

	res, out := a.call(t, ctx, "claude_session_rewind", map[string]any{"sessionId": sid, "prompt": 2}, nil)
	if got := rewindFiles(t, dir, out); res.IsError || !slices.Equal(got, []string{"a.txt", "keep.txt"}) || !strings.Contains(text(res), "Rewound session "+sid+" to before its prompt 2") {
		t.Fatalf("rewind to before prompt 2: %s; files %v", text(res), got)
	}
	wantContents(t, "rewound to before prompt 2", map[string]*string{keep: ptrTo(keepOriginal), fileA: ptrTo(aFirst), fileB: ptrTo(bFirst)})

	// A restarted server resumes the CLI, which still knows the checkpoints.
	a.stdin.Close()
	select {
	case <-a.exited:
	case <-time.After(20 * time.Second):
		t.Fatal("the first server did not exit after stdin closed")
	}
	b := startE2E(t, e2eOptions{protocol: "2025-11-25", home: a.home})
	dry(b, 1, "a.txt", "sub/b.txt")
	res, _ = b.call(t, ctx, "claude_session_rewind", map[string]any{"sessionId": sid, "prompt": 1}, nil)
	if res.IsError {
		t.Fatalf("rewind to before prompt 1 after the restart: %s", text(res))
	}
	wantContents(t, "rewound to before prompt 1", map[string]*string{keep: ptrTo(keepOriginal), fileA: nil, fileB: nil})
	res, _ = b.call(t, ctx, "claude_session_rewind", map[string]any{"sessionId": sid, "prompt": 5, "dryRun": true}, nil)
	wantToolError(t, "prompt 5", res, "prompts 1 to 4")
}

// TestE2ERewindOff: a server started with --file-checkpoints=false refuses
// a rewind, naming the flag, and its CLI kept no copies.
func TestE2ERewindOff(t *testing.T) {
	t.Parallel()
	e := startE2E(t, e2eOptions{protocol: "2025-11-25", elicit: noElicitation(t), args: []string{"--file-checkpoints=false"}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e.api.SetHandler(rewindModel(e.cwd))
	sid, _ := e.create(t, ctx, map[string]any{"permissionMode": "acceptEdits"})
	if res, _ := e.query(t, ctx, sid, "REWIND-ONE"); res.IsError {
		t.Fatalf("query: %s", text(res))
	}
	res, _ := e.call(t, ctx, "claude_session_rewind", map[string]any{"sessionId": sid, "prompt": 1, "dryRun": true}, nil)
	wantToolError(t, "a rewind without checkpoints", res, "--file-checkpoints")
	if copies, _ := filepath.Glob(filepath.Join(e.home, ".claude", "file-history", "*", "*")); len(copies) != 0 {
		t.Errorf("the CLI kept copies without checkpoints: %v", copies)
	}
}

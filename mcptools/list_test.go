package mcptools

import (
	"slices"
	"strings"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/mcptest"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// TestListPages: claude_session_list pages the stored sessions with a
// cursor, the most recently used first, and filters by state and name;
// the text names each session and what it does now, and a bad cursor or
// state is a tool error saying what to pass.
func TestListPages(t *testing.T) {
	f := newFakeServer(t, "2025-11-25", sessions.Config{Store: openStore(t), MaxLive: 8}, Options{})
	var ids []string
	for _, name := range []string{"alpha-1", "beta", "alpha-2"} {
		_, out := f.call(t, "claude_session_create", map[string]any{"cwd": t.TempDir(), "name": name}, nil)
		id, _ := out["sessionId"].(string)
		f.call(t, "claude_chat_query", map[string]any{"sessionId": id, "prompt": "hi"}, nil)
		ids = append(ids, id)
	}
	slices.Reverse(ids)
	var got []string
	var texts string
	cursor := ""
	for range 5 {
		args := map[string]any{"limit": 2}
		if cursor != "" {
			args["cursor"] = cursor
		}
		res, out := f.call(t, "claude_session_list", args, nil)
		texts += mcptest.Text(res)
		for _, s := range out["sessions"].([]any) {
			got = append(got, s.(map[string]any)["sessionId"].(string))
		}
		cursor, _ = out["nextCursor"].(string)
		if cursor == "" {
			break
		}
	}
	if !slices.Equal(got, ids) {
		t.Errorf("pages list %v, want %v", got, ids)
	}
	if !strings.Contains(texts, "alpha-1") || !strings.Contains(texts, "idle since") || !strings.Contains(texts, "pass cursor") {
		t.Errorf("the pages' text:\n%s", texts)
	}
	res, out := f.call(t, "claude_session_list", map[string]any{"name": "alpha", "state": "idle"}, nil)
	if n := len(out["sessions"].([]any)); n != 2 {
		t.Errorf("name and state filter: %d sessions, want 2:\n%s", n, mcptest.Text(res))
	}
	res, _ = f.call(t, "claude_session_list", map[string]any{"cursor": "bogus"}, nil)
	if !res.IsError || !strings.Contains(mcptest.Text(res), "nextCursor") {
		t.Errorf("a bad cursor: %s", mcptest.Text(res))
	}
	res, _ = f.call(t, "claude_session_list", map[string]any{"state": "asleep"}, nil)
	if !res.IsError || !strings.Contains(mcptest.Text(res), "dormant") {
		t.Errorf("a state no session is in: %s", mcptest.Text(res))
	}
}

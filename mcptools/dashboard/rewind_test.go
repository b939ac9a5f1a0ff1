package dashboard_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/mcptest"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// The Rewind button by each prompt of a session's page, against the fake
// CLI, whose turns stand for one new file each (/CWD/turn<n>.txt): its
// owner gets a dry run's page listing the files, whose confirmation
// rewinds; an admin sees no button and is refused; a server without
// checkpoints shows none.

var rewindForm = regexp.MustCompile(`<form method="post" action="[^"]+/rewind" class="rewind">\s*<input type="hidden" name="csrf" value="[^"]+">\s*<input type="hidden" name="prompt" value="(\d+)">`)

func TestDashboardRewind(t *testing.T) {
	e := newDashHTTP(t, sessions.Config{FileCheckpoints: true})
	bob := e.connect(t, "bob-secret", "2025-11-25")
	sid := mcptest.CreateSession(t, bob)
	for _, p := range []string{"first", "second"} {
		if res, _ := mcptest.CallJSON(t, bob, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": p}); res.IsError {
			t.Fatalf("query: %s", mcptest.Text(res))
		}
	}
	c, _ := e.signIn(t, "bob-secret")
	page := e.base + "/ui/s/" + sid
	_, _, body := get(t, c, page)
	var shown []string
	for _, m := range rewindForm.FindAllStringSubmatch(body, -1) {
		shown = append(shown, m[1])
	}
	if strings.Join(shown, ",") != "1,2" || !strings.Contains(body, "prompt 1") || !strings.Contains(body, "prompt 2") {
		t.Fatalf("the owner's page shows Rewind for prompts %v, want 1 and 2:\n%s", shown, body)
	}
	token := pageTokenOf(t, body)
	origin := map[string]string{"Origin": e.base}

	code, dry := post(t, c, page+"/rewind", url.Values{"csrf": {token}, "prompt": {"1"}}, origin)
	if code != http.StatusOK || !strings.Contains(dry, "Rewind to before prompt 1?") || !strings.Contains(dry, "turn1.txt") ||
		!strings.Contains(dry, "turn2.txt") || !strings.Contains(dry, `name="confirm" value="1"`) || !strings.Contains(dry, "Rewinding restores 2 file(s) to their content before prompt 1 (+0 −2 lines)") {
		t.Fatalf("the dry run's page: %d\n%s", code, dry)
	}
	code, done := post(t, c, page+"/rewind", url.Values{"csrf": {pageTokenOf(t, dry)}, "prompt": {"2"}, "confirm": {"1"}}, origin)
	if code != http.StatusOK || !strings.Contains(done, "Rewound to before prompt 2") || !strings.Contains(done, "turn2.txt") || strings.Contains(done, "turn1.txt") {
		t.Fatalf("the rewind's page: %d\n%s", code, done)
	}
	// What the rewind did, as the tool sees it: prompt 2's file is back.
	_, out := mcptest.CallJSON(t, bob, "claude_session_rewind", map[string]any{"sessionId": sid, "prompt": 1, "dryRun": true})
	if files, _ := out["files"].([]any); len(files) != 1 || !strings.HasSuffix(files[0].(string), "turn1.txt") {
		t.Errorf("after the page's rewind the tool's dry run lists %v, want turn1.txt alone", out["files"])
	}
	code, bad := post(t, c, page+"/rewind", url.Values{"csrf": {token}, "prompt": {"3"}}, origin)
	if code != http.StatusBadRequest || !strings.Contains(bad, "prompts 1 to 2") {
		t.Errorf("prompt 3: %d %s", code, bad)
	}
	audit := e.audit.String()
	if strings.Count(audit, `"tool":"ui:rewind","session":"`+sid+`","outcome":"ok"`) != 2 || !strings.Contains(audit, `"tool":"ui:rewind","session":"`+sid+`","outcome":"error"`) {
		t.Errorf("the audit log lacks the rewinds:\n%s", audit)
	}

	// An admin sees the session, without the button, and may not rewind it.
	root, _ := e.signIn(t, "root-secret")
	_, _, body = get(t, root, page)
	if rewindForm.MatchString(body) || !strings.Contains(body, "prompt 2") {
		t.Errorf("the admin's page shows Rewind:\n%s", body)
	}
	if code, msg := post(t, root, page+"/rewind", url.Values{"csrf": {pageTokenOf(t, body)}, "prompt": {"1"}}, origin); code != http.StatusForbidden || !strings.Contains(msg, "only the session's owner") {
		t.Errorf("the admin's rewind: %d %s", code, msg)
	}
}

// TestDashboardRewindOff: without file checkpoints no button is shown, and
// a posted rewind names the flag.
func TestDashboardRewindOff(t *testing.T) {
	e := newDashHTTP(t, sessions.Config{})
	bob := e.connect(t, "bob-secret", "2025-11-25")
	sid := mcptest.CreateSession(t, bob)
	mcptest.CallJSON(t, bob, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "hi"})
	c, _ := e.signIn(t, "bob-secret")
	page := e.base + "/ui/s/" + sid
	_, _, body := get(t, c, page)
	if rewindForm.MatchString(body) || !strings.Contains(body, "prompt 1") {
		t.Errorf("a page without checkpoints shows Rewind:\n%s", body)
	}
	code, msg := post(t, c, page+"/rewind", url.Values{"csrf": {pageTokenOf(t, body)}, "prompt": {"1"}}, map[string]string{"Origin": e.base})
	if code != http.StatusBadRequest || !strings.Contains(msg, "--file-checkpoints") {
		t.Errorf("a rewind without checkpoints: %d %s", code, msg)
	}
}

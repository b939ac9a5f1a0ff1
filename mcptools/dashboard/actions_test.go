package dashboard

import (
	"regexp"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/history"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/worktree"
)

// TestEveryDashboardActionClassified: every action a page's form posts is
// classified (actions), so none is refused for lack of a class — and
// none is taken without one. The pages are rendered with every form
// shown: a running turn (its steer and send buttons), a question its user
// may answer, a sign-out, the list's start form.
func TestEveryDashboardActionClassified(t *testing.T) {
	re := regexp.MustCompile(`action="/ui/(?:s/[^"/]+/([a-z]+)|(new))"`)
	base := pageBase{Title: "t", CSRF: "c", User: "u", HTTP: true}
	row := sessionRow{ID: "0123456789", State: "running", Running: true, Worktree: &worktree.Info{Path: "/r/w", Branch: "worktree-w"}}
	page := sessionPage{pageBase: base, Row: row, Questions: []shownQuestion{{ID: "q", Tool: "Bash"}}, Older: -1, Newer: -1, CanAnswer: true,
		History: []history.Entry{{Kind: "prompt"}}, CanRewind: true}
	found := map[string]bool{}
	for name, write := range map[string]func(*htmlWriter){
		"session": page.write,
		"list":    listPage{pageBase: base, Rows: []sessionRow{row}}.write,
		"error":   errorPage{pageBase: base}.write,
		"rewind":  rewindPage{pageBase: base, Session: row.ID, Result: &sessions.RewindResult{Prompt: 1, Files: []string{"/f"}}}.write,
		"diff":    diffPage{pageBase: base, Row: row, Diff: &worktree.Diff{Base: "abc"}, CanLand: true}.write,
	} {
		w := htmlWriter{root: uiPrefix}
		write(&w)
		for _, m := range re.FindAllStringSubmatch(w.b.String(), -1) {
			a := m[1]
			if m[2] == "new" {
				a = "start" // the list's form that starts a session
			}
			found[a] = true
			if _, ok := actions[a]; !ok {
				t.Errorf("the %s page posts the unclassified action %q", name, a)
			}
		}
	}
	for a := range actions {
		if !found[a] {
			t.Errorf("action %q is classified but no page posts it", a)
		}
	}
}

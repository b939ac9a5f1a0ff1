package dashboard_test

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/mcptest"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// landRepo is a repository on main with one (empty) commit.
func landRepo(t *testing.T) (string, func(args ...string) string) {
	t.Helper()
	return testkit.GitRepo(t, nil)
}

// worktreeSession is a session with a worktree of repo in which file was
// written; it returns the session and the worktree's path.
func (e *dashEnv) worktreeSession(t *testing.T, repo, file, content string) (string, string) {
	t.Helper()
	_, out := mcptest.CallJSON(t, e.cs, "claude_session_create", map[string]any{"cwd": repo, "worktree": "auto"})
	sid, _ := out["sessionId"].(string)
	path, _ := out["worktree"].(map[string]any)["path"].(string)
	if sid == "" || path == "" {
		t.Fatalf("create: %v", out)
	}
	if err := os.WriteFile(filepath.Join(path, file), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return sid, path
}

// TestDashboardLand: a worktree session's page links its diff and has Land
// and Discard; the diff page shows the files and the patch, lines marked;
// a land refused (no Origin, a bad how) changes nothing; Land squashes the
// work into main with the message given, Discard drops it; both close the
// session and are audited.
func TestDashboardLand(t *testing.T) {
	e := newDashEnv(t, "2025-11-25", nil)
	repo, g := landRepo(t)
	sid, path := e.worktreeSession(t, repo, "x.txt", "<b>x</b>\n")
	c := browser(t)
	e.signIn(t, c)
	_, _, page := get(t, c, e.ui+"/s/"+sid)
	for _, want := range []string{`id="diff-link"`, `action="` + e.d.Root() + `/s/` + sid + `/land"`, `<option value="squash">`, `id="discard"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the session's page lacks %s", want)
		}
	}
	token := pageTokenOf(t, page)
	code, _, diff := get(t, c, e.ui+"/s/"+sid+"/diff")
	if code != http.StatusOK || !strings.Contains(diff, `<td class="file">x.txt</td>`) || !strings.Contains(diff, `<td class="add">+1</td>`) ||
		!strings.Contains(diff, `<span class="d-add">+&lt;b&gt;x&lt;/b&gt;</span>`) || !strings.Contains(diff, `id="land-button"`) {
		t.Errorf("the diff page: %d\n%s", code, diff)
	}
	landURL := e.ui + "/s/" + sid + "/land"
	if code, _ := post(t, c, landURL, url.Values{"csrf": {token}, "how": {"squash"}}, nil); code != http.StatusForbidden {
		t.Errorf("a land without Origin: %d", code)
	}
	if code, body := post(t, c, landURL, url.Values{"csrf": {token}, "how": {"rebase"}}, map[string]string{"Origin": e.url}); code != http.StatusBadRequest || !strings.Contains(body, "invalid how") {
		t.Errorf("a bad how: %d %s", code, body)
	}
	if _, err := os.Stat(filepath.Join(path, "x.txt")); err != nil {
		t.Fatalf("a refused land touched the worktree: %v", err)
	}
	code, _ = post(t, c, landURL, url.Values{"csrf": {token}, "how": {"squash"}, "message": {"Add x"}}, map[string]string{"Origin": e.url})
	if code != http.StatusSeeOther || g("log", "-1", "--format=%s", "main") != "Add x" || g("show", "main:x.txt") != "<b>x</b>" {
		t.Fatalf("land: %d; main %s", code, g("log", "--format=%s", "main"))
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) || e.mgr.Count() != 0 {
		t.Errorf("after the land: worktree %v, %d session(s) open", err, e.mgr.Count())
	}
	if a := e.audit.String(); !strings.Contains(a, `"tool":"ui:land","session":"`+sid+`","outcome":"ok"`) {
		t.Errorf("the land is not audited:\n%s", a)
	}

	sid, path = e.worktreeSession(t, repo, "y.txt", "y\n")
	_, _, page = get(t, c, e.ui+"/s/"+sid)
	code, body := post(t, c, e.ui+"/s/"+sid+"/land", url.Values{"csrf": {pageTokenOf(t, page)}, "how": {"discard"}},
		map[string]string{"Origin": e.url, "X-Requested-With": "dashboard"})
	if code != http.StatusOK || !strings.Contains(body, "Discarded") {
		t.Errorf("discard: %d %s", code, body)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) || g("branch", "--list", "worktree-*") != "" {
		t.Errorf("after the discard: %v, branches %q", err, g("branch", "--list"))
	}
	// A session without a worktree has no diff and no land forms.
	plain := e.create(t, nil)
	if _, _, page := get(t, c, e.ui+"/s/"+plain); strings.Contains(page, `id="discard"`) {
		t.Error("a session without a worktree offers Discard")
	}
	if code, _, _ := get(t, c, e.ui+"/s/"+plain+"/diff"); code != http.StatusNotFound {
		t.Errorf("the diff of a session without a worktree: %d", code)
	}
}

// TestDashboardLandOwnerOnly: over HTTP another user (an admin too) gets
// no Land form on alice's worktree session and a land posted anyway is
// refused; nothing changed.
func TestDashboardLandOwnerOnly(t *testing.T) {
	e := newDashHTTP(t, sessions.Config{})
	repo, g := landRepo(t)
	alice := e.connect(t, "alice-secret", "")
	_, out := mcptest.CallJSON(t, alice, "claude_session_create", map[string]any{"cwd": repo, "worktree": "auto"})
	sid, _ := out["sessionId"].(string)
	path, _ := out["worktree"].(map[string]any)["path"].(string)
	if err := os.WriteFile(filepath.Join(path, "a.txt"), []byte("alice's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := g("rev-parse", "main")
	for _, who := range []string{"bob", "root"} {
		c, _ := e.signIn(t, who+"-secret")
		code, _, page := get(t, c, e.base+"/ui/s/"+sid)
		if who == "bob" {
			if code != http.StatusNotFound {
				t.Errorf("bob sees alice's session: %d", code)
			}
			_, _, page = get(t, c, e.base+"/ui/")
		} else if strings.Contains(page, `id="discard"`) || strings.Contains(page, `id="land-button"`) {
			t.Errorf("the admin is offered alice's land")
		}
		code, body := post(t, c, e.base+"/ui/s/"+sid+"/land", url.Values{"csrf": {pageTokenOf(t, page)}, "how": {"discard"}}, map[string]string{"Origin": e.base})
		if code != http.StatusNotFound && code != http.StatusForbidden {
			t.Errorf("%s lands alice's session: %d %s", who, code, body)
		}
	}
	if _, err := os.Stat(filepath.Join(path, "a.txt")); err != nil || g("rev-parse", "main") != before {
		t.Errorf("another user's land changed something: %v", err)
	}
}

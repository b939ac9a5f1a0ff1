//go:build linux

package e2e_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestE2EDashboardLand drives the review and land of a worktree session on
// the dashboard in chromium: the session page links its diff, the diff page
// shows the file the real CLI wrote (lines marked), Land with squash and a
// message lands it in main (the user's dirty checkout intact) and closes
// the session; Discard drops another session's work.
func TestE2EDashboardLand(t *testing.T) {
	requireGit(t)
	e := startE2E(t, e2eOptions{protocol: "2025-11-25", args: []string{"--ui", "on"}, elicit: noElicitation(t)})
	b := newBrowser(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	repo, _ := landRepo(t, e)
	sid, path := worked(t, ctx, e, repo, "page", "page.txt", "from the page")

	_, out := e.call(t, ctx, "claude_session_list", map[string]any{}, nil)
	link, _ := out["dashboardUrl"].(string)
	pages, _, ok := strings.Cut(link, "/?secret=")
	if !ok {
		t.Fatalf("dashboardUrl = %q", link)
	}
	browse(t, b, time.Minute, "opening the link", chromedp.Navigate(link), chromedp.WaitVisible(css(`table.sessions`)))
	browse(t, b, time.Minute, "the session page", chromedp.Navigate(pages+"/s/"+sid), chromedp.WaitVisible(css(`#diff-link`)),
		chromedp.WaitVisible(css(`#land-button`)), chromedp.WaitVisible(css(`#discard`)))
	browse(t, b, time.Minute, "the diff page", chromedp.Click(css(`#diff-link`)), chromedp.WaitVisible(css(`pre#diff`)),
		pollJS(`[...document.querySelectorAll('pre#diff .d-add')].some(s => s.textContent === '+from the page')`),
		pollJS(`document.querySelector('table.diff-files').textContent.includes('page.txt')`))
	screenshot(t, b, "dashboard-diff.png")
	browse(t, b, time.Minute, "landing by squash",
		chromedp.SetValue(css(`form#land select[name="how"]`), "squash"),
		chromedp.SetValue(css(`form#land input[name="message"]`), "Land from the page"),
		chromedp.Click(css(`#land-button`)), chromedp.WaitVisible(css(`table.sessions`)))
	if s := gitRun(t, repo, "log", "-1", "--format=%s", "main"); s != "Land from the page" || gitRun(t, repo, "show", "main:page.txt") != "from the page" {
		t.Errorf("main after the page's land: %s", s)
	}
	landedGone(t, ctx, e, sid, path)

	sid, path = worked(t, ctx, e, repo, "dropped", "dropped.txt", "dropped")
	before := gitRun(t, repo, "rev-parse", "main")
	browse(t, b, time.Minute, "discarding", chromedp.Navigate(pages+"/s/"+sid), chromedp.WaitVisible(css(`#discard`)),
		chromedp.Click(css(`#discard`)), chromedp.WaitVisible(css(`table.sessions`)))
	if gitRun(t, repo, "rev-parse", "main") != before {
		t.Error("the discard moved main")
	}
	landedGone(t, ctx, e, sid, path)
	for name, want := range map[string]string{"user.txt": "the user's, changed and not committed\n", "scratch.txt": "untracked\n", "page.txt": "from the page"} {
		if b, err := os.ReadFile(filepath.Join(repo, name)); err != nil || string(b) != want {
			t.Errorf("main's checkout: %s is %q (%v), want %q", name, b, err, want)
		}
	}
}

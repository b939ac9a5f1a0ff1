package e2e_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit"
)

// TestE2ERewindDashboard: the Rewind button by a prompt of a session's
// page, in headless chromium (the real CLI, the fake API): its dry run's
// page lists the files, the confirmation restores them byte for byte.
func TestE2ERewindDashboard(t *testing.T) {
	e := startE2E(t, e2eOptions{protocol: "2025-11-25", elicit: noElicitation(t), args: []string{"--ui", "on"}})
	b := newBrowser(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	keep, fileA := filepath.Join(e.cwd, "keep.txt"), filepath.Join(e.cwd, "a.txt")
	if err := os.WriteFile(keep, []byte(keepOriginal), 0o644); err != nil {
		t.Fatal(err)
	}
	e.api.SetHandler(rewindModel(e.cwd))
	sid, _ := e.create(t, ctx, map[string]any{"permissionMode": "acceptEdits"})
	for _, p := range []string{"REWIND-ONE", "REWIND-TWO"} {
		if res, out := e.query(t, ctx, sid, p); res.IsError || out["finalText"] != "done" {
			t.Fatalf("%s: %s", p, text(res))
		}
	}
	pages := dashboardPages(t, ctx, e, b)
	browse(t, b, time.Minute, "the session's page with a Rewind by each prompt", chromedp.Navigate(pages+"/s/"+sid),
		pollJS(`document.querySelectorAll('#history form.rewind button').length === 2`))
	// Clicked by the page's own script: a node chromedp looked up may
	// belong to a document the navigation is replacing.
	browse(t, b, time.Minute, "clicking Rewind by prompt 2", clickJS(`#history form.rewind:has(input[name=prompt][value="2"]) button`))
	waitHeading(t, b, "Rewind to before prompt 2?")
	files := value(t, b, "the files listed", chromedp.Evaluate[string](`[...document.querySelectorAll('.files .file')].map(f => f.textContent).join(' ')`))
	if files != "a.txt keep.txt" {
		t.Errorf("the dry run's page lists %q, want a.txt keep.txt", files)
	}
	wantContents(t, "after the dry run", map[string]*string{keep: ptrTo(strings.Replace(keepOriginal, "line two", "LINE 2", 1)), fileA: ptrTo(aSecond)})
	browse(t, b, time.Minute, "confirming", clickJS(`#rewind-confirm`))
	waitHeading(t, b, "Rewound to before prompt 2")
	wantContents(t, "after the rewind", map[string]*string{keep: ptrTo(keepOriginal), fileA: ptrTo(aFirst)})
}

// waitHeading waits until the page the browser shows (after a form's post:
// the navigation may be under way) has the heading want.
func waitHeading(t *testing.T, b context.Context, want string) {
	t.Helper()
	testkit.Until(t, time.Minute, "the page headed "+want, func() bool {
		ctx, cancel := context.WithTimeout(b, 5*time.Second)
		defer cancel()
		h, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('h1') ? document.querySelector('h1').textContent : ''`))
		return err == nil && h == want
	})
}

// clickJS clicks the element sel selects, by script.
func clickJS(sel string) step {
	click := chromedp.Evaluate[bool](`(() => { const el = document.querySelector(` + jsString(sel) + `); if (el === null) return false; el.click(); return true })()`)
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		ok, err := click(ctx, t)
		if err == nil && !ok {
			err = fmt.Errorf("no element %s", sel)
		}
		return chromedp.Void{}, err
	}
}

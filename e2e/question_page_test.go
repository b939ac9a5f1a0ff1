package e2e_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestE2EDashboardQuestion: the model's questions on the session's page in
// chromium, for a client that cannot be asked: the owner picks a choice,
// ticks two, writes a note and answers; the CLI tells the model those
// answers and the query's result lists them.
func TestE2EDashboardQuestion(t *testing.T) {
	e := startE2E(t, e2eOptions{protocol: "2025-11-25", args: []string{"--ui", "on"}})
	b := newBrowser(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	_, out := e.call(t, ctx, "claude_session_list", map[string]any{}, nil)
	link, _ := out["dashboardUrl"].(string)
	pages, _, ok := strings.Cut(link, "/?secret=")
	if !ok {
		t.Fatalf("dashboardUrl = %q", link)
	}
	_, out = e.call(t, ctx, "claude_session_create", map[string]any{"cwd": e.cwd, "name": "asks"}, nil)
	sid, _ := out["sessionId"].(string)
	browse(t, b, time.Minute, "the session page", chromedp.Navigate(link), chromedp.WaitVisible(css(`table.sessions`)),
		chromedp.Navigate(pages+"/s/"+sid), chromedp.WaitVisible(css(`#steps`)))

	done := make(chan map[string]any, 1)
	go func() {
		_, out, err := e.callErr(ctx, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "TOOL_ASK"}, nil)
		if err != nil {
			t.Errorf("the query: %v", err)
		}
		done <- out
	}()
	browse(t, b, time.Minute, "the questions on the page", chromedp.WaitVisible(css(`.question.asks input[name=q1][value=SQLite]`)))
	screenshot(t, b, "dashboard-question.png")
	browse(t, b, time.Minute, "answering",
		chromedp.Click(css(`.question.asks input[name=q1][value=SQLite]`)),
		chromedp.Click(css(`.question.asks input[name=q2][value=Auth]`)),
		chromedp.Click(css(`.question.asks input[name=q2][value=Billing]`)),
		chromedp.SendKeys(css(`.question.asks input[name=q2_other]`), "billing after auth"),
		chromedp.Click(css(`.question.asks button[value=answer]`)))
	select {
	case out = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the query did not return after the page's answer")
	}
	tr := askResult(t, e)
	for _, want := range []string{`"` + askDB + `"="SQLite"`, `"` + askFeatures + `"="Auth, Billing"`, "billing after auth"} {
		if !strings.Contains(tr.Content, want) {
			t.Errorf("the model was told %q, without %s", tr.Content, want)
		}
	}
	checkListed(t, out, map[string]string{askDB: "SQLite", askFeatures: "Auth, Billing (billing after auth)"})
}

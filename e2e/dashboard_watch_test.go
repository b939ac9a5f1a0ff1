package e2e_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakeapi"
)

// Watching and steering from the dashboard in chromium (issue 31), with
// the real CLI (CLAUDE_BIN: run them with both) and the fake API: a page
// opened mid-turn shows the running prompt and the streamed text before
// the turn ends; a message steered from the page during a tool call
// reaches the model in the same turn; one steered while the final answer
// streams gets a follow-up turn of its own; a session started and a prompt
// sent from the page answer; a session waiting for a permission answer is
// listed first. Run them one at a time (-run).

// dashboardPages opens the server's dashboard link in b and returns where
// its pages are (the link without the secret).
func dashboardPages(t *testing.T, ctx context.Context, e *e2e, b context.Context) string {
	t.Helper()
	_, out := e.call(t, ctx, "claude_session_list", map[string]any{}, nil)
	link, _ := out["dashboardUrl"].(string)
	pages, _, ok := strings.Cut(link, "/?secret=")
	if !ok {
		t.Fatalf("dashboardUrl = %q", link)
	}
	browse(t, b, time.Minute, "opening the link", chromedp.Navigate(link), chromedp.WaitVisible(css(`table.sessions`)))
	return pages
}

// queryInBackground calls claude_chat_query; its structured result comes
// on the channel.
func queryInBackground(t *testing.T, ctx context.Context, e *e2e, args map[string]any) <-chan map[string]any {
	done := make(chan map[string]any, 1)
	go func() {
		_, out, err := e.callErr(ctx, "claude_chat_query", args, nil)
		if err != nil {
			t.Errorf("the query %v: %v", args["prompt"], err)
		}
		done <- out
	}()
	return done
}

// steerFromPage types message into the page's compose form and clicks
// "Steer the running turn"; the form says it was sent.
func steerFromPage(t *testing.T, b context.Context, message string) {
	t.Helper()
	browse(t, b, time.Minute, "steering from the page",
		chromedp.WaitEnabled(css(`#steer`)),
		chromedp.SendKeys(css(`#compose textarea`), message),
		chromedp.Click(css(`#steer`)),
		pollJS(`document.querySelector('#compose-status').textContent.startsWith('Steered')`))
}

// TestE2EDashboardMidTurn: a page opened while a streamed answer is being
// written (SLOW10: ten deltas half a second apart) shows the running
// prompt and the text so far, marked live, before the turn ends, and goes
// on live to its end, where the mark goes; the history then holds the turn
// without a reload. The screenshot of
// a realistic answer streaming is docs/watching.png (written when
// SCREENSHOT_DIR names a directory; always to the
// artifacts).
func TestE2EDashboardMidTurn(t *testing.T) {
	e := startE2E(t, e2eOptions{protocol: "2025-11-25", args: []string{"--ui", "on"}})
	b := newBrowser(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	pages := dashboardPages(t, ctx, e, b)
	_, out := e.call(t, ctx, "claude_session_create", map[string]any{"cwd": e.cwd, "name": "release-notes"}, nil)
	sid, _ := out["sessionId"].(string)
	const prompt = "SLOW10 Summarise what changed since the last release"
	n := len(e.api.MessageRequests())
	done := queryInBackground(t, ctx, e, map[string]any{"sessionId": sid, "prompt": prompt})
	if _, err := e.api.WaitMessageRequests(ctx, n+1); err != nil {
		t.Fatal(err)
	}
	// The turn is under way: the page opens now.
	browse(t, b, time.Minute, "the page opened mid-turn", chromedp.Navigate(pages+"/s/"+sid),
		pollJS(`document.querySelector('#steps .step-prompt') !== null && document.querySelector('#steps .step-prompt').textContent.includes(`+jsString(prompt)+`)`),
		pollJS(`document.querySelector('#partial').textContent.includes('chunk2 ') && document.querySelector('.step-done') === null`),
		// The text being written is marked live, and the turn running.
		pollJS(`!document.querySelector('#writing').hidden && document.querySelector('#writing .live').textContent === 'live' && document.querySelector('#live-status').textContent === 'running'`))
	select {
	case out := <-done:
		t.Fatalf("the turn ended before the page showed its text: %v", out)
	default:
	}
	browse(t, b, time.Minute, "the turn's end, live", pollJS(`document.querySelector('.step-done') !== null && document.querySelector('#steps').textContent.includes('chunk9')`),
		pollJS(`document.querySelector('#writing').hidden && document.querySelector('#live-status').textContent === 'ended'`))
	if out := <-done; !strings.Contains(out["finalText"].(string), "chunk9") {
		t.Errorf("the query: %v", out)
	}
	browse(t, b, time.Minute, "the history without a reload",
		pollJS(`document.querySelector('#history').textContent.includes(`+jsString(prompt)+`) && document.querySelector('#history').textContent.includes('chunk9')`))

	// A realistic answer streaming, for the README.
	e.api.SetHandler(func(r *fakeapi.Request) *fakeapi.Reply {
		if !strings.Contains(r.LastUserText(), "sign-in flow") {
			return nil
		}
		return &fakeapi.Reply{Blocks: []fakeapi.Block{{Type: "text", Text: watchingAnswer}}, Deltas: 40, DeltaDelay: 300 * time.Millisecond}
	})
	_, out = e.call(t, ctx, "claude_session_create", map[string]any{"cwd": e.cwd, "name": "auth-review"}, nil)
	review, _ := out["sessionId"].(string)
	browse(t, b, time.Minute, "the review's page", chromedp.Navigate(pages+"/s/"+review), chromedp.WaitVisible(css(`#compose`)))
	done = queryInBackground(t, ctx, e, map[string]any{"sessionId": review, "prompt": "Review the sign-in flow in auth/ and list what could go wrong, most serious first."})
	browse(t, b, time.Minute, "a realistic answer streaming",
		pollJS(`document.querySelector('#partial').textContent.includes('4. The reset link')`))
	screenshot(t, b, "watching.png")
	if dir := os.Getenv("SCREENSHOT_DIR"); dir != "" {
		png := value(t, b, "the screenshot", chromedp.FullScreenshot(100))
		if err := os.WriteFile(filepath.Join(dir, "watching.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	<-done
}

// watchingAnswer is the streamed answer of the README's screenshot.
const watchingAnswer = `Here is what could go wrong in the sign-in flow, most serious first:

1. Session fixation: the session id is kept across sign-in (auth/session.go, login). Issue a new one once the password checks out.
2. Timing leak: the password check compares hashes with ==. Use subtle.ConstantTimeCompare.
3. No throttle on failed attempts per account, only per address: a slow spray across addresses goes unnoticed.
4. The reset link's token lives for 7 days and is not single-use.
5. Error messages say whether the account exists ("no such user").

I would fix 1 and 2 first; both are a few lines.`

// TestE2EDashboardSteer: a message steered from the page while a tool
// call runs (TOOL_BASH[sleep 3; echo x]) reaches the model in the same
// turn — the fake API's next request carries it after the tool's result —
// and the query, started over MCP, returns its one result; a message
// steered while the final answer streams is answered in a follow-up turn,
// which claude_chat_wait returns and the next query does not receive; the
// page marks both as steered, and the form's "Steered" note goes when the
// turn ends.
func TestE2EDashboardSteer(t *testing.T) {
	e := startE2E(t, e2eOptions{protocol: "2025-11-25", args: []string{"--ui", "on"}})
	b := newBrowser(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	pages := dashboardPages(t, ctx, e, b)
	_, out := e.call(t, ctx, "claude_session_create", map[string]any{"cwd": e.cwd, "name": "steered", "permissionMode": "bypassPermissions"}, nil)
	sid, _ := out["sessionId"].(string)
	browse(t, b, time.Minute, "the session page", chromedp.Navigate(pages+"/s/"+sid), chromedp.WaitVisible(css(`#compose`)))

	// During a tool call: folded into the same turn.
	const folded = "Also mention the weather."
	done := queryInBackground(t, ctx, e, map[string]any{"sessionId": sid, "prompt": "TOOL_BASH[sleep 3; echo x]"})
	browse(t, b, time.Minute, "the tool call on the page", pollJS(`document.querySelector('#steps .step-tool') !== null && document.querySelector('#steps .step-tool pre.output').textContent === '…'`))
	steerFromPage(t, b, folded)
	out = <-done
	if ft, _ := out["finalText"].(string); ft == "" || out["followUp"] != nil {
		t.Errorf("the query steered during its tool call: %v", out)
	}
	var after *fakeapi.Request
	for _, r := range e.api.MessageRequests() {
		if len(r.LastToolResults()) > 0 && bytes.Contains(r.Body, []byte(folded)) {
			after = &r
		}
	}
	if after == nil {
		t.Fatalf("no request carried the tool's result and the steered message")
	}
	if i, j := bytes.Index(after.Body, []byte(`"tool_result"`)), bytes.LastIndex(after.Body, []byte(folded)); i < 0 || j < i {
		t.Errorf("the steered message is not after the tool's result in the request (%d, %d)", i, j)
	}
	browse(t, b, time.Minute, "the steer on the page", pollJS(`document.querySelector('#steps .step-steer') !== null && document.querySelector('#steps .step-steer').textContent.includes(`+jsString(folded)+`)`))
	browse(t, b, time.Minute, "the steer's note gone with its turn", pollJS(steerNoteGone))

	// While the final answer streams: a follow-up turn of its own.
	const followUp = "ECHO steered while the answer streamed"
	done = queryInBackground(t, ctx, e, map[string]any{"sessionId": sid, "prompt": "SLOW10 a long answer"})
	browse(t, b, time.Minute, "the answer streaming", pollJS(`document.querySelector('#partial').textContent.includes('chunk1 ')`))
	steerFromPage(t, b, followUp)
	out = <-done
	if fu, _ := out["followUp"].(map[string]any); fu == nil || fu["status"] != "running" {
		t.Errorf("the query steered while its answer streamed: %v", out)
	}
	browse(t, b, time.Minute, "the follow-up on the page", pollJS(`document.querySelector('#steps .step-prompt.steered') !== null`))
	_, out = e.call(t, ctx, "claude_chat_wait", map[string]any{"sessionId": sid}, nil)
	if ft, _ := out["finalText"].(string); !strings.HasSuffix(ft, followUp) {
		t.Errorf("claude_chat_wait after the follow-up: %v", out)
	}
	browse(t, b, time.Minute, "the note gone after the follow-up", pollJS(steerNoteGone))
	_, out = e.call(t, ctx, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "ECHO the next query"}, nil)
	if ft, _ := out["finalText"].(string); !strings.HasSuffix(ft, "ECHO the next query") || strings.Contains(ft, followUp) {
		t.Errorf("the next query: %v", out)
	}
}

// steerNoteGone holds once the page's turn has ended and the compose
// form's note ("Steered: …") went with it.
const steerNoteGone = `document.querySelector('.step-done') !== null && document.querySelector('#compose-status').textContent === ''`

// TestE2EDashboardStartAndPrompt: a session started on the list's form
// with a first prompt answers it on its page; a prompt sent from the page
// answers; a session waiting for a permission answer is listed first,
// marked, and the tab's title counts it.
func TestE2EDashboardStartAndPrompt(t *testing.T) {
	hang := func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	e := startE2E(t, e2eOptions{protocol: "2025-11-25", args: []string{"--ui", "on"}, elicit: hang})
	b := newBrowser(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	pages := dashboardPages(t, ctx, e, b)
	browse(t, b, time.Minute, "starting a session on the page",
		chromedp.Click(css(`details.start summary`)),
		chromedp.SendKeys(css(`#start input[name=cwd]`), e.cwd),
		chromedp.SendKeys(css(`#start input[name=name]`), "from-the-page"),
		chromedp.SendKeys(css(`#start textarea[name=prompt]`), "ECHO started from the page"),
		chromedp.Click(css(`#start-session`)),
		chromedp.WaitVisible(css(`#compose`)),
		pollJS(`document.querySelector('#steps').textContent.includes('ECHO started from the page') && document.querySelector('.step-done') !== null`))
	browse(t, b, time.Minute, "a prompt sent from the page",
		chromedp.WaitEnabled(css(`#send`)),
		chromedp.SendKeys(css(`#compose textarea`), "ECHO sent from the page"),
		chromedp.Click(css(`#send`)),
		pollJS(`document.querySelector('#steps .step-text') !== null && document.querySelector('#steps .step-text').textContent.includes('ECHO sent from the page') && document.querySelector('.step-done') !== null`))
	_, out := e.call(t, ctx, "claude_session_list", map[string]any{}, nil)
	ss, _ := out["sessions"].([]any)
	if len(ss) != 1 {
		t.Fatalf("sessions after the page's start: %v", out)
	}

	// A second session waits for a permission answer (the client never
	// answers): it is listed first, marked, counted in the title.
	_, out = e.call(t, ctx, "claude_session_create", map[string]any{"cwd": e.cwd, "name": "asks"}, nil)
	asks, _ := out["sessionId"].(string)
	browse(t, b, time.Minute, "the list", chromedp.Navigate(pages+"/"), chromedp.WaitVisible(css(`tr[data-session="`+asks+`"]`)))
	// (A command the CLI does not take as read-only: it asks.)
	done := queryInBackground(t, ctx, e, map[string]any{"sessionId": asks, "prompt": "TOOL_BASH[touch asked.txt && echo hi]"})
	browse(t, b, time.Minute, "the waiting session first",
		pollJS(`document.querySelector('table.sessions tbody tr').dataset.session === `+jsString(asks)+
			` && document.querySelector('table.sessions tbody tr').classList.contains('waiting') && document.title.startsWith('(1) Sessions')`))
	screenshot(t, b, "dashboard-waiting-first.png")
	// (Clicked from the page's script: the panel holding the question may be
	// fetched anew between a lookup and a click of the DevTools protocol.)
	browse(t, b, time.Minute, "answering on its page", chromedp.Navigate(pages+"/s/"+asks),
		pollJS(`(() => { const b = document.querySelector('.question button.allow-once'); if (!b) return false; b.click(); return true; })()`))
	if out := <-done; out["finalText"] != "Tool said: hi" {
		t.Errorf("the query after the page's answer: %v", out)
	}
}

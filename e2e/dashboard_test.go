package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The dashboard (--ui) in a real headless browser: Debian's chromium,
// driven over the DevTools protocol (chromedp), against the built server,
// the real CLI and the fake API. Missing chromium skips these tests,
// except under CI=true, where it fails them (scripts/test installs it).
// Screenshots of the list and a session page go to the test's artifact
// directory (go test -artifacts -outputdir DIR keeps them).

// chromiumPath finds the browser: $CHROMIUM_BIN, else chromium on PATH.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CHROMIUM_BIN"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium not found and CI=true (scripts/test installs it: apt-get install chromium)")
	}
	t.Skip("chromium not installed; run scripts/test, which installs Debian's chromium")
	return ""
}

// newBrowser starts a headless chromium of its own (its profile in a
// temporary directory); the test's cleanup stops it.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromiumPath(t)),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // chromium refuses to run as root with its sandbox
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc() // kills the browser and waits for it
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

type step = chromedp.Action[chromedp.Void]

// browse runs steps in the browser within d.
func browse(t *testing.T, b context.Context, d time.Duration, what string, steps ...step) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b, d)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		lctx, lcancel := context.WithTimeout(b, 5*time.Second)
		loc, _ := chromedp.Run(lctx, chromedp.Location())
		body, _ := chromedp.Run(lctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
		lcancel()
		t.Fatalf("%s: %v\nat %s:\n%s", what, err, loc, tail(body, 3000))
	}
}

// value runs one action that reads something from the page.
func value[T any](t *testing.T, b context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b, time.Minute)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// pollJS waits until expr is true in the page (the browser polls it).
func pollJS(expr string) step {
	poll := chromedp.Poll[bool](expr, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(60*time.Second))
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := poll(ctx, t)
		return chromedp.Void{}, err
	}
}

func css(sel string) chromedp.CSS { return chromedp.CSS(sel) }

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// screenshot saves the whole page as a PNG in the test's artifact
// directory.
func screenshot(t *testing.T, b context.Context, name string) {
	t.Helper()
	png := value(t, b, "screenshot "+name, chromedp.FullScreenshot(100))
	path := filepath.Join(t.ArtifactDir(), name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// TestE2EDashboard drives the stdio server's dashboard in chromium: a
// session an MCP client creates appears on the open list; a turn's text
// streams into the open session page; a model answer holding <script> and
// <img onerror> shows as text and runs nothing, live and in the history;
// the interrupt button stops a turn and the session answers its next
// query; a permission question answered on the page lets the tool run
// (the client, asked too, never answers: the page's answer wins); a
// cross-site form post is refused.
func TestE2EDashboard(t *testing.T) {
	var asked atomic.Int32
	hang := func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked.Add(1)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	e := startE2E(t, e2eOptions{protocol: "2025-11-25", args: []string{"--ui", "on"}, elicit: hang})
	b := newBrowser(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	_, out := e.call(t, ctx, "claude_session_list", map[string]any{}, nil)
	link, _ := out["dashboardUrl"].(string)
	// The link is <origin>/ui/<random root>/?secret=…: the pages are under
	// the root, the sign-in cookie's path.
	pages, _, ok := strings.Cut(link, "/?secret=")
	if !ok || !strings.Contains(pages, "/ui/") {
		t.Fatalf("dashboardUrl = %q", link)
	}
	origin := link[:strings.Index(link, "/ui/")]
	// Without the secret the page is refused.
	for _, u := range []string{origin + "/ui/", pages + "/"} {
		if resp, err := http.Get(u); err != nil || resp.StatusCode != http.StatusForbidden {
			t.Fatalf("%s without the secret: %v %v", u, resp, err)
		} else {
			resp.Body.Close()
		}
	}

	// The list is open; a session made by the MCP client appears on it.
	browse(t, b, time.Minute, "opening the link", chromedp.Navigate(link), chromedp.WaitVisible(css(`table.sessions`)))
	_, out = e.call(t, ctx, "claude_session_create", map[string]any{"cwd": e.cwd, "name": "e2e-dashboard", "maxBudgetUsd": 0.5}, nil)
	sid, _ := out["sessionId"].(string)
	browse(t, b, time.Minute, "the new session on the list", chromedp.WaitVisible(css(`tr[data-session="`+sid+`"]`)))

	// A turn's text streams into the open session page.
	page := pages + "/s/" + sid
	browse(t, b, time.Minute, "the session page", chromedp.Navigate(page), chromedp.WaitVisible(css(`#steps`)))
	res, _ := e.call(t, ctx, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "ECHO streamed into the page"}, nil)
	if res.IsError {
		t.Fatalf("query: %s", text(res))
	}
	browse(t, b, time.Minute, "the turn's text on the page",
		pollJS(`document.querySelector('#steps').textContent.includes('streamed into the page') && document.querySelector('.step-done') !== null`))

	// A model answer with markup is text, live and in the history.
	const evil = `<script>window.__xss=1</script><img src=x onerror="window.__xss=2">`
	e.call(t, ctx, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "ECHO " + evil}, nil)
	noScript := `window.__xss === undefined && document.querySelectorAll('main img, main script').length === 0`
	browse(t, b, time.Minute, "the markup as text, live",
		pollJS(`document.querySelector('#steps').textContent.includes(`+jsString(evil)+`)`))
	if !value(t, b, "looking for the markup", chromedp.Evaluate[bool](noScript)) {
		t.Error("the model's markup ran or became elements on the live page")
	}
	browse(t, b, time.Minute, "the markup as text, in the history", chromedp.Navigate(page),
		pollJS(`document.querySelector('.history').textContent.includes(`+jsString(evil)+`)`))
	if !value(t, b, "looking for the markup", chromedp.Evaluate[bool](noScript)) {
		t.Error("the model's markup ran or became elements in the history")
	}

	// The interrupt button stops a turn; the session answers the next query.
	done := make(chan map[string]any, 1)
	go func() {
		_, out, err := e.callErr(ctx, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "SLOW"}, nil)
		if err != nil {
			t.Errorf("the slow query: %v", err)
		}
		done <- out
	}()
	n := len(e.api.MessageRequests())
	if _, err := e.api.WaitMessageRequests(ctx, n+1); err != nil {
		t.Fatal(err)
	}
	browse(t, b, time.Minute, "the interrupt button", chromedp.WaitVisible(css(`#interrupt`)))
	screenshot(t, b, "dashboard-session-running.png")
	browse(t, b, time.Minute, "clicking interrupt", chromedp.Click(css(`#interrupt`)))
	select {
	case out := <-done:
		if out["interrupted"] != true {
			t.Errorf("the interrupted query: %v", out)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the query did not return after the page's interrupt")
	}
	_, out = e.call(t, ctx, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "ECHO after the interrupt"}, nil)
	if ft, _ := out["finalText"].(string); !strings.HasSuffix(ft, "ECHO after the interrupt") {
		t.Errorf("the query after the interrupt: %v", out)
	}

	// A permission question answered on the page lets the tool run.
	go func() {
		_, out, err := e.callErr(ctx, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "TOOL_BASH[touch allowed_on_page.txt && echo hi]"}, nil)
		if err != nil {
			t.Errorf("the tool query: %v", err)
		}
		done <- out
	}()
	browse(t, b, time.Minute, "the question on the page", chromedp.Navigate(page),
		chromedp.WaitVisible(css(`.question button.allow-once`)))
	screenshot(t, b, "dashboard-permission.png")
	browse(t, b, time.Minute, "allowing once", chromedp.Click(css(`.question button.allow-once`)))
	select {
	case out := <-done:
		if out["finalText"] != "Tool said: hi" {
			t.Errorf("the query after the page allowed Bash: %v", out)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the query did not return after the page's answer")
	}
	if _, err := os.Stat(filepath.Join(e.cwd, "allowed_on_page.txt")); err != nil {
		t.Errorf("the allowed command did not run: %v", err)
	}
	if asked.Load() != 1 {
		t.Errorf("the client was asked %d times, want 1 (and the page answered first)", asked.Load())
	}
	browse(t, b, time.Minute, "the session page after the turns", chromedp.Navigate(page),
		pollJS(`document.querySelector('.history').textContent.includes('Tool said: hi')`))
	screenshot(t, b, "dashboard-session.png")
	browse(t, b, time.Minute, "the list", chromedp.Navigate(pages+"/"), chromedp.WaitVisible(css(`tr[data-session="`+sid+`"]`)))
	screenshot(t, b, "dashboard-list.png")

	// A cross-site page's form post is refused: another site (localhost,
	// not 127.0.0.1) whose page posts to close the session.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	evilSite := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><form id="f" method="post" action="%s/s/%s/close"><input name="csrf" value="guess"></form><script>document.getElementById('f').submit()</script>`, pages, sid)
	})}
	go func() { _ = evilSite.Serve(ln) }()
	defer evilSite.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	browse(t, b, time.Minute, "the cross-site post", chromedp.Navigate("http://localhost:"+port+"/"),
		pollJS(`location.href.startsWith(`+jsString(origin)+`) && document.body.innerText.includes('Forbidden')`))
	body := value(t, b, "the refusal", chromedp.Evaluate[string](`document.body.innerText`))
	_, out = e.call(t, ctx, "claude_session_list", map[string]any{"sessionId": sid}, nil)
	if ss, _ := out["sessions"].([]any); len(ss) != 1 {
		t.Errorf("the cross-site post closed the session (%s): %v", body, out)
	}
}

// TestE2EDashboardHTTP: over --http the dashboard is /ui on the same
// listener; a user signs in with their bearer token and sees their own
// sessions only: another user's session page is refused.
func TestE2EDashboardHTTP(t *testing.T) {
	e := startHTTPE2E(t, httpE2EOptions{users: []string{"alice", "bob"}, args: []string{"--ui", "on"}})
	b := newBrowser(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	alice := e.connect(t, "alice", "2025-11-25")
	_, out := httpCall(t, ctx, alice, "claude_session_create", map[string]any{"name": "alices-session"})
	aliceSID, _ := out["sessionId"].(string)
	if aliceSID == "" {
		t.Fatalf("create: %v", out)
	}
	signIn := func(user string) {
		browse(t, b, time.Minute, "signing in as "+user, chromedp.Navigate(e.url+"/ui/"),
			chromedp.WaitVisible(css(`input[name=token]`)),
			chromedp.SendKeys(css(`input[name=token]`), e.tokens[user]),
			chromedp.Submit(css(`input[name=token]`)),
			chromedp.WaitVisible(css(`table.sessions`)))
	}
	signIn("bob")
	list := value(t, b, "bob's list", chromedp.Text(css(`main`)))
	if strings.Contains(list, aliceSID[:8]) || strings.Contains(list, "alices-session") {
		t.Errorf("bob's list shows alice's session:\n%s", list)
	}
	browse(t, b, time.Minute, "alice's page for bob", chromedp.Navigate(e.url+"/ui/s/"+aliceSID), chromedp.WaitVisible(css(`h1`)))
	title := value(t, b, "the page's heading", chromedp.Text(css(`h1`)))
	panels := value(t, b, "the page's panels", chromedp.Evaluate[int](`document.querySelectorAll('#panel, #steps').length`))
	if title != "Not found" || panels != 0 {
		t.Errorf("alice's session page for bob: %q, %d panels", title, panels)
	}
	browse(t, b, time.Minute, "signing out", chromedp.Navigate(e.url+"/ui/"), chromedp.WaitVisible(css(`form.signout button`)),
		chromedp.Click(css(`form.signout button`)), chromedp.WaitVisible(css(`input[name=token]`)))
	signIn("alice")
	browse(t, b, time.Minute, "alice's list", chromedp.WaitVisible(css(`tr[data-session="`+aliceSID+`"]`)))
}

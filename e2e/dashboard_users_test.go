package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The dashboard over --http between users, without a browser: a plain
// net/http client with a cookie jar signs in with a bearer token, keeps a
// page's event stream open and posts the pages' actions as their forms do.

// webClient is a browser for the dashboard: its cookies, no redirects
// followed (the statuses are the test's to see).
func webClient(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// webSignIn signs user in on the dashboard with their bearer token.
func (e *httpE2E) webSignIn(t *testing.T, ctx context.Context, user string) *http.Client {
	t.Helper()
	c := webClient(t)
	code, hdr, body := webDo(t, ctx, c, http.MethodPost, e.url+"/ui/signin", url.Values{"token": {e.tokens[user]}}, map[string]string{"Origin": e.url})
	if code != http.StatusSeeOther || hdr.Get("Location") != "/ui/" {
		t.Fatalf("signing in as %s: %d %q\n%s", user, code, hdr.Get("Location"), body)
	}
	return c
}

// webDo sends a request (a form when form is not nil) and reads the whole
// answer.
func webDo(t *testing.T, ctx context.Context, c *http.Client, method, u string, form url.Values, hdr map[string]string) (int, http.Header, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading %s %s: %v", method, u, err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// webEvent is one server-sent event of a dashboard stream.
type webEvent struct{ name, data string }

// webStream opens a page's event stream and returns its events; the
// channel closes when the stream ends. The server subscribes the page
// before it sends the stream's first bytes, which carry the headers: once
// this returns, the page counts as open. The test's cleanup closes it.
func webStream(t *testing.T, ctx context.Context, c *http.Client, u string) <-chan webEvent {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("opening the stream %s: %v", u, err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("opening the stream %s: %d %s\n%s", u, resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	t.Cleanup(func() { resp.Body.Close() })
	events := make(chan webEvent, 1000)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		var ev webEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.data = strings.TrimPrefix(line, "data: ")
			case line == "" && ev.name != "":
				select {
				case events <- ev:
				default: // the test reads only the events it waits for
				}
				ev = webEvent{}
			}
		}
	}()
	return events
}

var (
	webTokenRE    = regexp.MustCompile(`name="csrf-token" content="([^"]+)"`)
	webQuestionRE = regexp.MustCompile(`data-question="([^"]+)"`)
)

// webPage reads a dashboard page with its page token (what its forms
// post).
func webPage(t *testing.T, ctx context.Context, c *http.Client, u string) (body, token string) {
	t.Helper()
	code, _, body := webDo(t, ctx, c, http.MethodGet, u, nil, nil)
	m := webTokenRE.FindStringSubmatch(body)
	if code != http.StatusOK || m == nil {
		t.Fatalf("GET %s: %d, no page token\n%s", u, code, tail(body, 3000))
	}
	return body, m[1]
}

// queryOutcome is what a tool call running in a goroutine returned.
type queryOutcome struct {
	res *mcp.CallToolResult
	out map[string]any
	err error
}

func callTool(ctx context.Context, cs *mcp.ClientSession, name string, args any) queryOutcome {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return queryOutcome{err: err}
	}
	var out map[string]any
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(b, &out)
	}
	return queryOutcome{res: res, out: out}
}

// waitQuestion waits, on the session page's stream events, until the
// session's panel shows a permission question, and returns its id. A query
// that returns first (done) fails the test: its question was not held.
func (e *httpE2E) waitQuestion(t *testing.T, ctx context.Context, c *http.Client, sid string, events <-chan webEvent, done <-chan queryOutcome) string {
	t.Helper()
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("the session page's stream ended before a question showed")
			}
			if ev.name != "panel" {
				continue
			}
			_, _, panel := webDo(t, ctx, c, http.MethodGet, e.url+"/ui/s/"+sid+"/panel", nil, nil)
			if m := webQuestionRE.FindStringSubmatch(panel); m != nil {
				return m[1]
			}
		case q := <-done:
			t.Fatalf("the query returned before its question showed on the owner's open page (not held for it): %v %v", q.err, q.out)
		case <-ctx.Done():
			t.Fatalf("waiting for the question on the session page: %v", ctx.Err())
		}
	}
}

// TestE2EDashboardAdminHoldsNoQuestion (issue 27, defect 5): a permission
// question of bob's, whose MCP client cannot be asked (no elicitation), is
// answered by the server's policy at once while only the admin alice has
// the dashboard open — her list and bob's session page — for she may not
// answer it; with --permission-timeout 1h a question held for her would
// outlast the call's 60 s. The control: with bob's own session page open,
// his next question waits for a dashboard answer; alice's answer to it is
// refused, bob's lets the tool run.
func TestE2EDashboardAdminHoldsNoQuestion(t *testing.T) {
	t.Parallel()
	e := startHTTPE2E(t, httpE2EOptions{users: []string{"alice", "bob"},
		args: []string{"--ui", "on", "--ui-admins", "alice", "--permission-timeout", "1h"}})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	bob := e.connect(t, "bob", "2025-11-25") // no elicitation handler: bob cannot be asked
	_, out := httpCall(t, ctx, bob, "claude_session_create", map[string]any{"cwd": e.cwd, "name": "bobs-session"})
	sid, _ := out["sessionId"].(string)
	if sid == "" {
		t.Fatalf("bob's create: %v", out)
	}

	// Only the admin watches: her list and bob's session page.
	alice := e.webSignIn(t, ctx, "alice")
	webStream(t, ctx, alice, e.url+"/ui/events")
	webStream(t, ctx, alice, e.url+"/ui/events?session="+url.QueryEscape(sid))
	qctx, qcancel := context.WithTimeout(ctx, 60*time.Second)
	q := callTool(qctx, bob, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "TOOL_BASH[touch denied.txt && echo hi]"})
	qcancel()
	if q.err != nil {
		t.Fatalf("bob's query while only the admin watched did not return in 60 s (held for the admin's pages?): %v", q.err)
	}
	ft, _ := q.out["finalText"].(string)
	for _, want := range []string{"Permission to use Bash was denied", "no dashboard page of the session's owner was open"} {
		if !strings.Contains(ft, want) {
			t.Errorf("bob's query lacks %q (the policy's denial): %s %v", want, text(q.res), q.out)
		}
	}
	if _, err := os.Stat(filepath.Join(e.cwd, "denied.txt")); err == nil {
		t.Error("the denied command ran")
	}

	// The control: bob's own page holds his next question.
	bobWeb := e.webSignIn(t, ctx, "bob")
	events := webStream(t, ctx, bobWeb, e.url+"/ui/events?session="+url.QueryEscape(sid))
	done := make(chan queryOutcome, 1)
	go func() {
		done <- callTool(ctx, bob, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "TOOL_BASH[touch answered.txt && echo hi]"})
	}()
	qid := e.waitQuestion(t, ctx, bobWeb, sid, events, done)

	// Alice sees it on bob's page, and may not answer it.
	page, token := webPage(t, ctx, alice, e.url+"/ui/s/"+sid)
	if !strings.Contains(page, `data-question="`+qid+`"`) || !strings.Contains(page, "Only the session's owner answers it.") {
		t.Errorf("bob's session page for the admin does not show his question %s as not hers to answer:\n%s", qid, tail(page, 3000))
	}
	answer := func(c *http.Client, token string) (int, string) {
		code, _, body := webDo(t, ctx, c, http.MethodPost, e.url+"/ui/s/"+sid+"/answer",
			url.Values{"csrf": {token}, "question": {qid}, "decision": {"allow_once"}},
			map[string]string{"Origin": e.url, "X-Requested-With": "dashboard"})
		return code, body
	}
	if code, body := answer(alice, token); code != http.StatusForbidden || !strings.Contains(body, "only the session's owner may answer") {
		t.Errorf("the admin's answer to bob's question: %d %q, want 403", code, body)
	}

	// Bob's answer finds the question still open and lets the tool run.
	_, token = webPage(t, ctx, bobWeb, e.url+"/ui/s/"+sid)
	if code, body := answer(bobWeb, token); code != http.StatusOK || !strings.Contains(body, "Answered: allow_once.") {
		t.Fatalf("bob's answer to his question: %d %q", code, body)
	}
	select {
	case q := <-done:
		if q.err != nil || q.out["finalText"] != "Tool said: hi" {
			t.Errorf("bob's query after his page allowed Bash: %v %v", q.err, q.out)
		}
	case <-ctx.Done():
		t.Fatalf("bob's query did not return after his page's answer: %v", ctx.Err())
	}
	if _, err := os.Stat(filepath.Join(e.cwd, "answered.txt")); err != nil {
		t.Errorf("the command bob allowed did not run: %v", err)
	}
}

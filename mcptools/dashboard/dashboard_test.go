package dashboard_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakecli"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/mcptest"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/audit"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/dashboard"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store/sqlite"
)

// Tests of the dashboard in process: the sign-in (the stdio secret, bearer
// tokens over HTTP, admins), the refusals of actions (Origin, page token,
// cookie), the security headers and the escaping, the event streams (a
// stalled reader never slows a query; one that fell behind resyncs), the
// actions (audited) and permission questions answered on the page.

// dashEnv is a server on the fake CLI with a dashboard on its own
// listener, as on stdio, and an in-memory MCP client.
type dashEnv struct {
	mgr   *sessions.Manager
	d     *dashboard.Dashboard
	cs    *mcp.ClientSession
	rec   *mcptest.Recorder
	url   string // the dashboard's base URL (its origin)
	ui    string // where its pages are: url and the root path
	audit *testkit.Buffer
}

func newDashEnv(t testing.TB, protocol string, elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) *dashEnv {
	t.Helper()
	path, env := fakecli.Command(t)
	mgr := sessions.NewManager(sessions.Config{CLIPath: path, Env: env, PermissionTimeout: 20 * time.Second})
	t.Cleanup(mgr.Shutdown)
	auditBuf := &testkit.Buffer{}
	al := audit.New(auditBuf, "audit.log", audit.Options{})
	d := dashboard.New(mgr, dashboard.Options{Audit: al})
	ts := httptest.NewServer(d)
	t.Cleanup(ts.Close)
	d.SetBaseURL(ts.URL)
	rec := mcptest.NewRecorder("dash", elicit)
	cs := mcptest.ConnectInMemory(t, mcptools.NewServer(mgr, mcptools.Options{Dashboard: d, Audit: al}), rec, protocol)
	return &dashEnv{mgr: mgr, d: d, cs: cs, rec: rec, url: ts.URL, ui: ts.URL + d.Root(), audit: auditBuf}
}

// newPlainServer is a server on the fake CLI without a dashboard, and an
// in-memory MCP client of protocol.
func newPlainServer(tb testing.TB, protocol string) *mcp.ClientSession {
	tb.Helper()
	path, env := fakecli.Command(tb)
	mgr := sessions.NewManager(sessions.Config{CLIPath: path, Env: env})
	tb.Cleanup(mgr.Shutdown)
	return mcptest.ConnectInMemory(tb, mcptools.NewServer(mgr, mcptools.Options{}), mcptest.NewRecorder("plain", nil), protocol)
}

// browser is an HTTP client with a cookie jar that follows no redirects.
func browser(t testing.TB) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func get(t testing.TB, c *http.Client, u string) (int, http.Header, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// signIn opens the stdio link with c.
func (e *dashEnv) signIn(t testing.TB, c *http.Client) {
	t.Helper()
	code, hdr, body := get(t, c, e.d.URL())
	if code != http.StatusOK || !strings.Contains(body, `http-equiv="refresh"`) {
		t.Fatalf("the link: %d %s", code, body)
	}
	ck := hdr.Get("Set-Cookie")
	for _, want := range []string{dashboard.CookieName + "=", "Path=" + e.d.Root() + ";", "HttpOnly", "SameSite=Strict"} {
		if !strings.Contains(ck, want) {
			t.Errorf("the sign-in cookie %q lacks %s", ck, want)
		}
	}
}

var csrfRE = regexp.MustCompile(`name="csrf-token" content="([^"]+)"`)

// pageToken reads the page token of a page.
func pageTokenOf(t testing.TB, body string) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no page token in:\n%s", body)
	}
	return m[1]
}

// post posts form to the dashboard with c, with the headers hdr.
func post(t testing.TB, c *http.Client, u string, form url.Values, hdr map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (e *dashEnv) create(t *testing.T, args map[string]any) string {
	t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	if args["cwd"] == nil {
		args["cwd"] = t.TempDir()
	}
	_, out := mcptest.CallJSON(t, e.cs, "claude_session_create", args)
	sid, _ := out["sessionId"].(string)
	if sid == "" {
		t.Fatalf("create: %v", out)
	}
	return sid
}

// TestDashboardStdioSignIn: without the secret every page is refused; the
// link signs a browser in with an HttpOnly SameSite=Strict cookie and a
// page that leaves the secret behind; a request naming another host (DNS
// rebinding) is refused; claude_session_list returns the link.
func TestDashboardStdioSignIn(t *testing.T) {
	e := newDashEnv(t, "2025-11-25", nil)
	sid := e.create(t, map[string]any{"name": "alpha"})
	c := browser(t)
	for _, u := range []string{e.url + "/ui/", e.url + "/ui/?secret=" + e.d.Secret(), e.ui + "/", e.ui + "/rows", e.ui + "/s/" + sid, e.ui + "/s/" + sid + "/panel",
		e.ui + "/events", e.ui + "/?secret=wrong"} {
		code, _, body := get(t, c, u)
		if code != http.StatusForbidden || strings.Contains(body, sid) || strings.Contains(body, e.d.Root()) {
			t.Errorf("GET %s without a sign-in: %d, shows the session: %v, the root: %v", u, code, strings.Contains(body, sid), strings.Contains(body, e.d.Root()))
		}
	}
	e.signIn(t, c)
	code, hdr, body := get(t, c, e.ui+"/")
	if code != http.StatusOK || !strings.Contains(body, "alpha") || !strings.Contains(body, sid) {
		t.Fatalf("the list after sign-in: %d\n%s", code, body)
	}
	if csp := hdr.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe") {
		t.Errorf("CSP = %q", csp)
	}
	// A page of another name that resolves here is refused, cookie or not.
	req, _ := http.NewRequest(http.MethodGet, e.ui+"/", nil)
	req.Host = "rebound.example:" + strings.Split(strings.TrimPrefix(e.url, "http://"), ":")[1]
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("another Host: %d, want 403", resp.StatusCode)
	}
	if instr := e.cs.InitializeResult().Instructions; !strings.Contains(instr, "dashboardUrl") {
		t.Errorf("the instructions do not mention the dashboard:\n%s", instr)
	}
	_, out := mcptest.CallJSON(t, e.cs, "claude_session_list", map[string]any{})
	if out["dashboardUrl"] != e.d.URL() || !strings.Contains(e.d.URL(), "secret=") {
		t.Errorf("dashboardUrl = %v, want %s", out["dashboardUrl"], e.d.URL())
	}
}

// TestDashboardNoInlineScript: no page has an inline script, an event
// handler attribute or a style attribute (the CSP would block them), and
// every page sends the CSP.
func TestDashboardNoInlineScript(t *testing.T) {
	e := newDashEnv(t, "2025-11-25", nil)
	sid := e.create(t, nil)
	mcptest.CallJSON(t, e.cs, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "hi"})
	c := browser(t)
	e.signIn(t, c)
	scriptTag := regexp.MustCompile(`(?i)<script[^>]*>[^<]*`)
	handler := regexp.MustCompile(`(?i)\son[a-z]+\s*=|\sstyle\s*=|javascript:`)
	for _, path := range []string{"/", "/rows", "/s/" + sid, "/s/" + sid + "/panel"} {
		code, hdr, body := get(t, c, e.ui+path)
		if code != http.StatusOK {
			t.Errorf("GET %s: %d", path, code)
		}
		if hdr.Get("Content-Security-Policy") == "" || hdr.Get("X-Frame-Options") != "DENY" || hdr.Get("Referrer-Policy") != "same-origin" {
			t.Errorf("GET %s: headers %v", path, hdr)
		}
		for _, tag := range scriptTag.FindAllString(body, -1) {
			if !strings.Contains(tag, ` src="`+e.d.Root()+`/static/`) || !strings.HasSuffix(tag, ">") {
				t.Errorf("GET %s has an inline script: %q", path, tag)
			}
		}
		if m := handler.FindString(body); m != "" {
			t.Errorf("GET %s has an event handler or style attribute: %q", path, m)
		}
	}
}

// TestDashboardEscapes: what a model or tool produced reaches a page as
// text: a prompt holding markup is shown escaped in the history.
func TestDashboardEscapes(t *testing.T) {
	e := newDashEnv(t, "2025-11-25", nil)
	sid := e.create(t, nil)
	const evil = `<script>alert(1)</script><img src=x onerror=alert(2)>`
	mcptest.CallJSON(t, e.cs, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": evil})
	c := browser(t)
	e.signIn(t, c)
	_, _, body := get(t, c, e.ui+"/s/"+sid)
	if strings.Contains(body, "<script>alert") || strings.Contains(body, "<img src=x") {
		t.Errorf("the markup reached the page unescaped:\n%s", body)
	}
	if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;") {
		t.Errorf("the prompt is not shown as text:\n%s", body)
	}
}

// TestDashboardActionRefusals: an action without the cookie (a cross-site
// form post: SameSite=Strict keeps the cookie back), with a foreign or no
// Origin, or without the page's token (or with another sign-in's) is
// refused and changes nothing; an unclassified action is refused; the
// right one closes the session, and both its audit lines are written.
func TestDashboardActionRefusals(t *testing.T) {
	e := newDashEnv(t, "2025-11-25", nil)
	sid := e.create(t, nil)
	c := browser(t)
	e.signIn(t, c)
	_, _, page := get(t, c, e.ui+"/s/"+sid)
	token := pageTokenOf(t, page)
	other := browser(t)
	e.signIn(t, other)
	_, _, otherPage := get(t, other, e.ui+"/s/"+sid)
	closeURL := e.ui + "/s/" + sid + "/close"
	for _, tc := range []struct {
		name   string
		client *http.Client
		form   url.Values
		hdr    map[string]string
	}{
		{"no cookie (cross-site)", browser(t), url.Values{"csrf": {token}}, map[string]string{"Origin": e.url}},
		{"foreign origin", c, url.Values{"csrf": {token}}, map[string]string{"Origin": "https://evil.example"}},
		{"null origin", c, url.Values{"csrf": {token}}, map[string]string{"Origin": "null"}},
		{"no origin", c, url.Values{"csrf": {token}}, nil},
		{"no token", c, url.Values{}, map[string]string{"Origin": e.url}},
		{"another sign-in's token", c, url.Values{"csrf": {pageTokenOf(t, otherPage)}}, map[string]string{"Origin": e.url}},
		{"forged token", c, url.Values{"csrf": {token[:len(token)-4] + "AAAA"}}, map[string]string{"Origin": e.url}},
	} {
		code, _ := post(t, tc.client, closeURL, tc.form, tc.hdr)
		if code != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", tc.name, code)
		}
	}
	if code, body := post(t, c, e.ui+"/s/"+sid+"/frobnicate", url.Values{"csrf": {token}}, map[string]string{"Origin": e.url}); code != http.StatusForbidden || !strings.Contains(body, "not classified") {
		t.Errorf("an unclassified action: %d %s", code, body)
	}
	if _, err := e.mgr.Get(sid); err != nil {
		t.Fatalf("a refused action closed the session: %v", err)
	}
	if strings.Contains(e.audit.String(), "ui:close") {
		t.Errorf("a refused action was audited as run:\n%s", e.audit.String())
	}
	code, _ := post(t, c, closeURL, url.Values{"csrf": {token}}, map[string]string{"Origin": e.url})
	if code != http.StatusSeeOther {
		t.Fatalf("the close: %d", code)
	}
	if n := e.mgr.Count(); n != 0 {
		t.Errorf("%d sessions open after the close", n)
	}
	audit := e.audit.String()
	if !strings.Contains(audit, `"tool":"ui:close","session":"`+sid+`","outcome":"started"`) || !strings.Contains(audit, `"tool":"ui:close","session":"`+sid+`","outcome":"ok"`) {
		t.Errorf("the audit log lacks the close:\n%s", audit)
	}
}

// allowAll is a client that allows every tool once.
func allowAll(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": dashboard.DecisionAllowOnce}}, nil
}

// sse reads a page's event stream.
type sse struct {
	resp   *http.Response
	events chan [2]string // name, data
}

func openSSE(t testing.TB, c *http.Client, u string) *sse {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d", u, resp.StatusCode)
	}
	s := &sse{resp: resp, events: make(chan [2]string, 1000)}
	t.Cleanup(func() { resp.Body.Close() })
	go func() {
		defer close(s.events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		var name, data string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				data = strings.TrimPrefix(line, "data: ")
			case line == "" && name != "":
				s.events <- [2]string{name, data}
				name, data = "", ""
			}
		}
	}()
	return s
}

// next waits for an event named one of names, returning its data.
func (s *sse) next(t *testing.T, names ...string) (string, string) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				t.Fatalf("the stream ended waiting for %v", names)
			}
			for _, n := range names {
				if ev[0] == n {
					return ev[0], ev[1]
				}
			}
		case <-timeout:
			t.Fatalf("no %v event", names)
		}
	}
}

// TestDashboardStream: a session page's stream carries the running turn's
// steps, from its start, and the list's says it changed.
func TestDashboardStream(t *testing.T) {
	e := newDashEnv(t, "2025-11-25", allowAll)
	sid := e.create(t, nil)
	c := browser(t)
	e.signIn(t, c)
	page := openSSE(t, c, e.ui+"/events?session="+sid)
	list := openSSE(t, c, e.ui+"/events")
	mcptest.CallJSON(t, e.cs, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "TOOL_BASH[echo hi]"})
	page.next(t, "turn")
	var kinds []string
	for {
		_, data := page.next(t, "step")
		var st dashboard.UIStep
		if err := json.Unmarshal([]byte(data), &st); err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, st.Kind)
		if st.Kind == "done" {
			break
		}
	}
	got := strings.Join(kinds, ",")
	for _, want := range []string{"turn_started", "tool_started", "permission", "tool_finished", "done"} {
		if !strings.Contains(got, want) {
			t.Errorf("steps %s lack %s", got, want)
		}
	}
	list.next(t, "changed")
}

// blockingWriter is a ResponseWriter whose writes after the first wait
// until released: a browser that stopped reading.
type blockingWriter struct {
	h       http.Header
	release chan struct{}
	wrote   chan struct{} // a token after each write
	writes  atomic.Int32
	mu      sync.Mutex
	buf     strings.Builder
}

func (w *blockingWriter) Header() http.Header { return w.h }
func (w *blockingWriter) WriteHeader(int)     {}
func (w *blockingWriter) Flush()              {}
func (w *blockingWriter) Write(p []byte) (int, error) {
	if w.writes.Add(1) > 1 {
		<-w.release
	}
	w.mu.Lock()
	w.buf.Write(p)
	w.mu.Unlock()
	select {
	case w.wrote <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (w *blockingWriter) text() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestDashboardStalledReader: a page whose browser stopped reading costs
// the queries nothing — turns run to their end while its stream waits on
// a write — and once it reads again it is told to resync and gets the
// window anew.
func TestDashboardStalledReader(t *testing.T) {
	e := newDashEnv(t, "2025-11-25", allowAll)
	e.d.SetMaxSteps(4) // a turn has more steps than that
	sid := e.create(t, nil)
	c := browser(t)
	e.signIn(t, c)
	req := httptest.NewRequest(http.MethodGet, e.ui+"/events?session="+sid, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req = req.WithContext(ctx)
	u, _ := url.Parse(e.ui + "/events")
	for _, ck := range c.Jar.Cookies(u) {
		req.AddCookie(ck)
	}
	req.Host = u.Host
	w := &blockingWriter{h: http.Header{}, release: make(chan struct{}), wrote: make(chan struct{}, 1)}
	served := make(chan struct{})
	go func() {
		defer close(served)
		e.d.ServeHTTP(w, req)
	}()
	<-w.wrote // the stream is open and watches
	// The first turn's first steps reach the stream, whose next write then
	// blocks; the turns go on regardless.
	for i := 0; i < 3; i++ {
		res, _ := mcptest.CallJSON(t, e.cs, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "TOOL_BASH[echo hi]"})
		if res.IsError {
			t.Fatalf("query %d: %s", i, mcptest.Text(res))
		}
	}
	if w.writes.Load() < 2 {
		t.Fatalf("the stream wrote %d times: it never blocked:\n%s", w.writes.Load(), w.text())
	}
	close(w.release)
	// The stream goes on with the latest turn: its start and its end.
	timeout := time.After(20 * time.Second)
	caughtUp := func(out string) bool {
		i := strings.LastIndex(out, "event: turn")
		return strings.Count(out, "event: turn") >= 2 && strings.Contains(out[i:], `"kind":"done"`)
	}
	for !caughtUp(w.text()) {
		select {
		case <-w.wrote:
		case <-timeout:
			t.Fatalf("the stream did not catch up:\n%s", w.text())
		}
	}
	cancel()
	<-served
	out := w.text()
	if !strings.Contains(out, "event: turn") || !strings.Contains(out, `"kind":"done"`) {
		t.Errorf("the stream after it read again:\n%s", out)
	}
	// The stream was reading the first turn's feed; three turns later it
	// is on the last one, whose start it sent as a new turn.
	if n := strings.Count(out, "event: turn"); n < 2 {
		t.Errorf("%d turn events, want the first and the latest:\n%s", n, out)
	}
}

// TestDashboardInterrupt: the page's interrupt stops the running turn
// (here one waiting on a permission question, so that the fake CLI is
// surely in its turn) and the query returns interrupted; the session
// answers its next query; the action is audited.
func TestDashboardInterrupt(t *testing.T) {
	e := newDashEnv(t, "2025-11-25", nil)
	sid := e.create(t, nil)
	c := browser(t)
	e.signIn(t, c)
	page := openSSE(t, c, e.ui+"/events?session="+sid)
	done := make(chan map[string]any, 1)
	go func() {
		res, err := e.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "claude_chat_query", Arguments: map[string]any{"sessionId": sid, "prompt": "TOOL_BASH[echo hi]"}})
		var out map[string]any
		if err == nil {
			b, _ := json.Marshal(res.StructuredContent)
			_ = json.Unmarshal(b, &out)
		}
		done <- out
	}()
	body := ""
	for !strings.Contains(body, `name="question"`) {
		page.next(t, "panel")
		_, _, body = get(t, c, e.ui+"/s/"+sid)
	}
	if !strings.Contains(body, `id="interrupt"`) {
		t.Fatalf("no interrupt button while the turn runs:\n%s", body)
	}
	code, _ := post(t, c, e.ui+"/s/"+sid+"/interrupt", url.Values{"csrf": {pageTokenOf(t, body)}}, map[string]string{"Origin": e.url})
	if code != http.StatusSeeOther {
		t.Fatalf("interrupt: %d", code)
	}
	select {
	case out := <-done:
		if out["interrupted"] != true {
			t.Errorf("the query: %v", out)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the query did not end after the interrupt")
	}
	res, out := mcptest.CallJSON(t, e.cs, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "hi"})
	if res.IsError || out["interrupted"] == true {
		t.Errorf("the next query: %s", mcptest.Text(res))
	}
	if a := e.audit.String(); !strings.Contains(a, `"tool":"ui:interrupt","session":"`+sid+`","outcome":"ok"`) {
		t.Errorf("the interrupt is not audited:\n%s", a)
	}
}

// answerOnPage waits for a question on the session's page and answers it.
func answerOnPage(t *testing.T, e *dashEnv, c *http.Client, page *sse, sid, decision string) {
	t.Helper()
	for {
		body := ""
		if len(e.d.Questions(sid)) > 0 {
			_, _, body = get(t, c, e.ui+"/s/"+sid)
		}
		if m := regexp.MustCompile(`name="question" value="([^"]+)"`).FindStringSubmatch(body); m != nil {
			code, text := post(t, c, e.ui+"/s/"+sid+"/answer", url.Values{"csrf": {pageTokenOf(t, body)}, "question": {m[1]}, "decision": {decision}, "reason": {"from the page"}},
				map[string]string{"Origin": e.url})
			if code != http.StatusSeeOther {
				t.Fatalf("answer: %d %s", code, text)
			}
			return
		}
		page.next(t, "panel")
	}
}

// TestDashboardPermission: a question is answered on the page whatever the
// client: one that elicits but never answers (the page's answer wins and
// the client's question is withdrawn), a client of 2026-07-28 (the
// question queued in the run), and a client that cannot be asked while the
// page is open. The tool then runs (the fake CLI's recorded output, not a
// refusal).
func TestDashboardPermission(t *testing.T) {
	hang := func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	for _, tc := range []struct {
		name     string
		protocol string
		elicit   func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)
	}{
		{"elicitation", "2025-11-25", hang},
		{"no_elicitation", "2025-11-25", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newDashEnv(t, tc.protocol, tc.elicit)
			sid := e.create(t, nil)
			c := browser(t)
			e.signIn(t, c)
			page := openSSE(t, c, e.ui+"/events?session="+sid)
			// openSSE returned with the stream's headers: the page watches.
			done := e.startQuery(sid, "TOOL_BASH[echo hi]")
			answerOnPage(t, e, c, page, sid, dashboard.DecisionAllowOnce)
			res := <-done
			var out mcptools.QueryOutput
			b, _ := json.Marshal(res.StructuredContent)
			_ = json.Unmarshal(b, &out)
			if res.IsError || len(out.Metadata.PermissionDenials) != 0 || len(out.ToolInvocations) != 1 || out.ToolInvocations[0].IsError {
				t.Errorf("the query after the page allowed the tool: %s %+v", mcptest.Text(res), out)
			}
		})
	}
	// On 2026-07-28 the question waits in the run while the client holds
	// it as an input-required result; the page answers first, the client's
	// later deny comes too late and the tool has run.
	t.Run("input_required", func(t *testing.T) {
		release := make(chan struct{})
		late := func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": dashboard.DecisionDeny, "reason": "too late"}}, nil
		}
		e := newDashEnv(t, "", late)
		sid := e.create(t, nil)
		c := browser(t)
		e.signIn(t, c)
		page := openSSE(t, c, e.ui+"/events?session="+sid)
		done := e.startQuery(sid, "TOOL_BASH[echo hi]")
		answerOnPage(t, e, c, page, sid, dashboard.DecisionAllowOnce)
		close(release)
		res := <-done
		var out mcptools.QueryOutput
		b, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(b, &out)
		if res.IsError || len(out.Metadata.PermissionDenials) != 0 || len(out.ToolInvocations) != 1 || out.ToolInvocations[0].IsError {
			t.Errorf("the query after the page allowed the tool: %s %+v", mcptest.Text(res), out)
		}
	})
	t.Run("no_page_no_elicitation", func(t *testing.T) {
		e := newDashEnv(t, "2025-11-25", nil)
		sid := e.create(t, nil)
		_, out := mcptest.CallJSON(t, e.cs, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "TOOL_BASH[echo hi]"})
		md, _ := out["metadata"].(map[string]any)
		if denials, _ := md["permissionDenials"].([]any); len(denials) != 1 {
			t.Errorf("without a page the policy answers at once: %v", out)
		}
	})
}

// TestDashboardHTTP: over HTTP the dashboard is /ui on the same listener;
// a bearer token signs in and shows that user's sessions only (another
// user's page is not found), an admin sees all, a wrong token is refused
// and audited, and removing the token ends the sign-in.
func TestDashboardHTTP(t *testing.T) {
	e := newDashHTTP(t, sessions.Config{})
	base, audit, h := e.base, e.audit, e.h
	aliceSID := mcptest.CreateSession(t, e.connect(t, "alice-secret", "2025-11-25"))
	bobSID := mcptest.CreateSession(t, e.connect(t, "bob-secret", "2025-11-25"))
	signIn := func(token string) (*http.Client, int) { return e.signIn(t, token) }
	file := e.tokens
	if code, _, _ := get(t, browser(t), base+"/ui/"); code != http.StatusSeeOther {
		t.Errorf("the list without a sign-in: %d, want the sign-in page", code)
	}
	if _, code := signIn("nobody-secret"); code != http.StatusUnauthorized {
		t.Errorf("a wrong token: %d", code)
	}
	if !strings.Contains(audit.String(), `"outcome":"auth_failed"`) {
		t.Errorf("the failed sign-in is not audited:\n%s", audit.String())
	}
	if c := browser(t); true {
		if code, _ := post(t, c, base+"/ui/signin", url.Values{"token": {"alice-secret"}}, map[string]string{"Origin": "https://evil.example"}); code != http.StatusForbidden {
			t.Errorf("a cross-site sign-in: %d", code)
		}
	}
	alice, code := signIn("alice-secret")
	if code != http.StatusSeeOther {
		t.Fatalf("alice's sign-in: %d", code)
	}
	_, _, body := get(t, alice, base+"/ui/")
	if !strings.Contains(body, aliceSID) || strings.Contains(body, bobSID) {
		t.Errorf("alice's list shows her session %v, bob's %v", strings.Contains(body, aliceSID), strings.Contains(body, bobSID))
	}
	if code, _, body := get(t, alice, base+"/ui/s/"+bobSID); code != http.StatusNotFound || strings.Contains(body, bobSID[:8]+"</") {
		t.Errorf("bob's page for alice: %d", code)
	}
	if code, _, _ := get(t, alice, base+"/ui/events?session="+bobSID); code != http.StatusNotFound {
		t.Errorf("bob's stream for alice: %d", code)
	}
	_, _, page := get(t, alice, base+"/ui/s/"+aliceSID)
	if code, _ := post(t, alice, base+"/ui/s/"+bobSID+"/close", url.Values{"csrf": {pageTokenOf(t, page)}}, map[string]string{"Origin": base}); code != http.StatusNotFound {
		t.Errorf("alice closing bob's session: %d", code)
	}
	root, _ := signIn("root-secret")
	_, _, body = get(t, root, base+"/ui/")
	if !strings.Contains(body, aliceSID) || !strings.Contains(body, bobSID) {
		t.Errorf("the admin's list lacks a session")
	}
	// Revoking alice ends her sign-in.
	testkit.WriteTokens(t, file, "bob", "root")
	if err := h.ReloadTokens(context.Background()); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := get(t, alice, base+"/ui/"); code != http.StatusSeeOther {
		t.Errorf("alice's list after her token was removed: %d", code)
	}
	if code, _, _ := get(t, root, base+"/ui/s/"+bobSID); code != http.StatusOK {
		t.Errorf("the admin's page of bob's session: %d", code)
	}
}

// BenchmarkWarmQueryDashboard: a warm claude_chat_query (as
// BenchmarkWarmQuery) without a dashboard, with one that no page watches,
// and with the session's page open, its event stream read over HTTP.
func BenchmarkWarmQueryDashboard(b *testing.B) {
	for _, mode := range []string{"off", "on", "page_open"} {
		b.Run(mode, func(b *testing.B) {
			b.Setenv("FAKE_CLAUDE_SPEED", "1000000")
			var cs *mcp.ClientSession
			var e *dashEnv
			if mode == "off" {
				cs = newPlainServer(b, "2025-11-25")
			} else {
				e = newDashEnv(b, "2025-11-25", nil)
				cs = e.cs
			}
			query := func(args map[string]any) map[string]any {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "claude_chat_query", Arguments: args})
				if err != nil || res.IsError {
					b.Fatalf("query: %v %v", err, res)
				}
				var out map[string]any
				raw, _ := json.Marshal(res.StructuredContent)
				_ = json.Unmarshal(raw, &out)
				return out
			}
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "claude_session_create", Arguments: map[string]any{"cwd": b.TempDir()}})
			if err != nil || res.IsError {
				b.Fatalf("create: %v %v", err, res)
			}
			raw, _ := json.Marshal(res.StructuredContent)
			var out map[string]any
			_ = json.Unmarshal(raw, &out)
			sid := out["sessionId"].(string)
			if mode == "page_open" {
				c := browser(b)
				e.signIn(b, c)
				page := openSSE(b, c, e.ui+"/events?session="+sid)
				go func() {
					for range page.events { // the page reads everything
					}
				}()
			}
			query(map[string]any{"sessionId": sid, "prompt": "hi"})
			b.ResetTimer()
			for b.Loop() {
				query(map[string]any{"sessionId": sid, "prompt": "hi"})
			}
		})
	}
}

// TestDashboardOtherInstances: the sessions another instance holds in a
// shared store are listed apart, read-only: no page or action of this
// instance reaches them (and nothing takes them up). On stdio those of no
// user are listed, not a user's of an instance over HTTP.
func TestDashboardOtherInstances(t *testing.T) {
	path, env := fakecli.Command(t)
	state := filepath.Join(t.TempDir(), "sessions.db")
	open := func() store.Store {
		st, err := sqlite.Open(context.Background(), state, sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	mgr := sessions.NewManager(sessions.Config{CLIPath: path, Env: env, Store: open()})
	t.Cleanup(mgr.Shutdown)
	other := sessions.NewManager(sessions.Config{CLIPath: path, Env: env, Store: open()})
	t.Cleanup(other.Shutdown)
	s, err := other.Create(context.Background(), sessions.CreateOptions{Cwd: t.TempDir(), SessionOptions: claudeagent.SessionOptions{Name: "elsewhere"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Create(context.Background(), sessions.CreateOptions{Cwd: t.TempDir(), Owner: "alice",
		SessionOptions: claudeagent.SessionOptions{Name: "alices"}}); err != nil {
		t.Fatal(err)
	}
	d := dashboard.New(mgr, dashboard.Options{})
	ts := httptest.NewServer(d)
	t.Cleanup(ts.Close)
	d.SetBaseURL(ts.URL)
	e := &dashEnv{mgr: mgr, d: d, url: ts.URL, ui: ts.URL + d.Root()}
	c := browser(t)
	e.signIn(t, c)
	_, _, body := get(t, c, e.ui+"/")
	i := strings.Index(body, "Stored sessions")
	if i < 0 || !strings.Contains(body[i:], "elsewhere") {
		t.Fatalf("the other instance's session is not listed apart:\n%s", body)
	}
	if strings.Contains(body, "alices") {
		t.Errorf("alice's session is listed on stdio:\n%s", body)
	}
	if code, _, _ := get(t, c, e.ui+"/s/"+s.ID); code != http.StatusNotFound {
		t.Errorf("the other instance's session page: %d, want 404", code)
	}
	if n := len(mgr.List()); n != 0 {
		t.Errorf("this instance took up %d session(s)", n)
	}
}

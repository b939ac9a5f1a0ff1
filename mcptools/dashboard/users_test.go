package dashboard_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakecli"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/mcptest"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/audit"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/dashboard"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/httpserve"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// Tests of the dashboard over HTTP with several users: who may answer a
// question holds it, a list stream is woken for its viewer's sessions
// only, counts cover the viewer's sessions, each user's sign-ins are
// their own.

// dashHTTP is a server over HTTP with tokens for alice, bob and root (an
// admin), and the dashboard at /ui.
type dashHTTP struct {
	base   string
	d      *dashboard.Dashboard
	mgr    *sessions.Manager
	h      *httpserve.HTTPHandler
	tokens string // the tokens file
	audit  *testkit.Buffer
}

// connect connects a go-sdk client with token (protocol "" negotiates the
// newest).
func (e *dashHTTP) connect(t *testing.T, token, protocol string) *mcp.ClientSession {
	t.Helper()
	return mcptest.ConnectHTTP(t, e.base+"/mcp", token, protocol)
}

func newDashHTTP(t testing.TB, cfg sessions.Config) *dashHTTP {
	t.Helper()
	path, env := fakecli.Command(t)
	wd, _ := os.Getwd()
	cfg.CLIPath, cfg.Env, cfg.Remote, cfg.AllowedRoots = path, env, true, []string{os.TempDir(), wd}
	mgr := sessions.NewManager(cfg)
	t.Cleanup(mgr.Shutdown)
	auditBuf := &testkit.Buffer{}
	al := audit.New(auditBuf, "audit.log", audit.Options{})
	d := dashboard.New(mgr, dashboard.Options{Admins: []string{"root"}, Audit: al})
	srv := mcptools.NewServer(mgr, mcptools.Options{Dashboard: d, Audit: al})
	file := filepath.Join(t.TempDir(), "tokens")
	testkit.WriteTokens(t, file, "alice", "bob", "root")
	tokens, err := httpserve.LoadTokens(file, "")
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(nil)
	base := "http://" + ts.Listener.Addr().String()
	h := httpserve.NewHTTPHandler(srv, httpserve.HTTPOptions{Tokens: tokens, BaseURL: base, Manager: mgr, Dashboard: d, OnAuthEvent: httpserve.AuditAuth(al)})
	ts.Config = h.Server()
	ts.Start()
	t.Cleanup(ts.Close)
	return &dashHTTP{base: base, d: d, mgr: mgr, h: h, tokens: file, audit: auditBuf}
}

// signIn signs a new browser in with token; it returns the browser and
// the sign-in's status (303 when it worked).
func (e *dashHTTP) signIn(t testing.TB, token string) (*http.Client, int) {
	t.Helper()
	c := browser(t)
	code, _ := post(t, c, e.base+"/ui/signin", url.Values{"token": {token}}, map[string]string{"Origin": e.base})
	return c, code
}

// TestDashboardAdminListHoldsNoQuestion: a permission question of bob's
// session, from a client that cannot be asked, is answered by the policy
// at once while only the admin watches (the list and the session's own
// page open): an admin may not answer it, so it does not wait for them.
// The permission timeout is an hour: a question held for the admin would
// outlast the call's 30 s and fail the test.
func TestDashboardAdminListHoldsNoQuestion(t *testing.T) {
	e := newDashHTTP(t, sessions.Config{PermissionTimeout: time.Hour})
	bob := e.connect(t, "bob-secret", "2025-11-25") // no elicitation
	sid := mcptest.CreateSession(t, bob)
	root, code := e.signIn(t, "root-secret")
	if code != http.StatusSeeOther {
		t.Fatalf("the admin's sign-in: %d", code)
	}
	openSSE(t, root, e.base+"/ui/events")
	openSSE(t, root, e.base+"/ui/events?session="+sid)
	if !e.d.Watched(sid, "root") {
		t.Fatal("the admin's pages are not open")
	}
	res, out := mcptest.CallJSON(t, bob, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "TOOL_BASH[echo hi]"})
	md, _ := out["metadata"].(map[string]any)
	denials, _ := md["permissionDenials"].([]any)
	if res.IsError || len(denials) != 1 {
		t.Errorf("the policy (deny) did not answer bob's question: %s %v", mcptest.Text(res), out)
	}
}

// TestDashboardListWakesOwnSessions: a list stream is woken by what
// happens to the sessions its viewer sees: bob's create, query and close
// wake the admin's list and not alice's; alice's create wakes hers.
func TestDashboardListWakesOwnSessions(t *testing.T) {
	e := newDashHTTP(t, sessions.Config{})
	aliceList := e.d.Subscribe("alice", "")
	defer e.d.Unsubscribe(aliceList)
	rootList := e.d.Subscribe("root", "")
	defer e.d.Unsubscribe(rootList)
	woken := func(sub *dashboard.Subscriber) bool {
		select {
		case <-sub.Wake():
			return true
		default:
			return false
		}
	}
	bob := e.connect(t, "bob-secret", "2025-11-25")
	sid := mcptest.CreateSession(t, bob)
	mcptest.CallJSON(t, bob, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "hi"})
	mcptest.CallJSON(t, bob, "claude_session_close", map[string]any{"sessionId": sid})
	if woken(aliceList) {
		t.Error("bob's session woke alice's list")
	}
	if !woken(rootList) {
		t.Error("bob's session did not wake the admin's list")
	}
	mcptest.CreateSession(t, e.connect(t, "alice-secret", "2025-11-25"))
	if !woken(aliceList) {
		t.Error("alice's own session did not wake her list")
	}
}

// TestDashboardCountsPerUser: the counts a user reads cover their own sessions:
// bob, with none, reads no live process while alice's runs; closing his
// session leaves "0 open" for him, in claude_session_close and on the
// dashboard, while alice's stays open.
func TestDashboardCountsPerUser(t *testing.T) {
	e := newDashHTTP(t, sessions.Config{})
	alice := e.connect(t, "alice-secret", "2025-11-25")
	bob := e.connect(t, "bob-secret", "2025-11-25")
	aliceSID := mcptest.CreateSession(t, alice)
	mcptest.CallJSON(t, alice, "claude_chat_query", map[string]any{"sessionId": aliceSID, "prompt": "hi"})
	res, out := mcptest.CallJSON(t, bob, "claude_session_list", map[string]any{})
	if out["liveProcesses"] != float64(0) || out["queued"] != float64(0) || !strings.HasPrefix(mcptest.Text(res), "0 open session(s), 0 live process(es).") {
		t.Errorf("bob's list, with no session, counts others': %v\n%s", out, mcptest.Text(res))
	}
	if _, out := mcptest.CallJSON(t, alice, "claude_session_list", map[string]any{}); out["liveProcesses"] != float64(1) {
		t.Errorf("alice's list: liveProcesses = %v, want her one", out["liveProcesses"])
	}
	sid := mcptest.CreateSession(t, bob)
	res, out = mcptest.CallJSON(t, bob, "claude_session_close", map[string]any{"sessionId": sid})
	if out["activeSessions"] != float64(0) || !strings.Contains(mcptest.Text(res), "; 0 session(s) remain open.") {
		t.Errorf("bob's close counts others' sessions: %v %s", out, mcptest.Text(res))
	}
	sid = mcptest.CreateSession(t, bob)
	c, _ := e.signIn(t, "bob-secret")
	_, _, page := get(t, c, e.base+"/ui/s/"+sid)
	code, text := post(t, c, e.base+"/ui/s/"+sid+"/close", url.Values{"csrf": {pageTokenOf(t, page)}},
		map[string]string{"Origin": e.base, "X-Requested-With": "dashboard"})
	if code != http.StatusOK || !strings.Contains(text, "Closed; 0 session(s) remain open.") {
		t.Errorf("bob's close on the dashboard: %d %s", code, text)
	}
	if _, err := e.mgr.Get(aliceSID); err != nil {
		t.Fatalf("alice's session: %v", err)
	}
}

// TestDashboardSigninsPerUser: each user's sign-ins are a table of their
// own: bob signing in beyond the bound pushes out his oldest sign-ins,
// never alice's.
func TestDashboardSigninsPerUser(t *testing.T) {
	e := newDashHTTP(t, sessions.Config{})
	e.d.SetMaxSignins(4)
	alice, code := e.signIn(t, "alice-secret")
	if code != http.StatusSeeOther {
		t.Fatalf("alice's sign-in: %d", code)
	}
	var bobs []*http.Client
	for range e.d.MaxSignins() + 2 {
		c, code := e.signIn(t, "bob-secret")
		if code != http.StatusSeeOther {
			t.Fatalf("bob's sign-in: %d", code)
		}
		bobs = append(bobs, c)
	}
	if code, _, _ := get(t, alice, e.base+"/ui/"); code != http.StatusOK {
		t.Errorf("alice's sign-in after bob's %d: %d, want it to stand", len(bobs), code)
	}
	for i, c := range bobs {
		code, _, _ := get(t, c, e.base+"/ui/")
		if want := map[bool]int{true: http.StatusSeeOther, false: http.StatusOK}[i < 2]; code != want {
			t.Errorf("bob's sign-in %d: %d, want %d (his two oldest pushed out)", i, code, want)
		}
	}
	n, users := e.d.SigninCounts()
	if n != e.d.MaxSignins()+1 || users != 2 {
		t.Errorf("%d sign-ins of %d users, want %d of 2", n, users, e.d.MaxSignins()+1)
	}
}

// TestSessionURLKeepsTheRoot: a session's link for alerts is the page over
// HTTP, and none on stdio, where the pages' root is a secret that a
// webhook would otherwise get (defect 10 of issue 43).
func TestSessionURLKeepsTheRoot(t *testing.T) {
	e := newDashEnv(t, "2025-11-25", nil)
	if u := e.d.SessionURL("abc"); u != "" {
		t.Errorf("on stdio SessionURL = %q, want none", u)
	}
	h := newDashHTTP(t, sessions.Config{})
	if u := h.d.SessionURL("abc"); !strings.HasSuffix(u, "/ui/s/abc") {
		t.Errorf("over HTTP SessionURL = %q, want the page at /ui/s/abc", u)
	}
}

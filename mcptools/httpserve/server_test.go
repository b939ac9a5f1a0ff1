package httpserve_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
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
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/httpserve"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// httpServer serves a server over the fake CLI on httptest, with tokens for
// alice and bob, through the http.Server of the handler (its limits).
type httpServer struct {
	url    string
	mgr    *sessions.Manager
	srv    *mcp.Server
	h      *httpserve.HTTPHandler
	audit  *testkit.Buffer
	tokens string // the tokens file
}

func newHTTPServer(t *testing.T, cfg sessions.Config, opts mcptools.Options) *httpServer {
	t.Helper()
	return newHTTPServerWith(t, cfg, opts, httpserve.HTTPOptions{})
}

// newHTTPServerWith is newHTTPServer with HTTP options (Tokens, BaseURL and
// Manager are filled in).
func newHTTPServerWith(t *testing.T, cfg sessions.Config, opts mcptools.Options, ho httpserve.HTTPOptions) *httpServer {
	t.Helper()
	path, env := fakecli.Command(t)
	cfg.CLIPath, cfg.Env, cfg.Remote = path, env, true
	if cfg.AllowedRoots == nil {
		wd, _ := os.Getwd()
		cfg.AllowedRoots = []string{os.TempDir(), wd} // the tests' directories and the default cwd
	}
	mgr := sessions.NewManager(cfg)
	t.Cleanup(mgr.Shutdown)
	auditBuf := &testkit.Buffer{}
	opts.Audit = audit.New(auditBuf, "audit.log", audit.Options{})
	srv := mcptools.NewServer(mgr, opts)
	file := filepath.Join(t.TempDir(), "tokens")
	testkit.WriteTokens(t, file, "alice", "bob")
	tokens, err := httpserve.LoadTokens(file, "")
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(nil)
	url := "http://" + ts.Listener.Addr().String()
	ho.Tokens, ho.BaseURL, ho.Manager = tokens, url, mgr
	h := httpserve.NewHTTPHandler(srv, ho)
	ts.Config = h.Server()
	ts.Start()
	t.Cleanup(ts.Close)
	return &httpServer{url: ts.URL, mgr: mgr, srv: srv, h: h, audit: auditBuf, tokens: file}
}

// connect connects a go-sdk client with token (protocol "" negotiates the
// newest).
func (h *httpServer) connect(t *testing.T, token, protocol string) *mcp.ClientSession {
	t.Helper()
	return mcptest.ConnectHTTP(t, h.url+"/mcp", token, protocol)
}

// callJSON calls a tool (the dashboard's tests share it: mcptest.CallJSON).
var callJSON = mcptest.CallJSON

// TestHTTPUsers: each user sees and steers only their own sessions, on
// both protocol eras; the audit log has a line per call and no secret.
func TestHTTPUsers(t *testing.T) {
	h := newHTTPServer(t, sessions.Config{}, mcptools.Options{})
	for _, protocol := range []string{"", "2025-11-25"} {
		t.Run("protocol_"+protocol, func(t *testing.T) {
			alice := h.connect(t, "alice-secret", protocol)
			bob := h.connect(t, "bob-secret", protocol)
			want := protocol
			if want == "" {
				want = "2026-07-28" // the stateless handler serves it
			}
			if got := alice.InitializeResult().ProtocolVersion; got != want {
				t.Errorf("negotiated %s, want %s", got, want)
			}
			_, out := callJSON(t, alice, "claude_session_create", map[string]any{"cwd": t.TempDir()})
			sid, _ := out["sessionId"].(string)
			if sid == "" {
				t.Fatalf("create: %v", out)
			}
			if _, out := callJSON(t, alice, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "hi"}); out["finalText"] == nil {
				t.Errorf("alice's query: %v", out)
			}
			_, list := callJSON(t, bob, "claude_session_list", map[string]any{})
			if strings.Contains(fmt.Sprint(list), sid) {
				t.Errorf("bob lists alice's session: %v", list)
			}
			for tool, args := range map[string]map[string]any{
				"claude_chat_query":      {"sessionId": sid, "prompt": "x"},
				"claude_session_history": {"sessionId": sid},
				"claude_chat_interrupt":  {"sessionId": sid},
				"claude_chat_steer":      {"sessionId": sid, "message": "x"},
				"claude_chat_model":      {"sessionId": sid, "model": "opus"},
				"claude_session_close":   {"sessionId": sid},
				"claude_session_list":    {"sessionId": sid},
			} {
				res, _ := callJSON(t, bob, tool, args)
				if !res.IsError || !strings.Contains(resText(res), "session not found") {
					t.Errorf("bob's %s on alice's session: %s", tool, resText(res))
				}
			}
			if _, err := h.mgr.Get(sid); err != nil {
				t.Errorf("bob's calls touched alice's session: %v", err)
			}
			if _, out := callJSON(t, alice, "claude_session_close", map[string]any{"sessionId": sid}); out["closed"] != true {
				t.Errorf("alice's close: %v", out)
			}
		})
	}
	log := h.audit.String()
	lines := strings.Split(strings.TrimSpace(log), "\n")
	if len(lines) < 20 {
		t.Errorf("%d audit lines for more than 20 calls:\n%s", len(lines), log)
	}
	for _, secret := range []string{"alice-secret", "bob-secret", testkit.TokenHash("alice-secret"), `"prompt":`} {
		if strings.Contains(log, secret) {
			t.Errorf("the audit log holds %q", secret)
		}
	}
	var e audit.Entry
	for _, l := range lines {
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("audit line %q: %v", l, err)
		}
		if e.User != "alice" && e.User != "bob" {
			t.Errorf("audit line without its user: %s", l)
		}
	}
	if !strings.Contains(log, `"tool":"claude_chat_query","session":`) || !strings.Contains(log, `"promptBytes":2,"promptSha256":"`+testkit.TokenHash("hi")+`"`) {
		t.Errorf("the audit log lacks the query with its prompt's size and hash:\n%s", log)
	}
}

// TestHTTPAuth: no token or a wrong one gets 401 with the header the MCP
// auth spec asks for; /healthz needs none; the metadata names /mcp.
func TestHTTPAuth(t *testing.T) {
	h := newHTTPServer(t, sessions.Config{}, mcptools.Options{})
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`
	for name, header := range map[string]string{"none": "", "wrong": "Bearer nope", "basic": "Basic YTpi"} {
		req, _ := http.NewRequest(http.MethodPost, h.url+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if header != "" {
			req.Header.Set("Authorization", header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `Bearer resource_metadata="`+h.url+`/.well-known/oauth-protected-resource"`) {
			t.Errorf("%s token: %d, WWW-Authenticate %q", name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}
	resp, err := http.Get(h.url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(b, []byte(`"ok"`)) {
		t.Errorf("/healthz: %d %s", resp.StatusCode, b)
	}
	resp, err = http.Get(h.url + "/.well-known/oauth-protected-resource")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(b, []byte(`"resource":"`+h.url+`/mcp"`)) {
		t.Errorf("protected resource metadata: %s", b)
	}
}

// TestHTTPQuotasAndPolicy: per-user quotas refuse with the flag's name;
// options that run programs are refused over HTTP unless allowed.
func TestHTTPQuotasAndPolicy(t *testing.T) {
	h := newHTTPServer(t, sessions.Config{UserMaxSessions: 1, RemoteAllow: []string{"paths"}}, mcptools.Options{})
	alice := h.connect(t, "alice-secret", "")
	bob := h.connect(t, "bob-secret", "")
	callJSON(t, alice, "claude_session_create", map[string]any{"cwd": t.TempDir()})
	res, _ := callJSON(t, alice, "claude_session_create", map[string]any{"cwd": t.TempDir()})
	if !res.IsError || !strings.Contains(resText(res), "--user-max-sessions") {
		t.Errorf("alice's second session: %s", resText(res))
	}
	res, bobs := callJSON(t, bob, "claude_session_create", map[string]any{"cwd": t.TempDir()})
	if res.IsError {
		t.Errorf("bob's first session: %s", resText(res))
	}
	callJSON(t, bob, "claude_session_close", map[string]any{"sessionId": bobs["sessionId"]})
	for option, args := range map[string]map[string]any{
		"--http-allow runs-programs (or settings)":      {"settings": map[string]any{"hooks": map[string]any{}}},
		"--http-allow runs-programs (or mcp-servers)":   {"mcpServers": map[string]any{"x": map[string]any{"command": "/bin/true"}}},
		"--http-allow widens-permissions (or bypass)":   {"permissionMode": "bypassPermissions"},
		"--http-allow widens-permissions (or profiles)": {"profile": "p"},
	} {
		args["prompt"] = "hi"
		res, _ := callJSON(t, bob, "claude_direct_query", args)
		if !res.IsError || !strings.Contains(resText(res), option) {
			t.Errorf("%v over HTTP: %s", args, resText(res))
		}
	}
	// paths is allowed here: addDirs passes the HTTP check.
	if res, _ := callJSON(t, bob, "claude_direct_query", map[string]any{"prompt": "hi", "addDirs": []string{t.TempDir()}}); res.IsError {
		t.Errorf("addDirs with --http-allow paths: %s", resText(res))
	}
}

// TestHTTPTasksBetweenUsers: a task is only its user's.
func TestHTTPTasksBetweenUsers(t *testing.T) {
	h := newHTTPServer(t, sessions.Config{}, mcptools.Options{TaskAfter: 100 * time.Millisecond})
	post := func(token, name string, body map[string]any) map[string]any {
		t.Helper()
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(http.MethodPost, h.url+"/mcp", bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", body["method"].(string))
		req.Header.Set("Mcp-Name", name)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		// The answer may come as SSE: take the last data line.
		text := string(raw)
		if i := strings.LastIndex(text, "data: "); i >= 0 {
			text = strings.TrimSpace(strings.SplitN(text[i+6:], "\n", 2)[0])
		}
		var out map[string]any
		if err := json.Unmarshal([]byte(text), &out); err != nil {
			t.Fatalf("response %s: %v", raw, err)
		}
		return out
	}
	meta := map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientInfo": map[string]any{"name": "raw", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{mcptools.TasksExtension: map[string]any{}}}}
	res := post("alice-secret", "claude_direct_query", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{"name": "claude_direct_query",
		"arguments": map[string]any{"prompt": "SLOW3", "cwd": t.TempDir()}, "_meta": meta}})
	result, _ := res["result"].(map[string]any)
	id, _ := result["taskId"].(string)
	if result["resultType"] != "task" || id == "" {
		t.Fatalf("alice's slow query over HTTP: %v", res)
	}
	get := map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": map[string]any{"taskId": id, "_meta": meta}}
	if res := post("bob-secret", id, get); res["error"] == nil {
		t.Errorf("bob reads alice's task: %v", res)
	}
	if res := post("alice-secret", id, get); res["result"] == nil {
		t.Errorf("alice reads her task: %v", res)
	}
}

// rawDo sends one request (token "" for none) and returns the status,
// the headers and the body.
func rawDo(t *testing.T, method, url, token string, hdr map[string]string, body io.Reader) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// initializeBody is a legacy initialize: it opens a stateful MCP session.
const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// TestHTTPOrigin: a request to /mcp whose Origin is present and not the
// server's own (BaseURL's, or the Host's) gets 403, "null" included, on
// every method; without Origin, or with its own, it is served. /healthz
// stays open.
func TestHTTPOrigin(t *testing.T) {
	h := newHTTPServer(t, sessions.Config{}, mcptools.Options{})
	host := strings.TrimPrefix(h.url, "http://")
	_, port, _ := net.SplitHostPort(host)
	for _, tc := range []struct {
		name   string
		hdr    map[string]string
		refuse bool
	}{
		{"no origin", nil, false},
		{"own origin", map[string]string{"Origin": h.url}, false},
		{"own origin, another case", map[string]string{"Origin": strings.ToUpper(h.url)}, false},
		{"the host's origin", map[string]string{"Origin": "http://localhost:" + port, "Host": "localhost:" + port}, false},
		{"foreign", map[string]string{"Origin": "http://evil.example"}, true},
		{"foreign port", map[string]string{"Origin": "http://127.0.0.1:1"}, true},
		{"foreign scheme", map[string]string{"Origin": "https://" + host}, true},
		{"with a path", map[string]string{"Origin": h.url + "/x"}, true},
		{"null", map[string]string{"Origin": "null"}, true},
		{"empty", map[string]string{"Origin": ""}, true},
		{"localhost without that Host", map[string]string{"Origin": "http://localhost:" + port}, true},
	} {
		for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
			var body io.Reader
			if method == http.MethodPost {
				body = strings.NewReader(initializeBody)
			}
			status, _, text := rawDo(t, method, h.url+"/mcp", "alice-secret", tc.hdr, body)
			if refused := status == http.StatusForbidden; refused != tc.refuse {
				t.Errorf("%s, %s: %d %s", tc.name, method, status, text)
			}
		}
	}
	if status, _, _ := rawDo(t, http.MethodGet, h.url+"/healthz", "", map[string]string{"Origin": "null"}, nil); status != http.StatusOK {
		t.Errorf("/healthz with a foreign origin: %d", status)
	}
}

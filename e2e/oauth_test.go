package e2e_test

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/e2eenv"
)

// The OAuth resource-server mode (--oauth-issuer) against a real OpenID
// provider: panva's oidc-provider (certified; pinned in
// tools/npm/package.json, installed into .tools by scripts/test), run by
// testdata/oauth/provider.mjs. Its client-credentials clients are the test
// users; their access tokens are JWTs for the resource the client names.

// oidcProvider starts the provider and returns its issuer URL; it stops
// when the test ends (its stdin closes). Without Node or oidc-provider it
// skips the test, except under CI=true.
func oidcProvider(t *testing.T) string {
	t.Helper()
	root, err := e2eenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	modules := filepath.Join(root, ".tools", "node_modules")
	missing := func(what string) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is missing and CI=true (scripts/test installs it)", what)
		}
		t.Skipf("%s is missing; run scripts/test", what)
	}
	if _, err := os.Stat(filepath.Join(modules, "oidc-provider", "package.json")); err != nil {
		missing("oidc-provider in .tools/node_modules")
	}
	node := filepath.Join(modules, ".bin", "node") // Node 22, pinned beside it
	if _, err := os.Stat(node); err != nil {
		if node, err = exec.LookPath("node"); err != nil {
			missing("node")
		}
	}
	// The script imports oidc-provider from a node_modules beside it.
	dir := t.TempDir()
	script, err := os.ReadFile(filepath.Join(root, "testdata", "oauth", "provider.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "provider.mjs"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, "provider.mjs")
	cmd.Dir = dir
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr testkit.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("the OpenID provider: %v\n%s", err, stderr.String())
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	var ready struct{ Issuer string }
	if err != nil || json.Unmarshal([]byte(line), &ready) != nil || ready.Issuer == "" {
		t.Fatalf("the OpenID provider did not start: %q %v\n%s", line, err, stderr.String())
	}
	return ready.Issuer
}

// oidcToken gets an access token of client for resource (RFC 8707) with
// scope ("" none) by the client-credentials grant.
func oidcToken(t *testing.T, issuer, client, resource, scope string) string {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "resource": {resource}}
	if scope != "" {
		form.Set("scope", scope)
	}
	req, err := http.NewRequest(http.MethodPost, issuer+"/token", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(client, client+"-secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &tok) != nil || tok.AccessToken == "" {
		t.Fatalf("token of %s: %s %s", client, resp.Status, body)
	}
	return tok.AccessToken
}

// freeLoopbackPort returns a port that was free a moment ago: the server's
// public URL (a token's audience) must be known before it starts.
func freeLoopbackPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// forged returns token with its header replaced by head and its signature
// by sig (base64url-encoded by the caller).
func forged(token string, head map[string]any, sig string) string {
	parts := strings.Split(token, ".")
	h, _ := json.Marshal(head)
	return base64.RawURLEncoding.EncodeToString(h) + "." + parts[1] + "." + sig
}

// TestE2EOAuth serves --http with --oauth-issuer of a real OpenID provider
// and a tokens file beside it, the fake CLI behind. A valid token is
// accepted and its sub is the user (the audit log names it); tokens that
// are expired, for another audience, of another issuer, badly signed,
// unsigned (alg none) or HMAC-signed get 401 with the WWW-Authenticate of
// the MCP authorization spec, the body saying why. The protected resource
// metadata names the issuer and the scopes. A scope grants its
// --http-allow class, and a token without it (dave's) is refused that class;
// the tokens file's user keeps all of --http-allow. Two OAuth users do
// not see each other's sessions.
func TestE2EOAuth(t *testing.T) {
	t.Parallel()
	issuer := oidcProvider(t)
	port := freeLoopbackPort(t)
	public := "http://127.0.0.1:" + port
	e := startHTTPE2E(t, httpE2EOptions{fakeCLI: true, users: []string{"carol"}, audit: true, args: []string{
		"--http", "127.0.0.1:" + port, "--public-url", public, "--oauth-issuer", issuer,
		"--http-allow", "reads-files", "--oauth-scope-classes", "agents:files=reads-files", "--warm-spares", "0"}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	resource := public + "/mcp"
	metaURL := public + "/.well-known/oauth-protected-resource"

	// The protected resource metadata, at both of its paths.
	for _, u := range []string{metaURL, metaURL + "/mcp"} {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		var meta struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
			ScopesSupported      []string `json:"scopes_supported"`
		}
		err = json.NewDecoder(resp.Body).Decode(&meta)
		resp.Body.Close()
		if err != nil || meta.Resource != resource || !slices.Equal(meta.AuthorizationServers, []string{issuer}) ||
			!slices.Equal(meta.ScopesSupported, []string{"agents:files"}) {
			t.Errorf("%s = %+v (%v), want resource %s, authorization_servers [%s], scopes_supported [agents:files]", u, meta, err, resource, issuer)
		}
	}

	alice := oidcToken(t, issuer, "alice", resource, "agents:files")
	hs := hmac.New(sha256.New, []byte("a secret the server never had"))
	parts := strings.Split(alice, ".")
	hs.Write([]byte(parts[0] + "." + parts[1]))
	sig := []byte(parts[2])
	// Another base64url letter in the middle (a XOR could make '-' a '.',
	// and the token no JWT at all).
	if sig[len(sig)/2] == 'A' {
		sig[len(sig)/2] = 'B'
	} else {
		sig[len(sig)/2] = 'A'
	}
	if sig[len(sig)/2] == parts[2][len(sig)/2] {
		t.Fatal("the signature did not change")
	}
	refused := []struct{ name, token, why string }{
		{"no token", "", "no bearer token"},
		{"expired", oidcToken(t, issuer, "expired", resource, ""), "expired at"},
		{"wrong audience", oidcToken(t, issuer, "alice", "https://other.example/mcp", ""), "audience"},
		{"wrong issuer", oidcToken(t, issuer, "wrong-issuer", resource, ""), "issued by \"https://other-issuer.example\""},
		{"bad signature", parts[0] + "." + parts[1] + "." + string(sig), "verifies its signature"},
		{"alg none", forged(alice, map[string]any{"alg": "none", "typ": "at+jwt"}, ""), "asymmetric algorithm"},
		{"HS256", forged(alice, map[string]any{"alg": "HS256", "typ": "at+jwt", "kid": "test-rs256"},
			base64.RawURLEncoding.EncodeToString(hs.Sum(nil))), "asymmetric algorithm"},
		{"a token of neither", "not-a-jwt-nor-listed", "unknown token"},
	}
	for _, c := range refused {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, resource,
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := `Bearer resource_metadata="` + metaURL + `"`
		if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != want || !strings.Contains(string(body), c.why) {
			t.Errorf("%s: %s, WWW-Authenticate %q, body %q; want 401, %q, a body with %q", c.name, resp.Status,
				resp.Header.Get("WWW-Authenticate"), body, want, c.why)
		}
	}

	// A cwd other than the server's reads files (--http-allow reads-files),
	// which the scope agents:files grants.
	other := filepath.Join(e.home, "other")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	ds, err := e.connectToken(ctx, oidcToken(t, issuer, "dave", resource, ""), "")
	if err != nil {
		t.Fatalf("connecting with dave's token: %v", err)
	}
	defer ds.Close()
	res, _ := httpCall(t, ctx, ds, "claude_session_create", map[string]any{"cwd": other})
	if !res.IsError || !strings.Contains(text(res), "--oauth-scope-classes") {
		t.Errorf("dave's create with a cwd, his token without the scope: %s; want refused naming --oauth-scope-classes", text(res))
	}

	// Alice's token names her.
	as, err := e.connectToken(ctx, alice, "")
	if err != nil {
		t.Fatalf("connecting with alice's token: %v", err)
	}
	defer as.Close()
	res, out := httpCall(t, ctx, as, "claude_session_create", map[string]any{"cwd": other})
	aliceSID, _ := out["sessionId"].(string)
	if res.IsError || aliceSID == "" {
		t.Fatalf("alice's create with a cwd: %s", text(res))
	}
	res, out = httpCall(t, ctx, as, "claude_chat_query", map[string]any{"sessionId": aliceSID, "prompt": "hello"})
	if res.IsError || out["finalText"] == "" {
		t.Errorf("alice's query: %s", text(res))
	}

	// Bob, on a protocol of stateful MCP sessions, has a session of his own.
	bs, err := e.connectToken(ctx, oidcToken(t, issuer, "bob", resource, "agents:files"), "2025-11-25")
	if err != nil {
		t.Fatalf("connecting with bob's token: %v", err)
	}
	defer bs.Close()
	res, out = httpCall(t, ctx, bs, "claude_session_create", map[string]any{"cwd": other})
	bobSID, _ := out["sessionId"].(string)
	if res.IsError || bobSID == "" {
		t.Fatalf("bob's create: %s", text(res))
	}
	// Neither sees nor steers the other's session.
	_, out = httpCall(t, ctx, bs, "claude_session_list", map[string]any{})
	if b, _ := json.Marshal(out); strings.Contains(string(b), aliceSID) || !strings.Contains(string(b), bobSID) {
		t.Errorf("bob's list = %s; want his session and not alice's", b)
	}
	_, out = httpCall(t, ctx, as, "claude_session_list", map[string]any{})
	if b, _ := json.Marshal(out); strings.Contains(string(b), bobSID) || !strings.Contains(string(b), aliceSID) {
		t.Errorf("alice's list = %s; want her session and not bob's", b)
	}
	for tool, args := range map[string]map[string]any{
		"claude_chat_query":    {"sessionId": aliceSID, "prompt": "hello"},
		"claude_session_close": {"sessionId": aliceSID},
	} {
		res, _ = httpCall(t, ctx, bs, tool, args)
		if !res.IsError || !strings.Contains(text(res), "not found") {
			t.Errorf("bob's %s on alice's session: %s; want not found", tool, text(res))
		}
	}

	// The tokens file keeps working beside the issuer, with all of
	// --http-allow.
	cs := e.connect(t, "carol", "")
	res, out = httpCall(t, ctx, cs, "claude_session_create", map[string]any{"cwd": other})
	if sid, _ := out["sessionId"].(string); res.IsError || sid == "" {
		t.Errorf("carol's create with a cwd: %s", text(res))
	}

	// The audit log names each call's user: the token's sub.
	raw, err := os.ReadFile(e.audit)
	if err != nil {
		t.Fatal(err)
	}
	users := map[string]int{}
	for line := range strings.Lines(string(raw)) {
		var entry struct{ User, Tool string }
		if json.Unmarshal([]byte(line), &entry) == nil && entry.Tool == "claude_session_create" {
			users[entry.User]++
		}
	}
	if users["alice"] == 0 || users["bob"] == 0 || users["carol"] == 0 || users["dave"] == 0 || len(users) != 4 {
		t.Errorf("the audit log's users of claude_session_create = %v; want alice, bob, carol and dave only", users)
	}
}

// TestConformanceAuthScenarios checks which of the pinned conformance
// suite's authorization scenarios apply to this server, a resource server
// (--oauth-issuer validates tokens that another server issues). In
// 0.2.0-alpha.12 none does: the auth/* scenarios test a client (the suite
// plays the resource and authorization servers), and the "authorization
// server" ones test an issuer. What they would ask of a resource server —
// 401 with the spec's WWW-Authenticate, the protected resource metadata
// naming the issuer, the audience checked — TestE2EOAuth asserts against a
// real provider. A pin that adds an authorization scenario for servers
// fails here, so that it is run against --oauth-issuer instead of passing
// unseen.
func TestConformanceAuthScenarios(t *testing.T) {
	_, node, bin := conformanceSuite(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, bin, "list").CombinedOutput()
	if err != nil {
		t.Fatalf("conformance list: %v\n%s", err, out)
	}
	section := ""
	bySection := map[string][]string{}
	for _, line := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasSuffix(line, "):") && !strings.HasPrefix(line, " "):
			section = strings.SplitN(line, " (", 2)[0]
		case strings.HasPrefix(strings.TrimSpace(line), "- "):
			name := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "- "))[0]
			bySection[section] = append(bySection[section], name)
		}
	}
	for _, want := range []string{"Server scenarios", "Client scenarios", "Authorization server scenarios"} {
		if len(bySection[want]) == 0 {
			t.Fatalf("conformance list has no %q (sections: %v); the output changed:\n%s", want, slices.Sorted(maps.Keys(bySection)), out)
		}
	}
	for _, name := range bySection["Server scenarios"] {
		if strings.Contains(name, "auth") || strings.Contains(name, "oauth") || strings.Contains(name, "token") {
			t.Errorf("server scenario %s is about authorization: run it against --oauth-issuer (TestE2EOAuth's provider)", name)
		}
	}
	clientAuth := 0
	for _, name := range bySection["Client scenarios"] {
		if strings.HasPrefix(name, "auth/") {
			clientAuth++
		}
	}
	if clientAuth == 0 {
		t.Errorf("no auth/* client scenario listed: the suite's layout changed, look again at what applies to a server:\n%s", out)
	}
	t.Logf("authorization scenarios: %d for clients, %d for authorization servers (%v), none for MCP servers", clientAuth, len(bySection["Authorization server scenarios"]), bySection["Authorization server scenarios"])
}

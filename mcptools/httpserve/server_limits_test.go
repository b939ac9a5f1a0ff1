package httpserve_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/httpserve"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// Tests of the HTTP limits: timeouts, request bodies, MCP sessions.

// TestHTTPTimeouts: a request body that trickles in is cut after the read
// timeout, an idle keep-alive connection is closed after the idle timeout,
// but a tool call that answers after both (and after the write timeout,
// quiet meanwhile) is served whole, on both protocol eras.
func TestHTTPTimeouts(t *testing.T) {
	h := newHTTPServerWith(t, sessions.Config{}, mcptools.Options{}, httpserve.HTTPOptions{ReadTimeout: 300 * time.Millisecond, WriteTimeout: 200 * time.Millisecond, IdleTimeout: 300 * time.Millisecond})
	host := strings.TrimPrefix(h.url, "http://")
	dial := func() net.Conn {
		t.Helper()
		conn, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}
	// closed waits for the server to close conn (EOF), up to 15 s.
	closed := func(conn net.Conn, br *bufio.Reader) error {
		_ = conn.SetReadDeadline(time.Now().Add(15 * time.Second))
		_, err := io.Copy(io.Discard, br)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return errors.New("the connection is still open after 15 s")
		}
		return nil
	}
	t.Run("slow_body", func(t *testing.T) {
		conn := dial()
		fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer alice-secret\r\nContent-Type: application/json\r\n"+
			"Accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\":", host)
		if err := closed(conn, bufio.NewReader(conn)); err != nil {
			t.Error("a body that trickles in:", err)
		}
	})
	t.Run("idle_keepalive", func(t *testing.T) {
		conn := dial()
		fmt.Fprintf(conn, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", host)
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Close {
			t.Fatalf("/healthz: %d, close %v", resp.StatusCode, resp.Close)
		}
		if err := closed(conn, br); err != nil {
			t.Error("an idle keep-alive connection:", err)
		}
	})
	for _, protocol := range []string{"2025-11-25", ""} {
		t.Run("long_call_"+protocol, func(t *testing.T) {
			cs := h.connect(t, "alice-secret", protocol)
			_, out := callJSON(t, cs, "claude_session_create", map[string]any{"cwd": t.TempDir()})
			// SLOW4 answers after 2 s; no progress token: the call is quiet
			// until then.
			res, out := callJSON(t, cs, "claude_chat_query", map[string]any{"sessionId": out["sessionId"], "prompt": "SLOW4"})
			if res.IsError || !strings.Contains(fmt.Sprint(out["finalText"]), "chunk3") {
				t.Errorf("a call longer than the timeouts: %s", resText(res))
			}
		})
	}
}

// TestHTTPBodyLimits: a body over MaxBodyBytes gets 413 (announced or
// chunked); bodies beyond MaxBodyBytesInFlight held at once get 503 with
// Retry-After, until the one held is done.
func TestHTTPBodyLimits(t *testing.T) {
	const limit = 64 << 10
	h := newHTTPServerWith(t, sessions.Config{}, mcptools.Options{}, httpserve.HTTPOptions{MaxBodyBytes: limit, MaxBodyBytesInFlight: 100 << 10})
	pad := func(n int) string {
		return `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", n-60) + `"}}`
	}
	hidden := func(s string) io.Reader { return io.MultiReader(strings.NewReader(s)) } // no length: chunked
	if status, _, text := rawDo(t, http.MethodPost, h.url+"/mcp", "alice-secret", nil, strings.NewReader(pad(limit+100))); status != http.StatusRequestEntityTooLarge || !strings.Contains(text, "--max-frame-bytes") {
		t.Errorf("a body over the limit: %d %s", status, text)
	}
	if status, _, text := rawDo(t, http.MethodPost, h.url+"/mcp", "alice-secret", nil, hidden(pad(limit+100))); status != http.StatusRequestEntityTooLarge {
		t.Errorf("a chunked body over the limit: %d %s", status, text)
	}
	if status, _, text := rawDo(t, http.MethodPost, h.url+"/mcp", "alice-secret", nil, strings.NewReader(pad(limit-100))); status == http.StatusRequestEntityTooLarge {
		t.Errorf("a body under the limit: %d %s", status, text)
	}

	// A 60 KiB body held: the server has asked for it (100 Continue), so
	// it counts its bytes, and the rest has not come.
	body := pad(60 << 10)
	conn, err := net.Dial("tcp", strings.TrimPrefix(h.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer alice-secret\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n", strings.TrimPrefix(h.url, "http://"), len(body))
	br := bufio.NewReader(conn)
	if line, err := br.ReadString('\n'); err != nil || !strings.Contains(line, "100 Continue") {
		t.Fatalf("waiting for 100 Continue: %q %v", line, err)
	}
	if line, err := br.ReadString('\n'); err != nil || line != "\r\n" {
		t.Fatalf("the end of 100 Continue: %q %v", line, err)
	}
	for name, r := range map[string]func() io.Reader{
		"announced": func() io.Reader { return strings.NewReader(body) },
		"chunked":   func() io.Reader { return hidden(body) },
	} {
		status, hdr, text := rawDo(t, http.MethodPost, h.url+"/mcp", "bob-secret", nil, r())
		if status != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "" {
			t.Errorf("a second 60 KiB body (%s) while one is held: %d, Retry-After %q, %s", name, status, hdr.Get("Retry-After"), text)
		}
	}
	// The held body comes; its answer ends after its handler (and the
	// bytes it held) are done.
	if _, err := io.WriteString(conn, body); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if status, _, text := rawDo(t, http.MethodPost, h.url+"/mcp", "bob-secret", nil, strings.NewReader(body)); status == http.StatusServiceUnavailable {
		t.Errorf("a 60 KiB body once the other is done: %d %s", status, text)
	}
}

// TestHTTPSessionCap: stateful MCP sessions are capped in all and per
// user (503 naming the flag); closing one makes room; stateless requests
// are not counted.
func TestHTTPSessionCap(t *testing.T) {
	h := newHTTPServerWith(t, sessions.Config{}, mcptools.Options{}, httpserve.HTTPOptions{MaxSessions: 3, UserMaxSessions: 2})
	open := func(token string) (int, string, string) {
		t.Helper()
		status, hdr, text := rawDo(t, http.MethodPost, h.url+"/mcp", token, nil, strings.NewReader(initializeBody))
		return status, hdr.Get("Mcp-Session-Id"), text
	}
	var alice []string
	for range 2 {
		status, id, text := open("alice-secret")
		if status != http.StatusOK || id == "" {
			t.Fatalf("alice's session: %d %s", status, text)
		}
		alice = append(alice, id)
	}
	if status, _, text := open("alice-secret"); status != http.StatusServiceUnavailable || !strings.Contains(text, "user alice holds 2 MCP sessions") || !strings.Contains(text, "--http-max-sessions") {
		t.Errorf("alice's third session: %d %s", status, text)
	}
	if status, id, text := open("bob-secret"); status != http.StatusOK || id == "" {
		t.Fatalf("bob's session: %d %s", status, text)
	}
	if status, _, text := open("bob-secret"); status != http.StatusServiceUnavailable || !strings.Contains(text, "holds 3 MCP sessions") {
		t.Errorf("a fourth session: %d %s", status, text)
	}
	bobNew := h.connect(t, "bob-secret", "") // 2026-07-28: no MCP session
	if res, _ := callJSON(t, bobNew, "claude_session_list", map[string]any{}); res.IsError {
		t.Errorf("a stateless call at the cap: %s", resText(res))
	}
	if status, _, text := rawDo(t, http.MethodDelete, h.url+"/mcp", "alice-secret", map[string]string{"Mcp-Session-Id": alice[0]}, nil); status != http.StatusNoContent {
		t.Fatalf("closing alice's session: %d %s", status, text)
	}
	if status, id, text := open("bob-secret"); status != http.StatusOK || id == "" {
		t.Errorf("bob's session once alice closed one: %d %s", status, text)
	}
}

// TestHTTPSessionIdle: a stateful MCP session without requests for
// SessionIdle is closed; its id then serves no more.
func TestHTTPSessionIdle(t *testing.T) {
	h := newHTTPServerWith(t, sessions.Config{}, mcptools.Options{}, httpserve.HTTPOptions{SessionIdle: 300 * time.Millisecond})
	status, hdr, text := rawDo(t, http.MethodPost, h.url+"/mcp", "alice-secret", nil, strings.NewReader(initializeBody))
	id := hdr.Get("Mcp-Session-Id")
	if status != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d %s", status, text)
	}
	var ss *mcp.ServerSession
	for s := range h.srv.Sessions() {
		if s.ID() == id {
			ss = s
		}
	}
	if ss == nil {
		t.Fatal("the session is not the server's")
	}
	closed := make(chan struct{})
	go func() {
		_ = ss.Wait()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(15 * time.Second):
		ss.Close()
		t.Fatal("an idle MCP session still open after 15 s")
	}
	// Its id serves no more (404 once the handler has forgotten it, which
	// it does just after the session is closed).
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`
	if status, _, text := rawDo(t, http.MethodPost, h.url+"/mcp", "alice-secret", map[string]string{"Mcp-Session-Id": id}, strings.NewReader(list)); strings.Contains(text, "claude_chat_query") {
		t.Errorf("the expired session answers: %d %s", status, text)
	}
}

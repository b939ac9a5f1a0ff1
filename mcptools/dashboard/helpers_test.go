package dashboard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakecli"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/mcptest"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/httpserve"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// Helpers of the dashboard's tests with a server (as mcptools' tests have
// them).

func callJSON(t *testing.T, cs *mcp.ClientSession, name string, args any) (*mcp.CallToolResult, map[string]any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var out map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(b, &out)
	return res, out
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// httpServer is a server over HTTP with a tokens file.
type httpServer struct {
	url    string
	mgr    *sessions.Manager
	srv    *mcp.Server
	h      *httpserve.HTTPHandler
	audit  *syncBuf
	tokens string // the tokens file
}

// connect connects a go-sdk client with token (protocol "" negotiates the
// newest).
func (h *httpServer) connect(t *testing.T, token, protocol string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "http-test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: h.url + "/mcp",
		HTTPClient: mcptest.Bearer(token)}, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		t.Fatalf("connecting with %q: %v", token, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func createSession(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	_, out := callJSON(t, cs, "claude_session_create", map[string]any{"cwd": t.TempDir()})
	sid, _ := out["sessionId"].(string)
	if sid == "" {
		t.Fatalf("create: %v", out)
	}
	return sid
}

func resText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// newPlainServer is a server on the fake CLI without a dashboard, and an
// in-memory MCP client of protocol.
func newPlainServer(tb testing.TB, protocol string) *mcp.ClientSession {
	tb.Helper()
	path, env := fakecli.Command(tb)
	mgr := sessions.NewManager(sessions.Config{CLIPath: path, Env: env})
	tb.Cleanup(mgr.Shutdown)
	srv := mcptools.NewServer(mgr, mcptools.Options{})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ss.Close() })
	cs, err := mcptest.NewRecorder("plain", nil).Connect(context.Background(), ct, protocol)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cs.Close() })
	return cs
}

package mcptest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/resulttext"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ConnectInMemory serves srv to a client of r over in-memory transports,
// with protocol version protocol ("" negotiates the newest); both ends are
// closed when tb ends.
func ConnectInMemory(tb testing.TB, srv *mcp.Server, r *Recorder, protocol string) *mcp.ClientSession {
	tb.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		tb.Fatalf("serving in memory: %v", err)
	}
	tb.Cleanup(func() { ss.Close() })
	cs, err := r.Connect(context.Background(), ct, protocol)
	if err != nil {
		tb.Fatalf("connecting in memory: %v", err)
	}
	tb.Cleanup(func() { cs.Close() })
	return cs
}

// ConnectHTTP connects a go-sdk client to the streamable HTTP endpoint with
// the bearer token, with protocol version protocol ("" negotiates the
// newest); the session is closed when tb ends.
func ConnectHTTP(tb testing.TB, endpoint, token, protocol string) *mcp.ClientSession {
	tb.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "http-test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: endpoint,
		HTTPClient: Bearer(token)}, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		tb.Fatalf("connecting with %q: %v", token, err)
	}
	tb.Cleanup(func() { cs.Close() })
	return cs
}

// CallJSON calls the tool name with args (within 30 s; a protocol error
// fails tb) and returns the result and its structured content as JSON
// values.
func CallJSON(tb testing.TB, cs *mcp.ClientSession, name string, args any) (*mcp.CallToolResult, map[string]any) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	var out map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(b, &out)
	return res, out
}

// Text is a result's text content, joined: as the server reads one
// (resulttext.OfTool).
func Text(res *mcp.CallToolResult) string { return resulttext.OfTool(res) }

// CreateSession opens a session of the server (claude_session_create) in a
// new temporary directory and returns its id.
func CreateSession(tb testing.TB, cs *mcp.ClientSession) string {
	tb.Helper()
	_, out := CallJSON(tb, cs, "claude_session_create", map[string]any{"cwd": tb.TempDir()})
	sid, _ := out["sessionId"].(string)
	if sid == "" {
		tb.Fatalf("create: %v", out)
	}
	return sid
}

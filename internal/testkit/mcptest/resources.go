package mcptest

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit"
)

// ResourceNotFound is mcp.ResourceNotFoundError's message (code -32602,
// SEP-2164).
const ResourceNotFound = "Resource not found"

// SessionURI is the URI of a session's resource what (transcript, answer).
func SessionURI(sid, what string) string { return "claude-agent-mcp://sessions/" + sid + "/" + what }

// Updates records the notifications/resources/updated a client gets.
type Updates struct {
	mu   sync.Mutex
	uris []string
}

func (u *Updates) add(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.uris = append(u.uris, req.Params.URI)
}

// Count is how many updates of uri came.
func (u *Updates) Count(uri string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	n := 0
	for _, got := range u.uris {
		if got == uri {
			n++
		}
	}
	return n
}

// Wait waits (10 s at most) until n updates of uri came.
func (u *Updates) Wait(t *testing.T, uri string, n int) {
	t.Helper()
	testkit.Until(t, 10*time.Second, "update "+uri, func() bool { return u.Count(uri) >= n })
}

// ResourceClient is a go-sdk client that records resource updates.
func ResourceClient() (*mcp.Client, *Updates) {
	u := &Updates{}
	return mcp.NewClient(&mcp.Implementation{Name: "res", Version: "1"}, &mcp.ClientOptions{ResourceUpdatedHandler: u.add}), u
}

// ReadText reads uri, which must hold one markdown content; a protocol
// error is returned.
func ReadText(cs *mcp.ClientSession, uri string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		return "", err
	}
	if len(res.Contents) != 1 || res.Contents[0].MIMEType != "text/markdown" {
		return "", errors.New("not one markdown content")
	}
	return res.Contents[0].Text, nil
}

// WantRPCError checks that err is a JSON-RPC error with code whose message
// holds msg.
func WantRPCError(t *testing.T, what string, err error, code int64, msg string) {
	t.Helper()
	var re *jsonrpc.Error
	if !errors.As(err, &re) || re.Code != code || !strings.Contains(re.Message, msg) {
		t.Errorf("%s: %v, want error %d with %q", what, err, code, msg)
	}
}

// Listen posts a subscriptions/listen of protocol 2026-07-28 for uri to the
// MCP endpoint of the server at url, with the bearer token, and returns
// the HTTP status and body: a refusal comes at once, an admitted
// subscription keeps its stream open (cut after 10 s). The go-sdk client's
// Subscribe drops the listen stream's error: this is the request by hand.
func Listen(t *testing.T, ctx context.Context, url, token, uri string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	body := `{"jsonrpc":"2.0","id":2,"method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":[` + strconv.Quote(uri) + `]},` + meta + `}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Authorization": "Bearer " + token, "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "subscriptions/listen"} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, string(b) + " (the stream stayed open: " + err.Error() + ")"
	}
	return resp.StatusCode, string(b)
}

package mcptest

import (
	"context"
	"errors"
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

package e2e_test

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/mcptest"
)

// resourceUpdates records the notifications/resources/updated a client
// gets, and wakes whoever waits for one.
type resourceUpdates struct {
	mu      sync.Mutex
	uris    []string
	changed chan struct{}
}

func (u *resourceUpdates) add(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.uris = append(u.uris, req.Params.URI)
	close(u.changed)
	u.changed = make(chan struct{})
}

// wait waits until uri was updated n times.
func (u *resourceUpdates) wait(t *testing.T, ctx context.Context, uri string, n int) {
	t.Helper()
	for {
		u.mu.Lock()
		got := 0
		for _, x := range u.uris {
			if x == uri {
				got++
			}
		}
		ch := u.changed
		u.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("waiting for update %d of %s: %v", n, uri, ctx.Err())
		}
	}
}

// subscribedRE is the go-sdk server's debug line for a subscription it
// recorded.
var subscribedRE = regexp.MustCompile(`resource subscribed`)

// TestE2EResources: over --http with two users, each on both protocol eras
// (2026-07-28: a subscription is a subscriptions/listen stream), alice
// lists her session's transcript and answer, reads them, subscribes to
// the transcript and gets its update when her query through the real CLI
// ends, and reads the new turn in it; bob's list lacks them, and reading
// or subscribing to them is "Resource not found", as for a session that
// does not exist.
func TestE2EResources(t *testing.T) {
	t.Parallel()
	e := startHTTPE2E(t, httpE2EOptions{users: []string{"alice", "bob"}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	subscriptions := 0
	for _, protocol := range []string{"2025-11-25", ""} {
		ups := &resourceUpdates{changed: make(chan struct{})}
		client := mcp.NewClient(&mcp.Implementation{Name: "e2e-resources", Version: "1"}, &mcp.ClientOptions{ResourceUpdatedHandler: ups.add})
		alice, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.url + "/mcp", HTTPClient: mcptest.Bearer(e.tokens["alice"]), MaxRetries: -1},
			&mcp.ClientSessionOptions{ProtocolVersion: protocol})
		if err != nil {
			t.Fatal(err)
		}
		defer alice.Close()
		bob := e.connect(t, "bob", protocol)

		res, out := httpCall(t, ctx, alice, "claude_session_create", map[string]any{"cwd": e.cwd, "name": "e2e-res"})
		sid, _ := out["sessionId"].(string)
		if res.IsError || sid == "" {
			t.Fatalf("alice's create: %s", text(res))
		}
		transcript, answer := "claude-agent-mcp://sessions/"+sid+"/transcript", "claude-agent-mcp://sessions/"+sid+"/answer"
		list, err := alice.ListResources(ctx, nil)
		if err != nil || !listsURI(list, transcript) || !listsURI(list, answer) {
			t.Fatalf("protocol %q: alice's list: %v %+v", protocol, err, list)
		}
		if list, err := bob.ListResources(ctx, nil); err != nil || listsURI(list, transcript) || listsURI(list, answer) {
			t.Errorf("protocol %q: bob's list: %v %+v", protocol, err, list)
		}
		if got := readResource(ctx, alice, answer); !strings.Contains(got, "No answer yet") {
			t.Errorf("protocol %q: alice's answer before a query: %s", protocol, got)
		}

		done := make(chan error, 1)
		if protocol == "" {
			// Subscribe holds the listen stream open until Unsubscribe.
			go func() { done <- alice.Subscribe(context.Background(), &mcp.SubscribeParams{URI: transcript}) }()
			subscriptions++
			e.waitLog(t, ctx, subscribedRE, subscriptions)
		} else {
			if err := alice.Subscribe(ctx, &mcp.SubscribeParams{URI: transcript}); err != nil {
				t.Fatalf("alice's subscribe: %v", err)
			}
			subscriptions++
			done <- nil
		}
		prompt := "resources e2e " + protocol
		if res, out := httpCall(t, ctx, alice, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": prompt}); res.IsError || out["finalText"] != "Hello from fake API (n_messages=1)" {
			t.Fatalf("alice's query: %s", text(res))
		}
		ups.wait(t, ctx, transcript, 1)
		if got := readResource(ctx, alice, transcript); !strings.Contains(got, "## Prompt\n\n"+prompt) || !strings.Contains(got, "Hello from fake API (n_messages=1)") {
			t.Errorf("protocol %q: the transcript after the query:\n%s", protocol, got)
		}
		if got := readResource(ctx, alice, answer); !strings.Contains(got, "Hello from fake API (n_messages=1)") {
			t.Errorf("protocol %q: the answer after the query:\n%s", protocol, got)
		}
		if err := alice.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: transcript}); err != nil {
			t.Errorf("unsubscribe: %v", err)
		}
		<-done

		// Bob: alice's resources are not found, like a session's that does
		// not exist.
		for _, uri := range []string{transcript, answer, "claude-agent-mcp://sessions/no-such-session/answer"} {
			_, err := bob.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
			wantNotFound(t, "protocol "+protocol+": bob reads "+uri, err)
		}
		if protocol == "" {
			// The go-sdk client's Subscribe drops a listen stream's error:
			// the request by hand.
			if code, body := mcptest.Listen(t, ctx, e.url, e.tokens["bob"], transcript); code != http.StatusBadRequest || !strings.Contains(body, `"message":"Resource not found"`) {
				t.Errorf("bob's subscriptions/listen to alice's transcript: %d %s", code, body)
			}
		} else {
			wantNotFound(t, "bob subscribes to alice's transcript", bob.Subscribe(ctx, &mcp.SubscribeParams{URI: transcript}))
		}
		httpCall(t, ctx, alice, "claude_session_close", map[string]any{"sessionId": sid})
	}
}

func listsURI(list *mcp.ListResourcesResult, uri string) bool {
	for _, r := range list.Resources {
		if r.URI == uri {
			return true
		}
	}
	return false
}

// readResource reads uri's text; an error is the text.
func readResource(ctx context.Context, cs *mcp.ClientSession, uri string) string {
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		return "error: " + err.Error()
	}
	var b strings.Builder
	for _, c := range res.Contents {
		b.WriteString(c.Text)
	}
	return b.String()
}

// wantNotFound checks that err is the SDK's resource-not-found error
// (-32602 "Resource not found", SEP-2164).
func wantNotFound(t *testing.T, what string, err error) {
	t.Helper()
	var re *jsonrpc.Error
	if !errors.As(err, &re) || re.Code != jsonrpc.CodeInvalidParams || re.Message != "Resource not found" {
		t.Errorf("%s: %v, want Resource not found", what, err)
	}
}

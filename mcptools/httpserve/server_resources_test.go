package httpserve_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/mcptest"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// TestResourcesHTTPUsers: over --http each user lists, reads and subscribes
// to their own sessions only; another user's are not found, and their
// updates go to the owner's subscription alone, on both protocol eras (on
// 2026-07-28 a subscription is a subscriptions/listen stream).
func TestResourcesHTTPUsers(t *testing.T) {
	logs := &testkit.Buffer{}
	h := newHTTPServer(t, sessions.Config{}, mcptools.Options{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	for _, protocol := range []string{"2025-11-25", ""} {
		t.Run("protocol_"+protocol, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			connect := func(user string) (*mcp.ClientSession, *mcptest.Updates) {
				client, ups := mcptest.ResourceClient()
				cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: h.url + "/mcp", HTTPClient: mcptest.Bearer(user + "-secret")},
					&mcp.ClientSessionOptions{ProtocolVersion: protocol})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { cs.Close() })
				return cs, ups
			}
			alice, aliceUps := connect("alice")
			bob, bobUps := connect("bob")
			sid := mcptest.CreateSession(t, alice)
			bobSid := mcptest.CreateSession(t, bob)
			transcript := mcptest.SessionURI(sid, "transcript")

			for who, cs := range map[string]*mcp.ClientSession{"alice": alice, "bob": bob} {
				list, err := cs.ListResources(ctx, nil)
				if err != nil {
					t.Fatalf("%s's list: %v", who, err)
				}
				var uris []string
				for _, r := range list.Resources {
					uris = append(uris, r.URI)
				}
				own, other := sid, bobSid
				if who == "bob" {
					own, other = bobSid, sid
				}
				if got := strings.Join(uris, " "); !strings.Contains(got, own) || strings.Contains(got, other) {
					t.Errorf("%s lists %s", who, got)
				}
				// A user's own: never cached for another (defect 11).
				if protocol == "" && list.CacheScope != "private" {
					t.Errorf("%s's list has cacheScope %q, want private", who, list.CacheScope)
				}
				rd, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: mcptest.SessionURI(own, "transcript")})
				if err != nil {
					t.Fatalf("%s's transcript: %v", who, err)
				}
				if protocol == "" && rd.CacheScope != "private" {
					t.Errorf("%s's transcript has cacheScope %q, want private", who, rd.CacheScope)
				}
			}
			_, err := mcptest.ReadText(bob, transcript)
			mcptest.WantRPCError(t, "bob reads alice's transcript", err, jsonrpc.CodeInvalidParams, mcptest.ResourceNotFound)
			_, err = mcptest.ReadText(bob, mcptest.SessionURI(sid, "answer"))
			mcptest.WantRPCError(t, "bob reads alice's answer", err, jsonrpc.CodeInvalidParams, mcptest.ResourceNotFound)
			if protocol == "" {
				// The go-sdk client's Subscribe drops the listen stream's
				// error: the request by hand.
				code, body := mcptest.Listen(t, ctx, h.url, "bob-secret", transcript)
				if code != 400 || !strings.Contains(body, `"code":-32602,"message":"`+mcptest.ResourceNotFound+`"`) {
					t.Errorf("bob's subscriptions/listen to alice's transcript: %d %s", code, body)
				}
			} else {
				err = bob.Subscribe(ctx, &mcp.SubscribeParams{URI: transcript})
				mcptest.WantRPCError(t, "bob subscribes to alice's transcript", err, jsonrpc.CodeInvalidParams, mcptest.ResourceNotFound)
			}

			subscribeHTTP(t, ctx, alice, transcript, protocol, logs)
			mcptest.CallJSON(t, alice, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "hi"})
			aliceUps.Wait(t, transcript, 1)
			if text, err := mcptest.ReadText(alice, transcript); err != nil || !strings.Contains(text, "Hello from fake API") {
				t.Errorf("alice's transcript: %v\n%s", err, text)
			}
			// Bob's own query's end comes after alice's: had her update
			// reached him, it would be there by now.
			subscribeHTTP(t, ctx, bob, mcptest.SessionURI(bobSid, "answer"), protocol, logs)
			mcptest.CallJSON(t, bob, "claude_chat_query", map[string]any{"sessionId": bobSid, "prompt": "hi"})
			bobUps.Wait(t, mcptest.SessionURI(bobSid, "answer"), 1)
			if n := bobUps.Count(transcript); n != 0 {
				t.Errorf("bob got %d updates of alice's transcript", n)
			}
		})
	}
}

// subscribeHTTP subscribes cs to uri. On 2026-07-28 Subscribe holds its
// subscriptions/listen stream open until Unsubscribe, and returns then: it
// runs on a goroutine until the test ends, and the subscription stands once
// the server logged it.
func subscribeHTTP(t *testing.T, ctx context.Context, cs *mcp.ClientSession, uri, protocol string, logs *testkit.Buffer) {
	t.Helper()
	if protocol != "" {
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Fatalf("subscribe %s: %v", uri, err)
		}
		return
	}
	logged := func() int { return strings.Count(logs.String(), "resource subscribed") }
	n := logged()
	done := make(chan error, 1)
	go func() { done <- cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: uri}) }()
	t.Cleanup(func() {
		_ = cs.Unsubscribe(context.Background(), &mcp.UnsubscribeParams{URI: uri})
		<-done
	})
	testkit.Until(t, 10*time.Second, "the server records the subscription to "+uri, func() bool { return logged() > n })
}

package mcptools

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakecli"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/mcptest"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// updates records the notifications/resources/updated a client gets.
type updates struct {
	mu   sync.Mutex
	uris []string
}

func (u *updates) add(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.uris = append(u.uris, req.Params.URI)
}

// count is how many updates of uri came.
func (u *updates) count(uri string) int {
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

// waitUpdate waits until n updates of uri came.
func (u *updates) waitUpdate(t *testing.T, uri string, n int) {
	t.Helper()
	testkit.Until(t, 10*time.Second, "update "+uri, func() bool { return u.count(uri) >= n })
}

// resourceClient is a go-sdk client that records resource updates.
func resourceClient() (*mcp.Client, *updates) {
	u := &updates{}
	return mcp.NewClient(&mcp.Implementation{Name: "res", Version: "1"}, &mcp.ClientOptions{ResourceUpdatedHandler: u.add}), u
}

// readText reads uri; a protocol error is returned.
func readText(cs *mcp.ClientSession, uri string) (string, error) {
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

// wantRPCError checks that err is a JSON-RPC error with code whose message
// holds msg.
func wantRPCError(t *testing.T, what string, err error, code int64, msg string) {
	t.Helper()
	var re *jsonrpc.Error
	if !errors.As(err, &re) || re.Code != code || !strings.Contains(re.Message, msg) {
		t.Errorf("%s: %v, want error %d with %q", what, err, code, msg)
	}
}

const resNotFound = "Resource not found" // mcp.ResourceNotFoundError's message (code -32602, SEP-2164)

func sessionURI(sid, what string) string { return "claude-agent-mcp://sessions/" + sid + "/" + what }

// TestResources: on stdio (one user) a session's transcript and answer are
// listed, templated and read; a page past the end, a malformed URI and an
// unknown session are clear errors; a subscriber gets an update of both
// at each turn's end, a task's and a follow-up's alike, and none after it
// unsubscribed.
func TestResources(t *testing.T) {
	path, env := fakecli.Command(t)
	mgr := sessions.NewManager(sessions.Config{CLIPath: path, Env: env})
	t.Cleanup(mgr.Shutdown)
	client, ups := resourceClient()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := NewServer(mgr, Options{}).Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := client.Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	if caps := cs.InitializeResult().Capabilities.Resources; caps == nil || !caps.Subscribe || caps.ListChanged {
		t.Errorf("resources capability %+v, want subscribe and no listChanged", caps)
	}
	tmpls, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(tmpls.ResourceTemplates) != 2 ||
		tmpls.ResourceTemplates[0].URITemplate+" "+tmpls.ResourceTemplates[1].URITemplate != "claude-agent-mcp://sessions/{sessionId}/answer claude-agent-mcp://sessions/{sessionId}/transcript{?page}" {
		t.Fatalf("templates: %v %+v", err, tmpls)
	}

	_, out := mcptest.CallJSON(t, cs, "claude_session_create", map[string]any{"cwd": t.TempDir(), "name": "tester"})
	sid := out["sessionId"].(string)
	transcript, answer := sessionURI(sid, "transcript"), sessionURI(sid, "answer")
	list, err := cs.ListResources(ctx, nil)
	if err != nil || len(list.Resources) != 2 || list.Resources[0].URI != transcript || list.Resources[1].URI != answer ||
		list.Resources[0].Name != "tester" || !strings.Contains(list.Resources[1].Description, "last answer") {
		t.Fatalf("list: %v %+v", err, list)
	}
	if text, err := readText(cs, answer); err != nil || !strings.Contains(text, "No answer yet") {
		t.Errorf("answer before any query: %v %q", err, text)
	}
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: transcript}); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: answer}); err != nil {
		t.Fatalf("subscribe: %v", err)
	}

	mcptest.CallJSON(t, cs, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "TOOL_BASH[echo hi]"})
	ups.waitUpdate(t, transcript, 1)
	ups.waitUpdate(t, answer, 1)
	text, err := readText(cs, transcript)
	if err != nil || !strings.Contains(text, "page 1 of 1") || !strings.Contains(text, "## Prompt\n\nTOOL_BASH[echo hi]") ||
		!strings.Contains(text, "- Tool `Bash`: $ ") || !strings.Contains(text, "Tool said: hi") {
		t.Errorf("transcript: %v\n%s", err, text)
	}
	if same, err := readText(cs, transcript+"?page=1"); err != nil || same != text {
		t.Errorf("page 1 is not the only page: %v\n%s", err, same)
	}
	if text, err := readText(cs, answer); err != nil || !strings.Contains(text, "Tool said: hi") || !strings.Contains(text, "tester") {
		t.Errorf("answer: %v\n%s", err, text)
	}

	_, err = readText(cs, transcript+"?page=2")
	wantRPCError(t, "page 2", err, jsonrpc.CodeInvalidParams, "page 2 of session "+sid+"'s transcript does not exist: it has 1 page(s)")
	for _, bad := range []string{sessionURI(sid, "transcript?page=0"), sessionURI(sid, "transcript?page=x"), sessionURI(sid, "answer?page=1"),
		sessionURI(sid, "log"), "claude-agent-mcp://sessions//answer"} {
		_, err := readText(cs, bad)
		wantRPCError(t, bad, err, jsonrpc.CodeInvalidParams, "malformed resource URI")
	}
	for _, missing := range []string{sessionURI("no-such-session", "answer"), "test://static-text"} {
		_, err := readText(cs, missing)
		wantRPCError(t, missing, err, jsonrpc.CodeInvalidParams, resNotFound)
		err = cs.Subscribe(ctx, &mcp.SubscribeParams{URI: missing})
		wantRPCError(t, "subscribe "+missing, err, jsonrpc.CodeInvalidParams, resNotFound)
	}
	err = cs.Subscribe(ctx, &mcp.SubscribeParams{URI: transcript + "?page=1"})
	wantRPCError(t, "subscribe to a page", err, jsonrpc.CodeInvalidParams, "subscribe to "+transcript+" instead")

	// A task's turn updates them too.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "claude_chat_query", Arguments: map[string]any{"sessionId": sid, "prompt": "hi", "waitSeconds": 0}})
	if err != nil || res.IsError {
		t.Fatalf("second query: %v %v", err, res)
	}
	mcptest.CallJSON(t, cs, "claude_chat_wait", map[string]any{"sessionId": sid})
	ups.waitUpdate(t, answer, 2)
	if text, err := readText(cs, answer); err != nil || !strings.Contains(text, "Hello from fake API") {
		t.Errorf("answer after the second query: %v\n%s", err, text)
	}

	// Unsubscribed from the transcript: its update no longer comes, the
	// answer's (sent after it) still does.
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: transcript}); err != nil {
		t.Fatal(err)
	}
	before := ups.count(transcript)
	mcptest.CallJSON(t, cs, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "hi"})
	ups.waitUpdate(t, answer, 3)
	if n := ups.count(transcript); n != before {
		t.Errorf("%d transcript updates after unsubscribing, want %d", n, before)
	}
}

// TestResourcesHTTPUsers: over --http each user lists, reads and subscribes
// to their own sessions only; another user's are not found, and their
// updates go to the owner's subscription alone, on both protocol eras (on
// 2026-07-28 a subscription is a subscriptions/listen stream).
func TestResourcesHTTPUsers(t *testing.T) {
	logs := &testkit.Buffer{}
	h := newHTTPServer(t, sessions.Config{}, Options{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	for _, protocol := range []string{"2025-11-25", ""} {
		t.Run("protocol_"+protocol, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			connect := func(user string) (*mcp.ClientSession, *updates) {
				client, ups := resourceClient()
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
			transcript := sessionURI(sid, "transcript")

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
				rd, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: sessionURI(own, "transcript")})
				if err != nil {
					t.Fatalf("%s's transcript: %v", who, err)
				}
				if protocol == "" && rd.CacheScope != "private" {
					t.Errorf("%s's transcript has cacheScope %q, want private", who, rd.CacheScope)
				}
			}
			_, err := readText(bob, transcript)
			wantRPCError(t, "bob reads alice's transcript", err, jsonrpc.CodeInvalidParams, resNotFound)
			_, err = readText(bob, sessionURI(sid, "answer"))
			wantRPCError(t, "bob reads alice's answer", err, jsonrpc.CodeInvalidParams, resNotFound)
			if protocol == "" {
				// The go-sdk client's Subscribe drops the listen stream's
				// error: the request by hand.
				code, body := listenRaw(t, h.url, "bob-secret", transcript)
				if code != 400 || !strings.Contains(body, `"code":-32602,"message":"`+resNotFound+`"`) {
					t.Errorf("bob's subscriptions/listen to alice's transcript: %d %s", code, body)
				}
			} else {
				err = bob.Subscribe(ctx, &mcp.SubscribeParams{URI: transcript})
				wantRPCError(t, "bob subscribes to alice's transcript", err, jsonrpc.CodeInvalidParams, resNotFound)
			}

			subscribeHTTP(t, ctx, alice, transcript, protocol, logs)
			mcptest.CallJSON(t, alice, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "hi"})
			aliceUps.waitUpdate(t, transcript, 1)
			if text, err := readText(alice, transcript); err != nil || !strings.Contains(text, "Hello from fake API") {
				t.Errorf("alice's transcript: %v\n%s", err, text)
			}
			// Bob's own query's end comes after alice's: had her update
			// reached him, it would be there by now.
			subscribeHTTP(t, ctx, bob, sessionURI(bobSid, "answer"), protocol, logs)
			mcptest.CallJSON(t, bob, "claude_chat_query", map[string]any{"sessionId": bobSid, "prompt": "hi"})
			bobUps.waitUpdate(t, sessionURI(bobSid, "answer"), 1)
			if n := bobUps.count(transcript); n != 0 {
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

// listenRaw posts a subscriptions/listen of protocol 2026-07-28 for uri
// with token and returns the HTTP status and body: an error comes at once,
// an admitted subscription keeps its stream open (cut after 10 s).
func listenRaw(t *testing.T, url, token, uri string) (int, string) {
	t.Helper()
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	body := `{"jsonrpc":"2.0","id":2,"method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":[` + strconv.Quote(uri) + `]},` + meta + `}}`
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", url+"/mcp", strings.NewReader(body))
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

// notesOf counts the notifications with method whose params hold want.
func (c *rawClient) notesOf(method, want string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, m := range c.notes {
		if m.Method == method && strings.Contains(string(m.Params), want) {
			n++
		}
	}
	return n
}

// TestResourcesTaskFollowUp: on protocol 2026-07-28 a client subscribed
// through subscriptions/listen gets an update of a session's answer at the
// end of each turn of a query running as an MCP task, the follow-up's
// turn of a steered message included; the answer is then the follow-up's.
func TestResourcesTaskFollowUp(t *testing.T) {
	t.Parallel()
	c := newRawClient(t, "2026-07-28", tasksCaps, sessions.Config{}, taskOpts)
	sid, _ := structured(c.tool("claude_session_create", map[string]any{"cwd": t.TempDir()}))["sessionId"].(string)
	answer := sessionURI(sid, "answer")
	listen := c.send("subscriptions/listen", map[string]any{"notifications": map[string]any{"resourceSubscriptions": []string{answer}}})
	testkit.Until(t, 10*time.Second, "the subscription's acknowledgement", func() bool {
		return c.notesOf("notifications/subscriptions/acknowledged", answer) == 1
	})
	res := c.tool("claude_chat_query", map[string]any{"sessionId": sid, "prompt": "SLOW6"})
	id, _ := res["taskId"].(string)
	if res["resultType"] != "task" || id == "" {
		t.Fatalf("not a task: %v", res)
	}
	if steer := c.tool("claude_chat_steer", map[string]any{"sessionId": sid, "message": "STEERED also say hi"}); steer["isError"] == true {
		t.Fatalf("steer: %v", steer)
	}
	c.pollTask(id, taskCompleted)
	testkit.Until(t, 10*time.Second, "an update at each of the two turns' ends", func() bool {
		return c.notesOf("notifications/resources/updated", answer) == 2
	})
	read := c.result(c.call("resources/read", map[string]any{"uri": answer}))
	contents, _ := read["contents"].([]any)
	if len(contents) != 1 || !strings.Contains(contents[0].(map[string]any)["text"].(string), "Hello from fake API (n_messages=1)") {
		t.Errorf("the answer after the follow-up: %v", read)
	}
	select {
	case m := <-listen:
		t.Errorf("the listen stream ended: %+v", m)
	default:
	}
}

package mcptools

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakecli"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/mcptest"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// TestResources: on stdio (one user) a session's transcript and answer are
// listed, templated and read; a page past the end, a malformed URI and an
// unknown session are clear errors; a subscriber gets an update of both
// at each turn's end, a task's and a follow-up's alike, and none after it
// unsubscribed.
func TestResources(t *testing.T) {
	path, env := fakecli.Command(t)
	mgr := sessions.NewManager(sessions.Config{CLIPath: path, Env: env})
	t.Cleanup(mgr.Shutdown)
	client, ups := mcptest.ResourceClient()
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
	if err != nil || len(tmpls.ResourceTemplates) != 3 ||
		tmpls.ResourceTemplates[0].URITemplate+" "+tmpls.ResourceTemplates[1].URITemplate+" "+tmpls.ResourceTemplates[2].URITemplate !=
			"claude-agent-mcp://sessions/{sessionId}/answer claude-agent-mcp://sessions/{sessionId}/diff{?page} claude-agent-mcp://sessions/{sessionId}/transcript{?page}" {
		t.Fatalf("templates: %v %+v", err, tmpls)
	}

	_, out := mcptest.CallJSON(t, cs, "claude_session_create", map[string]any{"cwd": t.TempDir(), "name": "tester"})
	sid := out["sessionId"].(string)
	transcript, answer := mcptest.SessionURI(sid, "transcript"), mcptest.SessionURI(sid, "answer")
	list, err := cs.ListResources(ctx, nil)
	if err != nil || len(list.Resources) != 2 || list.Resources[0].URI != transcript || list.Resources[1].URI != answer ||
		list.Resources[0].Name != "tester" || !strings.Contains(list.Resources[1].Description, "last answer") {
		t.Fatalf("list: %v %+v", err, list)
	}
	if text, err := mcptest.ReadText(cs, answer); err != nil || !strings.Contains(text, "No answer yet") {
		t.Errorf("answer before any query: %v %q", err, text)
	}
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: transcript}); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: answer}); err != nil {
		t.Fatalf("subscribe: %v", err)
	}

	mcptest.CallJSON(t, cs, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "TOOL_BASH[echo hi]"})
	ups.Wait(t, transcript, 1)
	ups.Wait(t, answer, 1)
	text, err := mcptest.ReadText(cs, transcript)
	if err != nil || !strings.Contains(text, "page 1 of 1") || !strings.Contains(text, "## Prompt\n\nTOOL_BASH[echo hi]") ||
		!strings.Contains(text, "- Tool `Bash`: $ ") || !strings.Contains(text, "Tool said: hi") {
		t.Errorf("transcript: %v\n%s", err, text)
	}
	if same, err := mcptest.ReadText(cs, transcript+"?page=1"); err != nil || same != text {
		t.Errorf("page 1 is not the only page: %v\n%s", err, same)
	}
	if text, err := mcptest.ReadText(cs, answer); err != nil || !strings.Contains(text, "Tool said: hi") || !strings.Contains(text, "tester") {
		t.Errorf("answer: %v\n%s", err, text)
	}

	_, err = mcptest.ReadText(cs, transcript+"?page=2")
	mcptest.WantRPCError(t, "page 2", err, jsonrpc.CodeInvalidParams, "page 2 of session "+sid+"'s transcript does not exist: it has 1 page(s)")
	for _, bad := range []string{mcptest.SessionURI(sid, "transcript?page=0"), mcptest.SessionURI(sid, "transcript?page=x"), mcptest.SessionURI(sid, "answer?page=1"),
		mcptest.SessionURI(sid, "log"), "claude-agent-mcp://sessions//answer"} {
		_, err := mcptest.ReadText(cs, bad)
		mcptest.WantRPCError(t, bad, err, jsonrpc.CodeInvalidParams, "malformed resource URI")
	}
	for _, missing := range []string{mcptest.SessionURI("no-such-session", "answer"), "test://static-text"} {
		_, err := mcptest.ReadText(cs, missing)
		mcptest.WantRPCError(t, missing, err, jsonrpc.CodeInvalidParams, mcptest.ResourceNotFound)
		err = cs.Subscribe(ctx, &mcp.SubscribeParams{URI: missing})
		mcptest.WantRPCError(t, "subscribe "+missing, err, jsonrpc.CodeInvalidParams, mcptest.ResourceNotFound)
	}
	err = cs.Subscribe(ctx, &mcp.SubscribeParams{URI: transcript + "?page=1"})
	mcptest.WantRPCError(t, "subscribe to a page", err, jsonrpc.CodeInvalidParams, "subscribe to "+transcript+" instead")

	// A task's turn updates them too.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "claude_chat_query", Arguments: map[string]any{"sessionId": sid, "prompt": "hi", "waitSeconds": 0}})
	if err != nil || res.IsError {
		t.Fatalf("second query: %v %v", err, res)
	}
	mcptest.CallJSON(t, cs, "claude_chat_wait", map[string]any{"sessionId": sid})
	ups.Wait(t, answer, 2)
	if text, err := mcptest.ReadText(cs, answer); err != nil || !strings.Contains(text, "Hello from fake API") {
		t.Errorf("answer after the second query: %v\n%s", err, text)
	}

	// Unsubscribed from the transcript: its update no longer comes, the
	// answer's (sent after it) still does.
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: transcript}); err != nil {
		t.Fatal(err)
	}
	before := ups.Count(transcript)
	mcptest.CallJSON(t, cs, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "hi"})
	ups.Wait(t, answer, 3)
	if n := ups.Count(transcript); n != before {
		t.Errorf("%d transcript updates after unsubscribing, want %d", n, before)
	}
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
	answer := mcptest.SessionURI(sid, "answer")
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

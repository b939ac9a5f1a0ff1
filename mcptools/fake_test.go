package mcptools

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakecli"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/mcptest"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
)

// fakeServer connects an in-memory client to a server whose sessions run
// the fake CLI.
type fakeServer struct {
	mgr *sessions.Manager
	cs  *mcp.ClientSession
	rec *mcptest.Recorder // the client's notifications

	schemaMu sync.Mutex
	outputs  map[string]*jsonschema.Resolved // the tools' output schemas, from tools/list
}

func newFakeServer(tb testing.TB, protocol string, cfg sessions.Config, opts Options) *fakeServer {
	tb.Helper()
	return newFakeServerWith(tb, protocol, cfg, opts, nil)
}

// newFakeServerWith is newFakeServer with a client that answers
// elicitation with elicit (nil: the client declares no elicitation).
func newFakeServerWith(tb testing.TB, protocol string, cfg sessions.Config, opts Options,
	elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) *fakeServer {
	tb.Helper()
	path, env := fakecli.Command(tb)
	maps.Copy(env, cfg.Env) // the test's own, the fake's faults say
	cfg.CLIPath, cfg.Env = path, env
	f := &fakeServer{mgr: sessions.NewManager(cfg)}
	tb.Cleanup(f.mgr.Shutdown)
	f.rec = mcptest.NewRecorder("fake", elicit)
	f.cs = mcptest.ConnectInMemory(tb, NewServer(f.mgr, opts), f.rec, protocol)
	return f
}

func (f *fakeServer) call(tb testing.TB, name string, args any, meta mcp.Meta) (*mcp.CallToolResult, map[string]any) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := f.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args, Meta: meta})
	if err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	var out map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(b, &out)
	if res.StructuredContent != nil {
		if schema := f.outputSchema(tb, name); schema != nil {
			if err := schema.Validate(out); err != nil {
				tb.Errorf("%s: the structured result does not match the tool's output schema: %v\n%.500s", name, err, b)
			}
		}
	}
	return res, out
}

// outputSchema is the output schema tools/list gives for the tool name,
// resolved (nil for a tool without one): the server encodes its results
// itself (see encodedOnce), so every result a test gets is checked here.
func (f *fakeServer) outputSchema(tb testing.TB, name string) *jsonschema.Resolved {
	tb.Helper()
	f.schemaMu.Lock()
	defer f.schemaMu.Unlock()
	if f.outputs == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		f.outputs = map[string]*jsonschema.Resolved{}
		for tool, err := range f.cs.Tools(ctx, nil) {
			if err != nil {
				tb.Fatalf("tools/list: %v", err)
			}
			if tool.OutputSchema == nil {
				continue
			}
			var schema jsonschema.Schema
			b, _ := json.Marshal(tool.OutputSchema)
			if err := json.Unmarshal(b, &schema); err != nil {
				tb.Fatalf("%s's output schema: %v", tool.Name, err)
			}
			r, err := schema.Resolve(nil)
			if err != nil {
				tb.Fatalf("%s's output schema: %v", tool.Name, err)
			}
			f.outputs[tool.Name] = r
		}
	}
	return f.outputs[name]
}

// waitEvents waits until an event contains each of want (see
// mcptest.Recorder.WaitEvents) and returns all events, one a line.
func (f *fakeServer) waitEvents(tb testing.TB, want ...string) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	events, err := f.rec.WaitEvents(ctx, want...)
	joined := strings.Join(events, "\n")
	if err != nil {
		tb.Errorf("events: %v:\n%s", err, joined)
	}
	return joined
}

// resText is a result's text content.
var resText = mcptest.Text

func TestFakeQueryNotifications(t *testing.T) {
	for _, proto := range []string{"2025-11-25", ""} {
		t.Run("protocol="+proto, func(t *testing.T) {
			f := newFakeServer(t, proto, sessions.Config{}, Options{})
			cwd := t.TempDir()
			res, out := f.call(t, "claude_session_create", map[string]any{"cwd": cwd}, nil)
			if res.IsError {
				t.Fatalf("create: %s", resText(res))
			}
			sid := out["sessionId"].(string)
			meta := mcp.Meta{"progressToken": "p1"}
			if proto == "" {
				//lint:ignore SA1019 the 2026-07-28 way to ask for logs, deprecated with logging itself
				meta[mcp.MetaKeyLogLevel] = "debug"
			}
			res, out = f.call(t, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "TOOL_BASH[echo hi]"}, meta)
			if res.IsError {
				t.Fatalf("query: %s", resText(res))
			}
			inv, _ := out["toolInvocations"].([]any)
			if len(inv) != 1 || inv[0].(map[string]any)["name"] != "Bash" {
				t.Errorf("toolInvocations = %v", out["toolInvocations"])
			}
			events := f.waitEvents(t, "progress:turn started", "progress:tool Bash started", "progress:tool Bash failed", "progress:permission: denied Bash", "progress:done", "log:info", "log:debug")
			if i, j := strings.Index(events, "turn started"), strings.Index(events, "progress:done"); i > j {
				t.Errorf("events out of order:\n%s", events)
			}
		})
	}
}

func TestFakeCancellationInterrupts(t *testing.T) {
	f := newFakeServer(t, "2025-11-25", sessions.Config{}, Options{})
	_, out := f.call(t, "claude_session_create", map[string]any{"cwd": t.TempDir()}, nil)
	sid := out["sessionId"].(string)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := f.cs.CallTool(ctx, &mcp.CallToolParams{Name: "claude_chat_query", Arguments: map[string]any{"sessionId": sid, "prompt": "SLOW"}})
		done <- err
	}()
	// Wait until the session runs the query, then cancel the call.
	s, err := f.mgr.Get(sid)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Until(t, 10*time.Second, "the query to start", func() bool { return s.Info().State == state.Running })
	cancel()
	if err := <-done; err == nil {
		t.Error("cancelled call returned no error to the client")
	}
	testkit.Until(t, 10*time.Second, "the session to return to idle after the cancellation", func() bool { return s.Info().State == state.Idle })
	res, out := f.call(t, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "hi"}, nil)
	if res.IsError || out["finalText"] == "" {
		t.Errorf("session unusable after cancellation: %s", resText(res))
	}
}

// BenchmarkWarmQuery measures a warm claude_chat_query through the whole
// server (in-memory MCP client → tools → sessions → claudeagent → fake CLI
// replaying the plain capture with no pauses).
func BenchmarkWarmQuery(b *testing.B) {
	benchQuery(b, "hi", func(map[string]any) bool { return true })
}

// BenchmarkBigQuery is BenchmarkWarmQuery with a 2 MB answer (the BIGTEXT
// capture: a 2 MB assistant line and a 2 MB result line): the server's own
// cost of a big turn, from the CLI's stdout to the tool's result (capped at
// --max-result-chars).
func BenchmarkBigQuery(b *testing.B) {
	benchQuery(b, "BIGTEXT", func(out map[string]any) bool {
		return strings.Contains(fmt.Sprint(out["finalText"]), "truncated: showing")
	})
}

// benchQuery times claude_chat_query with prompt in a session that has
// answered "hi" once; ok checks each structured result.
func benchQuery(b *testing.B, prompt string, ok func(map[string]any) bool) {
	f := newFakeServer(b, "2025-11-25", sessions.Config{Env: map[string]string{fakecli.EnvSpeed: "1000000"}}, Options{})
	_, out := f.call(b, "claude_session_create", map[string]any{"cwd": b.TempDir()}, nil)
	sid := out["sessionId"].(string)
	f.call(b, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "hi"}, nil)
	b.ResetTimer()
	for b.Loop() {
		res, out := f.call(b, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": prompt}, nil)
		if res.IsError || !ok(out) {
			b.Fatalf("the answer to %q: %.300s", prompt, resText(res))
		}
	}
}

// TestFailedTurnSaysItOnce: a CLI that is not logged in answers every turn
// with the synthetic text "Not logged in · Please run /login" and an error
// result carrying the same text; the result's text says it once, as the
// failure, for chat and one-shot queries alike. The structured content
// keeps both fields.
func TestFailedTurnSaysItOnce(t *testing.T) {
	const notLoggedIn = "Not logged in · Please run /login"
	f := newFakeServer(t, "", sessions.Config{WarmSpares: 0, Env: map[string]string{fakecli.EnvNotLoggedIn: "1"}}, Options{})
	res, out := f.call(t, "claude_session_create", map[string]any{"cwd": t.TempDir()}, nil)
	if res.IsError {
		t.Fatalf("create: %s", resText(res))
	}
	sid := out["sessionId"].(string)
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"claude_chat_query", map[string]any{"sessionId": sid, "prompt": "hi"}},
		{"claude_direct_query", map[string]any{"prompt": "hi", "cwd": t.TempDir()}},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			res, out := f.call(t, tc.tool, tc.args, nil)
			text := resText(res)
			if !res.IsError || !strings.HasPrefix(text, "The turn failed: "+notLoggedIn) {
				t.Fatalf("isError %v, text %q; want a failed turn", res.IsError, text)
			}
			if n := strings.Count(text, notLoggedIn); n != 1 || strings.Contains(text, "\n\n\n") {
				t.Errorf("the text says %q %d times, or has blank lines to spare:\n%s", notLoggedIn, n, text)
			}
			if out["error"] != notLoggedIn || out["finalText"] != notLoggedIn {
				t.Errorf("structured error %q, finalText %q; want both %q", out["error"], out["finalText"], notLoggedIn)
			}
		})
	}
}

// TestLogTextCut: a 2 MB answer's text goes out in its log notification
// cut as finalText is (--max-result-chars), with a marker that gives the
// whole length; a short text goes out whole.
func TestLogTextCut(t *testing.T) {
	f := newFakeServer(t, "2025-11-25", sessions.Config{Env: map[string]string{fakecli.EnvSpeed: "1000000"}}, Options{MaxResultChars: 1000})
	_, out := f.call(t, "claude_session_create", map[string]any{"cwd": t.TempDir()}, nil)
	sid := out["sessionId"].(string)
	f.call(t, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "hi"}, nil)
	f.call(t, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "BIGTEXT"}, nil)
	var texts []string
	for _, l := range f.rec.Logs() {
		if m, ok := l.Data.(map[string]any); ok && m["type"] == "text" {
			texts = append(texts, fmt.Sprint(m["text"]))
		}
	}
	if len(texts) != 2 {
		t.Fatalf("%d text log messages, want 2 (one a query)", len(texts))
	}
	if !strings.HasPrefix(texts[0], "Hello from fake API") || strings.Contains(texts[0], "cut:") {
		t.Errorf("the short text's log message = %q, want it whole", texts[0])
	}
	big := texts[1]
	if !strings.Contains(big, "[… cut: showing 1000 of 2000000 characters; the transcript has the whole text]") || len(big) > 1200 {
		t.Errorf("the 2 MB text's log message: %d bytes, ends %q", len(big), big[max(0, len(big)-120):])
	}
}

package mcptools

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakecli"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/tracing"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// The callers' trace ids of these tests (W3C traceparent).
const (
	callerTrace  = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpan   = "00f067aa0ba902b7"
	callerParent = "00-" + callerTrace + "-" + callerSpan + "-01"
)

// recordSpans turns tracing on for the test with an in-memory recorder
// (prompts: --trace-prompts). Tracing is the process's: tests that use it
// do not run in parallel.
func recordSpans(t *testing.T, prompts bool) *tracetest.SpanRecorder {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	restore := tracing.Install(tp, prompts)
	t.Cleanup(func() {
		restore()
		_ = tp.Shutdown(context.Background())
	})
	return rec
}

// spanNamed is the one ended span named name (the test fails on none or
// more).
func spanNamed(t *testing.T, rec *tracetest.SpanRecorder, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	var found []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d ended spans named %q, want 1; the spans: %v", len(found), name, spanNames(rec))
	}
	return found[0]
}

func spanNames(rec *tracetest.SpanRecorder) []string {
	var names []string
	for _, s := range rec.Ended() {
		names = append(names, s.Name()+" < "+s.Parent().SpanID().String())
	}
	return names
}

// childOf checks that s is a child of parent.
func childOf(t *testing.T, s, parent sdktrace.ReadOnlySpan) {
	t.Helper()
	if s.Parent().SpanID() != parent.SpanContext().SpanID() || s.SpanContext().TraceID() != parent.SpanContext().TraceID() {
		t.Errorf("%s's parent is %s, want %s (%s)", s.Name(), s.Parent().SpanID(), parent.SpanContext().SpanID(), parent.Name())
	}
}

func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.String()
		}
	}
	return ""
}

// TestTraceQueryTree: a claude_chat_query whose _meta carries a
// traceparent continues the caller's trace; its turn nests under the
// call, and under the turn the permission wait, the steer (linked to the
// steering call's span) and the store write; a create's process start
// nests under the create's call. No span carries the prompt.
func TestTraceQueryTree(t *testing.T) {
	rec := recordSpans(t, false)
	f := newFakeServerWith(t, "2025-11-25", sessions.Config{}, Options{},
		func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "allow_once"}}, nil
		})
	_, out := f.call(t, "claude_session_create", map[string]any{"cwd": t.TempDir()}, nil)
	sid := out["sessionId"].(string)
	create := spanNamed(t, rec, "tools/call claude_session_create")
	childOf(t, spanNamed(t, rec, "claude.process_start"), create)

	done := make(chan struct{})
	go func() {
		defer close(done)
		res, _ := f.call(t, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "TOOL_BASH[sleep 1; echo slept]"},
			mcp.Meta{"traceparent": callerParent, "tracestate": "vendor=x"})
		if res.IsError {
			t.Errorf("query: %s", resText(res))
		}
	}()
	running(t, f.mgr, sid, func(p runProgress) bool { return p.tools > 0 })
	if res, _ := f.call(t, "claude_chat_steer", map[string]any{"sessionId": sid, "message": "also say hi"}, nil); res.IsError {
		t.Fatalf("steer: %s", resText(res))
	}
	<-done

	call := spanNamed(t, rec, "tools/call claude_chat_query")
	if got := call.SpanContext().TraceID().String(); got != callerTrace {
		t.Errorf("the call's trace is %s, want the caller's %s", got, callerTrace)
	}
	if got := call.Parent().SpanID().String(); got != callerSpan || !call.Parent().IsRemote() {
		t.Errorf("the call's parent is %s, want the caller's span %s", got, callerSpan)
	}
	if call.SpanKind() != trace.SpanKindServer || attr(call, "session.id") != sid {
		t.Errorf("the call's span: kind %s, session.id %q", call.SpanKind(), attr(call, "session.id"))
	}
	turnSpan := spanNamed(t, rec, "claude.turn")
	childOf(t, turnSpan, call)
	if attr(turnSpan, "session.id") != sid || attr(turnSpan, "gen_ai.usage.output_tokens") == "" || attr(turnSpan, "claude.cost_usd") == "" {
		t.Errorf("the turn's attributes: %v", turnSpan.Attributes())
	}
	if attr(turnSpan, "claude.prompt") != "" {
		t.Error("the turn's span carries the prompt without --trace-prompts")
	}
	perm := spanNamed(t, rec, "claude.permission_wait")
	childOf(t, perm, turnSpan)
	if attr(perm, "gen_ai.tool.name") != "Bash" || attr(perm, "claude.permission.behavior") != "allow" {
		t.Errorf("the permission wait's attributes: %v", perm.Attributes())
	}
	steer := spanNamed(t, rec, "claude.steer")
	childOf(t, steer, turnSpan)
	steerCall := spanNamed(t, rec, "tools/call claude_chat_steer")
	if l := steer.Links(); len(l) != 1 || l[0].SpanContext.SpanID() != steerCall.SpanContext().SpanID() {
		t.Errorf("the steer's links %v, want the steering call's span", l)
	}
	childOf(t, spanNamed(t, rec, "claude.store_write"), turnSpan)
}

// TestTraceHTTPHeader: over streamable HTTP a call without trace context
// in _meta continues the trace of its traceparent header.
func TestTraceHTTPHeader(t *testing.T) {
	rec := recordSpans(t, false)
	path, env := fakecli.Command(t)
	mgr := sessions.NewManager(sessions.Config{CLIPath: path, Env: env})
	t.Cleanup(mgr.Shutdown)
	srv := NewServer(mgr, Options{})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	client := &http.Client{Transport: headerTransport{"traceparent": callerParent}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: client}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "claude_session_list", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	testkit.Until(t, 5*time.Second, "the call's span", func() bool { return len(rec.Ended()) > 0 })
	call := spanNamed(t, rec, "tools/call claude_session_list")
	if call.SpanContext().TraceID().String() != callerTrace || call.Parent().SpanID().String() != callerSpan {
		t.Errorf("the call's span is in trace %s under %s, want the header's %s under %s",
			call.SpanContext().TraceID(), call.Parent().SpanID(), callerTrace, callerSpan)
	}
}

// TestTraceSpareClaim: a create that takes a warm spare has the claim
// under its call, and no process start.
func TestTraceSpareClaim(t *testing.T) {
	rec := recordSpans(t, false)
	f := newFakeServer(t, "2025-11-25", sessions.Config{WarmSpares: 1, MaxLive: 4}, Options{})
	cwd := t.TempDir()
	f.call(t, "claude_session_create", map[string]any{"cwd": cwd}, nil)
	testkit.Until(t, 10*time.Second, "a warm spare", func() bool { return f.mgr.Spares() > 0 })
	f.call(t, "claude_session_create", map[string]any{"cwd": cwd}, nil)
	var second sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "tools/call claude_session_create" {
			second = s // the later one
		}
	}
	claim := spanNamed(t, rec, "claude.spare_claim")
	childOf(t, claim, second)
	if attr(claim, "process.pid") == "" {
		t.Errorf("the claim's attributes: %v", claim.Attributes())
	}
	spanNamed(t, rec, "claude.process_start") // the first create's alone
}

// TestTracePrompts: with --trace-prompts the turn's span carries the
// prompt, and a steer's its message.
func TestTracePrompts(t *testing.T) {
	rec := recordSpans(t, true)
	f := newFakeServer(t, "2025-11-25", sessions.Config{}, Options{})
	_, out := f.call(t, "claude_session_create", map[string]any{"cwd": t.TempDir(), "permissionMode": "bypassPermissions"}, nil)
	sid := out["sessionId"].(string)
	done := f.queryAsync(t, map[string]any{"sessionId": sid, "prompt": "TOOL_BASH[sleep 1; echo slept]"})
	running(t, f.mgr, sid, func(p runProgress) bool { return p.tools > 0 })
	if res, _ := f.call(t, "claude_chat_steer", map[string]any{"sessionId": sid, "message": "also say hi"}, nil); res.IsError {
		t.Fatalf("steer: %s", resText(res))
	}
	<-done
	if got := attr(spanNamed(t, rec, "claude.turn"), "claude.prompt"); got != "TOOL_BASH[sleep 1; echo slept]" {
		t.Errorf("the turn's claude.prompt is %q", got)
	}
	if got := attr(spanNamed(t, rec, "claude.steer"), "claude.prompt"); got != "also say hi" {
		t.Errorf("the steer's claude.prompt is %q", got)
	}
}

// headerTransport adds headers to every request.
type headerTransport map[string]string

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// BenchmarkWarmQueryTraced is BenchmarkWarmQuery (fake_test.go) with
// tracing on: every span recorded and sampled, none exported (the
// exporter's work is the batch processor's, off the call's path). With
// tracing off BenchmarkWarmQuery itself is the figure: the same
// allocations as before tracing existed (BENCHMARKS.md).
func BenchmarkWarmQueryTraced(b *testing.B) {
	tp := sdktrace.NewTracerProvider()
	defer tracing.Install(tp, false)()
	benchQuery(b, "hi", func(map[string]any) bool { return true })
}

package e2e_test

import (
	"context"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpSpan is a span an OTLP receiver got, with its service.
type otlpSpan struct {
	service, name     string
	trace, id, parent string
	attrs             map[string]string
	start, end        uint64 // Unix nanoseconds
}

// otlpReceiver is an OTLP/HTTP collector of traces: it decodes each
// request as the protocol's ExportTraceServiceRequest.
type otlpReceiver struct {
	srv   *httptest.Server
	mu    sync.Mutex
	spans []otlpSpan
	bad   []string // requests it could not decode
}

func startReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *otlpReceiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	var ex coltracepb.ExportTraceServiceRequest
	err := proto.Unmarshal(body, &ex)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil || req.URL.Path != "/v1/traces" {
		r.bad = append(r.bad, req.URL.Path+" "+req.Header.Get("Content-Type"))
		http.Error(w, "not OTLP/protobuf traces", http.StatusBadRequest)
		return
	}
	for _, rs := range ex.ResourceSpans {
		var service string
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				service = kv.Value.GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				attrs := map[string]string{}
				for _, kv := range s.Attributes {
					attrs[kv.Key] = kv.Value.String()
				}
				r.spans = append(r.spans, otlpSpan{service: service, name: s.Name, trace: hex.EncodeToString(s.TraceId),
					id: hex.EncodeToString(s.SpanId), parent: hex.EncodeToString(s.ParentSpanId), attrs: attrs,
					start: s.StartTimeUnixNano, end: s.EndTimeUnixNano})
			}
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(nil)
}

func (r *otlpReceiver) got() ([]otlpSpan, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]otlpSpan(nil), r.spans...), append([]string(nil), r.bad...)
}

// stop ends the server (stdin closed: its sessions stop, its last spans
// are flushed) and waits for it.
func (e *e2e) stop(t *testing.T) {
	t.Helper()
	e.stdin.Close()
	select {
	case <-e.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not exit 30 s after stdin closed")
	}
}

const (
	e2eTrace  = "4bf92f3577b34da6a3ce929d0e0e4736"
	e2eParent = "00f067aa0ba902b7"
)

// traceQuery runs one claude_direct_query (a Bash call the client allows
// when asked) whose _meta carries the caller's trace context.
func traceQuery(t *testing.T, e *e2e) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := e.session.CallTool(ctx, &mcp.CallToolParams{Name: "claude_direct_query",
		Arguments: map[string]any{"cwd": e.cwd, "prompt": "TOOL_BASH[touch traced && echo traced]"},
		Meta:      mcp.Meta{"traceparent": "00-" + e2eTrace + "-" + e2eParent + "-01"}})
	if err != nil || res.IsError {
		t.Fatalf("claude_direct_query: %v %s", err, text(res))
	}
}

func allowOnce(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "allow_once"}}, nil
}

// TestE2ETrace: with OTEL_EXPORTER_OTLP_ENDPOINT and --trace-cli, one host
// call produces one trace in an OTLP/HTTP receiver, the caller's: the
// call's span under the caller's, the turn under it, and under the turn
// the process start, the permission wait, the store write and the CLI's
// own spans (service claude-code), its interaction a child of the turn.
func TestE2ETrace(t *testing.T) {
	t.Parallel()
	recv := startReceiver(t)
	e := startE2E(t, e2eOptions{protocol: "2025-11-25", elicit: allowOnce, args: []string{"--trace-cli", "--warm-spares", "0"},
		env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": recv.srv.URL, "OTEL_BSP_SCHEDULE_DELAY": "200"}})
	traceQuery(t, e)
	e.stop(t)
	spans, bad := recv.got()
	if len(bad) > 0 {
		t.Errorf("requests the receiver could not decode: %v", bad)
	}
	byName := map[string][]otlpSpan{}
	traces := map[string]bool{}
	var names []string
	for _, s := range spans {
		byName[s.name] = append(byName[s.name], s)
		traces[s.trace] = true
		names = append(names, s.service+":"+s.name)
	}
	sort.Strings(names)
	t.Logf("%d spans: %s", len(spans), strings.Join(names, ", "))
	one := func(name string) otlpSpan {
		t.Helper()
		if len(byName[name]) != 1 {
			t.Fatalf("%d spans named %q, want 1", len(byName[name]), name)
		}
		return byName[name][0]
	}
	call := one("tools/call claude_direct_query")
	if call.trace != e2eTrace || call.parent != e2eParent || call.service != "claude-agent-mcp" {
		t.Errorf("the call's span: trace %s parent %s service %s, want the caller's", call.trace, call.parent, call.service)
	}
	turn := one("claude.turn")
	for _, c := range []struct {
		s      otlpSpan
		parent otlpSpan
	}{{turn, call}, {one("claude.process_start"), turn}, {one("claude.permission_wait"), turn}, {one("claude.store_write"), turn}} {
		if c.s.parent != c.parent.id || c.s.trace != e2eTrace {
			t.Errorf("%s is under %s in trace %s, want under %s (%s)", c.s.name, c.s.parent, c.s.trace, c.parent.name, c.parent.id)
		}
	}
	if !strings.Contains(turn.attrs["gen_ai.usage.output_tokens"], "int_value") || turn.attrs["session.id"] == "" {
		t.Errorf("the turn's attributes: %v", turn.attrs)
	}
	var cli []otlpSpan
	for _, s := range spans {
		if s.service == "claude-code" {
			cli = append(cli, s)
		}
	}
	if len(cli) == 0 {
		t.Fatal("the CLI exported no span with --trace-cli")
	}
	ids := map[string]bool{}
	for _, s := range spans {
		ids[s.id] = true
	}
	for _, s := range cli {
		if s.trace != e2eTrace || !ids[s.parent] {
			t.Errorf("the CLI's span %s is in trace %s under %s, not nested in the caller's trace", s.name, s.trace, s.parent)
		}
	}
	if len(traces) != 1 {
		t.Errorf("%d traces, want the caller's alone", len(traces))
	}
	inter := byName["claude_code.interaction"]
	if len(inter) != 1 || inter[0].parent != turn.id {
		t.Errorf("the CLI's interaction spans %v, want one under the turn %s", inter, turn.id)
	}
}

// TestE2ETraceOff: without an OTLP endpoint tracing is off, here with the
// endpoint set and OTEL_TRACES_EXPORTER=none (which the CLIs inherit):
// the receiver gets nothing, from the server or its CLI.
func TestE2ETraceOff(t *testing.T) {
	t.Parallel()
	recv := startReceiver(t)
	e := startE2E(t, e2eOptions{protocol: "2025-11-25", elicit: allowOnce, args: []string{"--warm-spares", "0"},
		env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": recv.srv.URL, "OTEL_TRACES_EXPORTER": "none", "OTEL_BSP_SCHEDULE_DELAY": "200",
			"CLAUDE_CODE_ENABLE_TELEMETRY": "1"}})
	traceQuery(t, e)
	e.stop(t)
	if spans, bad := recv.got(); len(spans)+len(bad) > 0 {
		t.Errorf("with tracing off the receiver got %d spans and %d requests it could not read: %v", len(spans), len(bad), spans)
	}
}

// TestE2ETraceLaterTurn: a session whose CLI was started by its create
// (with warm spares: a spare) and has answered a turn continues the trace
// of each later query (TRACEPARENT set through the flag settings' env
// before the prompt): the CLI's interaction nests under that query's
// turn; a message steered into the turn is a span under it too.
func TestE2ETraceLaterTurn(t *testing.T) {
	t.Parallel()
	recv := startReceiver(t)
	e := startE2E(t, e2eOptions{protocol: "2025-11-25", args: []string{"--trace-cli"},
		env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": recv.srv.URL, "OTEL_BSP_SCHEDULE_DELAY": "200"}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	_, out := e.call(t, ctx, "claude_session_create", map[string]any{"cwd": e.cwd, "permissionMode": "bypassPermissions"}, nil)
	sid := out["sessionId"].(string)
	if res, _ := e.call(t, ctx, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "hello"}, nil); res.IsError {
		t.Fatalf("the first query: %s", text(res))
	}
	before := len(e.api.MessageRequests())
	done := make(chan error, 1)
	go func() {
		res, err := e.session.CallTool(ctx, &mcp.CallToolParams{Name: "claude_chat_query",
			Arguments: map[string]any{"sessionId": sid, "prompt": "TOOL_BASH[sleep 3; echo slept]"},
			Meta:      mcp.Meta{"traceparent": "00-" + e2eTrace + "-" + e2eParent + "-01"}})
		if err == nil && res.IsError {
			err = errors.New(text(res))
		}
		done <- err
	}()
	if _, err := e.api.WaitMessageRequests(ctx, before+1); err != nil {
		t.Fatal(err)
	}
	if res, _ := e.call(t, ctx, "claude_chat_steer", map[string]any{"sessionId": sid, "message": "also count to three"}, nil); res.IsError {
		t.Fatalf("steer: %s", text(res))
	}
	if err := <-done; err != nil {
		t.Fatalf("the traced query: %v", err)
	}
	e.stop(t)
	spans, _ := recv.got()
	var turn otlpSpan
	var names []string
	for _, s := range spans {
		names = append(names, s.service+":"+s.name+"@"+s.trace[:6])
		if s.name == "claude.turn" && s.trace == e2eTrace {
			turn = s
		}
	}
	t.Logf("spans: %s", strings.Join(names, ", "))
	if turn.id == "" {
		t.Fatal("no turn span in the caller's trace")
	}
	var steer, inter int
	for _, s := range spans {
		if s.trace != e2eTrace {
			continue
		}
		switch {
		case s.name == "claude.steer" && s.parent == turn.id:
			steer++
		case s.name == "claude_code.interaction" && s.parent == turn.id:
			inter++
		}
	}
	if steer != 1 || inter != 1 {
		t.Errorf("under the traced turn: %d steer spans and %d CLI interactions, want 1 and 1", steer, inter)
	}
}

// TestE2ETraceFanOut: three claude_direct_query calls at once with the
// same parent, as a host fanning out sends them, make three call spans
// side by side under the caller's span, each with its own turn and, under
// it, its own CLI's interaction. With TRACE_SVG it draws them
// (docs/tracing.md's picture).
func TestE2ETraceFanOut(t *testing.T) {
	t.Parallel()
	recv := startReceiver(t)
	e := startE2E(t, e2eOptions{protocol: "2025-11-25", args: []string{"--trace-cli", "--warm-spares", "0"},
		env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": recv.srv.URL, "OTEL_BSP_SCHEDULE_DELAY": "200"}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for _, word := range []string{"one", "two", "three"} {
		wg.Go(func() {
			res, err := e.session.CallTool(ctx, &mcp.CallToolParams{Name: "claude_direct_query",
				Arguments: map[string]any{"cwd": e.cwd, "prompt": "TOOL_BASH[echo " + word + "]"},
				Meta:      mcp.Meta{"traceparent": "00-" + e2eTrace + "-" + e2eParent + "-01"}})
			if err != nil || res.IsError {
				t.Errorf("claude_direct_query %s: %v %s", word, err, text(res))
			}
		})
	}
	wg.Wait()
	e.stop(t)
	spans, _ := recv.got()
	if path := os.Getenv("TRACE_SVG"); path != "" {
		if err := os.WriteFile(path, traceSVG(spans, "three claude_direct_query calls of one host turn (TestE2ETraceFanOut)"), 0o644); err != nil {
			t.Error(err)
		}
	}
	children := map[string][]otlpSpan{}
	for _, s := range spans {
		if s.trace != e2eTrace {
			t.Errorf("%s:%s is in trace %s, not the caller's", s.service, s.name, s.trace)
		}
		children[s.parent] = append(children[s.parent], s)
	}
	calls := children[e2eParent]
	if len(calls) != 3 {
		t.Fatalf("%d spans under the caller's, want the 3 calls", len(calls))
	}
	for _, c := range calls {
		var turns []otlpSpan
		for _, k := range children[c.id] {
			if k.name == "claude.turn" {
				turns = append(turns, k)
			}
		}
		if len(turns) != 1 {
			t.Errorf("%s has %d turns under it, want 1", c.name, len(turns))
			continue
		}
		inter := 0
		for _, k := range children[turns[0].id] {
			if k.name == "claude_code.interaction" {
				inter++
			}
		}
		if inter != 1 {
			t.Errorf("a turn has %d CLI interactions under it, want its own one", inter)
		}
	}
}

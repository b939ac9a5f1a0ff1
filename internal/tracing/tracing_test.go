package tracing

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestWanted(t *testing.T) {
	for _, c := range []struct {
		env     map[string]string
		on      bool
		errWord string
	}{
		{nil, false, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true, ""},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true, ""},
		{map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"}, false, ""},
		{map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}, false, ""},
		{map[string]string{"OTEL_TRACES_EXPORTER": "console"}, false, "otlp"},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, false, "http/protobuf"},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}, true, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, false, ""}, // no endpoint: off, whatever the protocol
	} {
		on, err := Wanted(env(c.env))
		if on != c.on || (err == nil) != (c.errWord == "") || (err != nil && !strings.Contains(err.Error(), c.errWord)) {
			t.Errorf("Wanted(%v) = %v, %v; want %v and an error saying %q", c.env, on, err, c.on, c.errWord)
		}
	}
}

// TestOffIsFree: with tracing off a span costs no allocation and the
// context comes back as it was; nothing is extracted or given to a CLI.
func TestOffIsFree(t *testing.T) {
	if On() {
		t.Fatal("tracing is on before any Setup")
	}
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		c, sp := Start(ctx, "x")
		sp.Str("k", "v")
		sp.Int("n", 1)
		sp.End()
		if c != ctx {
			t.Fatal("Start changed the context with tracing off")
		}
		_ = Carry(ctx, c)
		_ = FromContext(c)
	})
	if allocs != 0 {
		t.Errorf("a span with tracing off allocates %.0f times", allocs)
	}
	if c := Extract(ctx, map[string]any{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}, nil); c != ctx {
		t.Error("Extract took a trace context with tracing off")
	}
	if CLIEnv(ctx) != nil {
		t.Error("CLIEnv gave a CLI variables with tracing off")
	}
}

func TestExtractAndCLIEnv(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	defer Install(tp, false)()
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	ctx := context.Background()
	for name, c := range map[string]context.Context{
		"meta":   Extract(ctx, map[string]any{"traceparent": parent, "tracestate": "a=1"}, nil),
		"header": Extract(ctx, nil, http.Header{"Traceparent": {parent}, "Tracestate": {"a=1"}}),
		"meta over a bad header": Extract(ctx, map[string]any{"traceparent": parent, "tracestate": "a=1"},
			http.Header{"Traceparent": {"00-ffffffffffffffffffffffffffffffff-0000000000000001-01"}}),
		"a bad meta, the header": Extract(ctx, map[string]any{"traceparent": "garbage"}, http.Header{"Traceparent": {parent}, "Tracestate": {"a=1"}}),
	} {
		sc := trace.SpanContextFromContext(c)
		if sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || sc.SpanID().String() != "00f067aa0ba902b7" || sc.TraceState().String() != "a=1" {
			t.Errorf("%s: extracted %v", name, sc)
		}
		c, sp := Start(c, "child")
		e := CLIEnv(c)
		want := "00-4bf92f3577b34da6a3ce929d0e0e4736-" + trace.SpanContextFromContext(c).SpanID().String() + "-01"
		if e["TRACEPARENT"] != want || e["TRACESTATE"] != "a=1" {
			t.Errorf("%s: CLIEnv = %v, want TRACEPARENT %s", name, e, want)
		}
		sp.End()
	}
	if sc := trace.SpanContextFromContext(Extract(ctx, map[string]any{"traceparent": "garbage"}, nil)); sc.IsValid() {
		t.Errorf("a malformed traceparent gave %v", sc)
	}
}

// TestSetupExports: with OTEL_EXPORTER_OTLP_ENDPOINT set, Setup exports
// spans as OTLP/HTTP protobuf, with the headers of
// OTEL_EXPORTER_OTLP_HEADERS and the resource's service name.
func TestSetupExports(t *testing.T) {
	var mu sync.Mutex
	var got []*tracepb.ResourceSpans
	var header http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var td tracepb.TracesData
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" || proto.Unmarshal(body, &td) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		mu.Lock()
		got, header = append(got, td.ResourceSpans...), r.Header
		mu.Unlock()
	}))
	defer srv.Close()
	on, shutdown, err := Setup(context.Background(), env(map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL + "/", "OTEL_EXPORTER_OTLP_HEADERS": "x-team=blue%20one",
	}), Options{Version: "1.2.3"})
	if err != nil || !on {
		t.Fatalf("Setup: %v, %v", on, err)
	}
	_, sp := Start(context.Background(), "claude.turn")
	sp.Str("session.id", "s1")
	sp.End()
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if On() {
		t.Error("tracing is still on after shutdown")
	}
	mu.Lock()
	defer mu.Unlock()
	if header.Get("X-Team") != "blue one" {
		t.Errorf("the request's header %v lacks OTEL_EXPORTER_OTLP_HEADERS", header)
	}
	if len(got) != 1 || len(got[0].ScopeSpans) != 1 || len(got[0].ScopeSpans[0].Spans) != 1 || got[0].ScopeSpans[0].Spans[0].Name != "claude.turn" {
		t.Fatalf("the collector got %v", got)
	}
	var service string
	for _, kv := range got[0].Resource.Attributes {
		if kv.Key == "service.name" {
			service = kv.Value.GetStringValue()
		}
	}
	if service != "claude-agent-mcp" {
		t.Errorf("service.name %q", service)
	}
}

func TestBadEndpoint(t *testing.T) {
	if _, _, err := Setup(context.Background(), env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "127.0.0.1:4318"}), Options{}); err == nil || !strings.Contains(err.Error(), "http://") {
		t.Errorf("an endpoint without a scheme: %v", err)
	}
}

// BenchmarkStartOff is a span's cost with tracing off: what each traced
// step of a query costs a server without tracing.
func BenchmarkStartOff(b *testing.B) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, sp := Start(ctx, "claude.turn")
		sp.Str("session.id", "s")
		sp.End()
	}
}

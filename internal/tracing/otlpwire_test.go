package tracing

import (
	"context"
	"encoding/hex"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// TestEncodeMatchesOTLP: the hand-written encoding decodes with the
// generated OTLP types as an ExportTraceServiceRequest, every field a
// span of the server can have in its place.
func TestEncodeMatchesOTLP(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	res := resource.NewSchemaless(attribute.String("service.name", "svc"))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithResource(res))
	tr := tp.Tracer("scope", trace.WithInstrumentationVersion("v1"))
	ts, _ := trace.ParseTraceState("a=1")
	remote := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5}, TraceFlags: 1, TraceState: ts, Remote: true})
	linked := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{9}, SpanID: trace.SpanID{8}, TraceFlags: 1})
	start := time.Unix(1700000000, 123)
	ctx, parent := tr.Start(trace.ContextWithRemoteSpanContext(context.Background(), remote), "tools/call x",
		trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(start))
	_, child := tr.Start(ctx, "claude.turn", trace.WithLinks(trace.Link{SpanContext: linked, Attributes: []attribute.KeyValue{attribute.String("l", "k")}}))
	child.SetAttributes(attribute.String("s", "ünïcode"), attribute.String("empty", ""), attribute.Int64("i", -7), attribute.Float64("f", 0.25),
		attribute.Bool("t", true), attribute.Bool("b", false), attribute.StringSlice("ss", []string{"x", "y"}), attribute.Int64Slice("is", []int64{1, 2}))
	child.AddEvent("e", trace.WithAttributes(attribute.Int("n", 3)))
	child.SetStatus(codes.Error, "it failed")
	child.End()
	parent.End(trace.WithTimestamp(start.Add(time.Second)))
	spans := exp.GetSpans().Snapshots() // before Shutdown, which empties the exporter
	_ = tp.Shutdown(context.Background())

	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(encodeTraces(spans), &req); err != nil {
		t.Fatal(err)
	}
	if len(req.ResourceSpans) != 1 || len(req.ResourceSpans[0].ScopeSpans) != 1 {
		t.Fatalf("%d resource spans", len(req.ResourceSpans))
	}
	rs := req.ResourceSpans[0]
	if kv := rs.Resource.Attributes; len(kv) != 1 || kv[0].Key != "service.name" || kv[0].Value.GetStringValue() != "svc" {
		t.Errorf("the resource: %v", kv)
	}
	ss := rs.ScopeSpans[0]
	if ss.Scope.Name != "scope" || ss.Scope.Version != "v1" || len(ss.Spans) != 2 {
		t.Fatalf("the scope: %v, %d spans", ss.Scope, len(ss.Spans))
	}
	got := map[string]*tracepb.Span{}
	for _, s := range ss.Spans {
		got[s.Name] = s
	}
	p, c := got["tools/call x"], got["claude.turn"]
	if p == nil || c == nil {
		t.Fatalf("spans %v", got)
	}
	if hex.EncodeToString(p.TraceId) != remote.TraceID().String() || hex.EncodeToString(p.ParentSpanId) != remote.SpanID().String() ||
		p.Kind != tracepb.Span_SPAN_KIND_SERVER || p.StartTimeUnixNano != uint64(start.UnixNano()) ||
		p.EndTimeUnixNano != uint64(start.Add(time.Second).UnixNano()) || p.TraceState != "a=1" || p.Flags != 0x301 {
		t.Errorf("the parent: %v", p)
	}
	if hex.EncodeToString(c.ParentSpanId) != hex.EncodeToString(p.SpanId) || c.Kind != tracepb.Span_SPAN_KIND_INTERNAL || c.Flags != 0x101 {
		t.Errorf("the child: parent %x kind %v flags %x", c.ParentSpanId, c.Kind, c.Flags)
	}
	attrs := map[string]string{}
	for _, kv := range c.Attributes {
		attrs[kv.Key] = kv.Value.String()
	}
	want := map[string]string{"s": `string_value:"ünïcode"`, "empty": `string_value:""`, "i": `int_value:-7`, "f": `double_value:0.25`,
		"t": `bool_value:true`, "b": `bool_value:false`, "ss": `array_value:{values:{string_value:"x"} values:{string_value:"y"}}`,
		"is": `array_value:{values:{int_value:1} values:{int_value:2}}`}
	for k, v := range want {
		if norm(attrs[k]) != norm(v) {
			t.Errorf("attribute %s = %s, want %s", k, attrs[k], v)
		}
	}
	if len(c.Events) != 1 || c.Events[0].Name != "e" || c.Events[0].Attributes[0].Value.GetIntValue() != 3 || c.Events[0].TimeUnixNano == 0 {
		t.Errorf("events %v", c.Events)
	}
	if len(c.Links) != 1 || hex.EncodeToString(c.Links[0].SpanId) != linked.SpanID().String() || c.Links[0].Attributes[0].Key != "l" {
		t.Errorf("links %v", c.Links)
	}
	if c.Status.Code != tracepb.Status_STATUS_CODE_ERROR || c.Status.Message != "it failed" || p.Status != nil {
		t.Errorf("statuses %v, %v", c.Status, p.Status)
	}
}

// norm drops the spaces protobuf's text form adds at random.
func norm(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != ' ' {
			out = append(out, s[i])
		}
	}
	return string(out)
}

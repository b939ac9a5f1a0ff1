// Package tracing is the server's OpenTelemetry tracing: set up from the
// standard OTEL_* environment (Setup), off unless it asks for traces, and
// the few calls the server's code makes — a span started (Start), a
// caller's W3C trace context taken from a request's _meta or its HTTP
// header (Extract), the context a CLI is started with (CLIEnv).
//
// With tracing off nothing is set up: no provider, no exporter, not even
// otel's global no-op; Start returns its context unchanged and a Span
// whose methods do nothing, without allocating (BenchmarkStartOff), so the
// code that calls it costs what it did before. It knows nothing of MCP or
// sessions: its importers name the spans and their attributes.
package tracing

import (
	"context"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// state is what Setup (or Install in tests) set: nil while tracing is off.
type state struct {
	tracer  trace.Tracer
	prompts bool // --trace-prompts: prompt text may go in spans
}

// cur is the tracing state. It is written before serving starts (Setup)
// or by a test (Install) before the code it traces runs, and read
// without a lock after.
var cur *state

// On reports whether tracing is on.
func On() bool { return cur != nil }

// Prompts reports whether the operator asked for prompt text in spans
// (--trace-prompts); never while tracing is off.
func Prompts() bool { return cur != nil && cur.prompts }

// Install makes tp the server's tracer provider (prompts: whether prompt
// text may go in spans) and returns what undoes it. Setup calls it; tests
// call it with an in-memory recorder (tracetest).
func Install(tp trace.TracerProvider, prompts bool) (restore func()) {
	old := cur
	cur = &state{tracer: tp.Tracer("github.com/claude-agent-mcp/claude-agent-mcp"), prompts: prompts}
	return func() { cur = old }
}

// Span is a span of the server, or nothing while tracing is off: its
// methods are then no-ops. A zero Span is off.
type Span struct{ s trace.Span }

// Start starts a span named name, a child of ctx's span. With tracing off
// it returns ctx itself and an off Span.
func Start(ctx context.Context, name string) (context.Context, Span) {
	if cur == nil {
		return ctx, Span{}
	}
	ctx, s := cur.tracer.Start(ctx, name)
	return ctx, Span{s}
}

// StartServer starts the span of a request the server answers (kind
// server), a child of ctx's span: the caller's, when Extract found one.
func StartServer(ctx context.Context, name string) (context.Context, Span) {
	if cur == nil {
		return ctx, Span{}
	}
	ctx, s := cur.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer))
	return ctx, Span{s}
}

// StartAt starts a span that began at start (a step known to have
// happened only once it is over, such as a warm spare taken).
func StartAt(ctx context.Context, name string, start time.Time) (context.Context, Span) {
	if cur == nil {
		return ctx, Span{}
	}
	ctx, s := cur.tracer.Start(ctx, name, trace.WithTimestamp(start))
	return ctx, Span{s}
}

// FromContext is ctx's span, to add attributes to; off when tracing is off
// or ctx has none of the server's.
func FromContext(ctx context.Context) Span {
	if cur == nil {
		return Span{}
	}
	s := trace.SpanFromContext(ctx)
	if !s.IsRecording() {
		return Span{}
	}
	return Span{s}
}

// Carry puts src's span into dst (a context that outlives src's
// cancellation: a run started by a call goes on after the call). With
// tracing off or no span in src it returns dst.
func Carry(dst, src context.Context) context.Context {
	if cur == nil {
		return dst
	}
	sc := trace.SpanContextFromContext(src)
	if !sc.IsValid() {
		return dst
	}
	return trace.ContextWithSpan(dst, trace.SpanFromContext(src))
}

// On reports whether s records (tracing on): attributes worth computing
// are computed only then.
func (s Span) On() bool { return s.s != nil }

// End ends s.
func (s Span) End() {
	if s.s != nil {
		s.s.End()
	}
}

// Str sets a string attribute.
func (s Span) Str(key, v string) {
	if s.s != nil {
		s.s.SetAttributes(attribute.String(key, v))
	}
}

// Int sets an integer attribute.
func (s Span) Int(key string, v int64) {
	if s.s != nil {
		s.s.SetAttributes(attribute.Int64(key, v))
	}
}

// Float sets a float attribute.
func (s Span) Float(key string, v float64) {
	if s.s != nil {
		s.s.SetAttributes(attribute.Float64(key, v))
	}
}

// Bool sets a boolean attribute.
func (s Span) Bool(key string, v bool) {
	if s.s != nil {
		s.s.SetAttributes(attribute.Bool(key, v))
	}
}

// Fail marks s as failed, with what went wrong.
func (s Span) Fail(why string) {
	if s.s != nil {
		s.s.SetStatus(codes.Error, why)
	}
}

// Link adds a link from s to the span of ctx (another trace's: the call
// that steered a turn); nothing when ctx has none.
func (s Span) Link(ctx context.Context) {
	if s.s == nil {
		return
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		s.s.AddLink(trace.Link{SpanContext: sc})
	}
}

// w3c is the W3C trace context propagator (traceparent, tracestate).
var w3c propagation.TraceContext

// Extract returns ctx continuing the caller's trace: the W3C trace context
// in a request's _meta (the keys "traceparent" and "tracestate", as MCP
// clients send it), else in its HTTP header (nil on stdio). ctx is
// returned as it is when tracing is off or neither carries a valid one.
func Extract(ctx context.Context, meta map[string]any, header http.Header) context.Context {
	if cur == nil {
		return ctx
	}
	if tp, ok := meta["traceparent"].(string); ok {
		c := propagation.MapCarrier{"traceparent": tp}
		if ts, ok := meta["tracestate"].(string); ok {
			c["tracestate"] = ts
		}
		if out := w3c.Extract(ctx, c); trace.SpanContextFromContext(out).IsValid() {
			return out
		}
	}
	if header != nil {
		return w3c.Extract(ctx, propagation.HeaderCarrier(header))
	}
	return ctx
}

// CLIEnv is the environment that makes a CLI continue ctx's trace:
// TRACEPARENT and TRACESTATE, read by the CLI when its own telemetry is
// on. Nil when tracing is off or ctx has no span.
func CLIEnv(ctx context.Context) map[string]string {
	if cur == nil || !trace.SpanContextFromContext(ctx).IsValid() {
		return nil
	}
	c := propagation.MapCarrier{}
	w3c.Inject(ctx, c)
	env := map[string]string{"TRACEPARENT": c["traceparent"]}
	if ts := c["tracestate"]; ts != "" {
		env["TRACESTATE"] = ts
	}
	return env
}

package tracing

import (
	"encoding/binary"
	"math"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The OTLP protobuf encoding of spans, written by hand: the field numbers
// of opentelemetry/proto/trace/v1/trace.proto and common/v1/common.proto.
// Not the generated types of go.opentelemetry.io/proto/otlp: with the
// protobuf runtime they cost 1.6 MB of the release binary and 0.8 MiB
// resident even with tracing off (their registries are built at start),
// for a message this simple (BENCHMARKS.md, "What tracing costs").
// TestEncodeMatchesOTLP and the end-to-end tests decode it with the
// generated types.

// wire is a protobuf message being written.
type wire []byte

func (w wire) tag(field, typ int) wire { return binary.AppendUvarint(w, uint64(field<<3|typ)) }

func (w wire) bytes(field int, b []byte) wire {
	w = binary.AppendUvarint(w.tag(field, 2), uint64(len(b)))
	return append(w, b...)
}

func (w wire) str(field int, s string) wire {
	if s == "" {
		return w
	}
	w = binary.AppendUvarint(w.tag(field, 2), uint64(len(s)))
	return append(w, s...)
}

func (w wire) varint(field int, v uint64) wire {
	if v == 0 {
		return w
	}
	return binary.AppendUvarint(w.tag(field, 0), v)
}

func (w wire) fixed64(field int, v uint64) wire {
	return binary.LittleEndian.AppendUint64(w.tag(field, 1), v)
}

func (w wire) fixed32(field int, v uint32) wire {
	return binary.LittleEndian.AppendUint32(w.tag(field, 5), v)
}

// encodeTraces is a TracesData (on the wire an
// ExportTraceServiceRequest: field 1, the resource spans) of spans, by
// resource and instrumentation scope.
func encodeTraces(spans []sdktrace.ReadOnlySpan) []byte {
	type scoped struct {
		scope instrumentation.Scope
		spans []sdktrace.ReadOnlySpan
	}
	type byResource struct {
		res    *resource.Resource
		scopes []*scoped
	}
	var groups []*byResource
	for _, s := range spans {
		var g *byResource
		for _, x := range groups {
			if x.res == s.Resource() {
				g = x
			}
		}
		if g == nil {
			g = &byResource{res: s.Resource()}
			groups = append(groups, g)
		}
		var sc *scoped
		for _, x := range g.scopes {
			if x.scope == s.InstrumentationScope() {
				sc = x
			}
		}
		if sc == nil {
			sc = &scoped{scope: s.InstrumentationScope()}
			g.scopes = append(g.scopes, sc)
		}
		sc.spans = append(sc.spans, s)
	}
	var out wire
	for _, g := range groups {
		var rs wire
		var res wire
		if g.res != nil {
			for _, kv := range g.res.Attributes() {
				res = res.bytes(1, keyValue(kv))
			}
		}
		rs = rs.bytes(1, res)
		for _, sc := range g.scopes {
			var ss wire
			ss = ss.bytes(1, wire(nil).str(1, sc.scope.Name).str(2, sc.scope.Version))
			for _, s := range sc.spans {
				ss = ss.bytes(2, encodeSpan(s))
			}
			ss = ss.str(3, sc.scope.SchemaURL)
			rs = rs.bytes(2, ss)
		}
		if g.res != nil {
			rs = rs.str(3, g.res.SchemaURL())
		}
		out = out.bytes(1, rs)
	}
	return out
}

// encodeSpan is a Span message.
func encodeSpan(s sdktrace.ReadOnlySpan) wire {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	var w wire
	w = w.bytes(1, tid[:]).bytes(2, sid[:]).str(3, sc.TraceState().String())
	if p := s.Parent(); p.IsValid() {
		psid := p.SpanID()
		w = w.bytes(4, psid[:])
	}
	w = w.str(5, s.Name()).varint(6, uint64(s.SpanKind()))
	w = w.fixed64(7, uint64(s.StartTime().UnixNano())).fixed64(8, uint64(s.EndTime().UnixNano()))
	for _, kv := range s.Attributes() {
		w = w.bytes(9, keyValue(kv))
	}
	w = w.varint(10, uint64(s.DroppedAttributes()))
	for _, e := range s.Events() {
		ew := wire(nil).fixed64(1, uint64(e.Time.UnixNano())).str(2, e.Name)
		for _, kv := range e.Attributes {
			ew = ew.bytes(3, keyValue(kv))
		}
		w = w.bytes(11, ew)
	}
	w = w.varint(12, uint64(s.DroppedEvents()))
	for _, l := range s.Links() {
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		lw := wire(nil).bytes(1, ltid[:]).bytes(2, lsid[:]).str(3, l.SpanContext.TraceState().String())
		for _, kv := range l.Attributes {
			lw = lw.bytes(4, keyValue(kv))
		}
		lw = lw.fixed32(6, uint32(l.SpanContext.TraceFlags())|0x100) // the flags are known (bit 8)
		w = w.bytes(13, lw)
	}
	w = w.varint(14, uint64(s.DroppedLinks()))
	var code uint64 // OTLP: 0 unset, 1 ok, 2 error
	switch s.Status().Code {
	case codes.Ok:
		code = 1
	case codes.Error:
		code = 2
	}
	if st := wire(nil).str(2, s.Status().Description).varint(3, code); len(st) > 0 {
		w = w.bytes(15, st)
	}
	flags := uint32(sc.TraceFlags()) | 0x100 // has_is_remote: the parent's remoteness is known
	if s.Parent().IsRemote() {
		flags |= 0x200
	}
	return w.fixed32(16, flags)
}

// keyValue is a KeyValue message.
func keyValue(kv attribute.KeyValue) wire {
	return wire(nil).str(1, string(kv.Key)).bytes(2, anyValue(kv.Value))
}

// anyValue is an AnyValue message.
func anyValue(v attribute.Value) wire {
	var w wire
	switch v.Type() {
	case attribute.BOOL:
		w = w.tag(2, 0)
		if v.AsBool() {
			return append(w, 1)
		}
		return append(w, 0)
	case attribute.INT64:
		return binary.AppendUvarint(w.tag(3, 0), uint64(v.AsInt64()))
	case attribute.FLOAT64:
		return w.fixed64(4, math.Float64bits(v.AsFloat64()))
	case attribute.STRING:
		return w.bytes(1, []byte(v.AsString()))
	case attribute.BOOLSLICE, attribute.INT64SLICE, attribute.FLOAT64SLICE, attribute.STRINGSLICE:
		var arr wire
		switch v.Type() {
		case attribute.BOOLSLICE:
			for _, b := range v.AsBoolSlice() {
				arr = arr.bytes(1, anyValue(attribute.BoolValue(b)))
			}
		case attribute.INT64SLICE:
			for _, n := range v.AsInt64Slice() {
				arr = arr.bytes(1, anyValue(attribute.Int64Value(n)))
			}
		case attribute.FLOAT64SLICE:
			for _, f := range v.AsFloat64Slice() {
				arr = arr.bytes(1, anyValue(attribute.Float64Value(f)))
			}
		default:
			for _, s := range v.AsStringSlice() {
				arr = arr.bytes(1, anyValue(attribute.StringValue(s)))
			}
		}
		return w.bytes(5, arr)
	}
	return w.bytes(1, []byte(v.String())) // a type of a later SDK: its text
}

package otlphttp

// The protobuf encoding of an OTLP ExportTraceServiceRequest, written
// field by field with the field numbers of opentelemetry-proto
// (opentelemetry/proto/collector/trace/v1/trace_service.proto,
// trace/v1/trace.proto, common/v1/common.proto,
// resource/v1/resource.proto). The generated Go types would register
// their descriptors at init in every process, and protowire links
// protobuf's detrand, whose init hashes the executable; the wire format
// itself is varints, little-endian fixed64/32 and length-prefixed bytes,
// which encoding/binary writes. The fields are those the OpenTelemetry
// exporter (otlptrace's tracetransform) sends; the tests decode the
// result with the generated types and compare it with that exporter's.

import (
	"encoding/binary"
	"errors"
	"math"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Wire types (protobuf encoding, "Message Structure").
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

// Span flags (trace.proto SpanFlags): the low byte is the W3C trace
// flags; these say whether the parent (or linked) context is remote.
const (
	flagHasIsRemote = 0x100
	flagIsRemote    = 0x200
)

// Enum values of trace.proto's Span.SpanKind and Status.StatusCode.
const (
	kindInternal = 1
	kindServer   = 2
	kindClient   = 3
	kindProducer = 4
	kindConsumer = 5

	statusOK    = 1
	statusError = 2
)

// appendRequest appends spans as an ExportTraceServiceRequest: one
// ResourceSpans per resource, one ScopeSpans per instrumentation scope
// in it, in the order they first appear.
func appendRequest(b []byte, spans []sdktrace.ReadOnlySpan) []byte {
	type scopeKey struct {
		res   attribute.Distinct
		scope instrumentation.Scope
	}
	type group struct {
		res    *resource.Resource
		scopes []instrumentation.Scope
		spans  map[instrumentation.Scope][]sdktrace.ReadOnlySpan
	}
	var order []attribute.Distinct
	groups := map[attribute.Distinct]*group{}
	for _, s := range spans {
		if s == nil {
			continue
		}
		k := scopeKey{s.Resource().Equivalent(), s.InstrumentationScope()}
		g := groups[k.res]
		if g == nil {
			g = &group{res: s.Resource(), spans: map[instrumentation.Scope][]sdktrace.ReadOnlySpan{}}
			groups[k.res] = g
			order = append(order, k.res)
		}
		if _, ok := g.spans[k.scope]; !ok {
			g.scopes = append(g.scopes, k.scope)
		}
		g.spans[k.scope] = append(g.spans[k.scope], s)
	}
	for _, k := range order {
		g := groups[k]
		b = appendMessage(b, 1, func(b []byte) []byte { // resource_spans
			if g.res != nil {
				b = appendMessage(b, 1, func(b []byte) []byte { // resource
					for it := g.res.Iter(); it.Next(); {
						b = appendKeyValue(b, 1, it.Attribute())
					}
					return b
				})
			}
			for _, sc := range g.scopes {
				b = appendMessage(b, 2, func(b []byte) []byte { // scope_spans
					if sc != (instrumentation.Scope{}) {
						b = appendMessage(b, 1, func(b []byte) []byte { // scope
							b = appendLenField(b, 1, sc.Name)
							b = appendLenField(b, 2, sc.Version)
							for it := sc.Attributes.Iter(); it.Next(); {
								b = appendKeyValue(b, 3, it.Attribute())
							}
							return b
						})
					}
					for _, s := range g.spans[sc] {
						b = appendMessage(b, 2, func(b []byte) []byte { return appendSpan(b, s) })
					}
					return appendLenField(b, 3, sc.SchemaURL)
				})
			}
			if g.res != nil {
				b = appendLenField(b, 3, g.res.SchemaURL())
			}
			return b
		})
	}
	return b
}

// appendSpan appends the fields of trace.proto's Span.
func appendSpan(b []byte, s sdktrace.ReadOnlySpan) []byte {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	b = appendLenField(b, 1, tid[:])
	b = appendLenField(b, 2, sid[:])
	b = appendLenField(b, 3, sc.TraceState().String())
	parent := s.Parent()
	if psid := parent.SpanID(); psid.IsValid() {
		b = appendLenField(b, 4, psid[:])
	}
	b = appendLenField(b, 5, s.Name())
	b = appendUvarint(b, 6, spanKind(s.SpanKind()))
	b = appendFixed64(b, 7, unixNano(s.StartTime().UnixNano()))
	b = appendFixed64(b, 8, unixNano(s.EndTime().UnixNano()))
	for _, kv := range s.Attributes() {
		b = appendKeyValue(b, 9, kv)
	}
	b = appendUvarint(b, 10, count(s.DroppedAttributes()))
	for _, e := range s.Events() {
		b = appendMessage(b, 11, func(b []byte) []byte {
			b = appendFixed64(b, 1, unixNano(e.Time.UnixNano()))
			b = appendLenField(b, 2, e.Name)
			for _, kv := range e.Attributes {
				b = appendKeyValue(b, 3, kv)
			}
			return appendUvarint(b, 4, count(e.DroppedAttributeCount))
		})
	}
	b = appendUvarint(b, 12, count(s.DroppedEvents()))
	for _, l := range s.Links() {
		b = appendMessage(b, 13, func(b []byte) []byte {
			tid, sid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
			b = appendLenField(b, 1, tid[:])
			b = appendLenField(b, 2, sid[:])
			for _, kv := range l.Attributes {
				b = appendKeyValue(b, 4, kv)
			}
			b = appendUvarint(b, 5, count(l.DroppedAttributeCount))
			return appendFixed32(b, 6, flags(l.SpanContext.TraceFlags(), l.SpanContext))
		})
	}
	b = appendUvarint(b, 14, count(s.DroppedLinks()))
	st := s.Status()
	b = appendMessage(b, 15, func(b []byte) []byte { // always sent, as the exporter does
		b = appendLenField(b, 2, st.Description)
		return appendUvarint(b, 3, statusCode(st.Code))
	})
	return appendFixed32(b, 16, flags(sc.TraceFlags(), parent))
}

// appendKeyValue appends common.proto's KeyValue as field.
func appendKeyValue(b []byte, field int, kv attribute.KeyValue) []byte {
	return appendMessage(b, field, func(b []byte) []byte {
		b = appendLenField(b, 1, string(kv.Key))
		return appendMessage(b, 2, func(b []byte) []byte { return appendAnyValue(b, kv.Value) })
	})
}

// appendAnyValue appends the fields of common.proto's AnyValue: a oneof,
// so a zero value is still written.
func appendAnyValue(b []byte, v attribute.Value) []byte {
	switch v.Type() {
	case attribute.BOOL:
		n := uint64(0)
		if v.AsBool() {
			n = 1
		}
		return binary.AppendUvarint(appendTag(b, 2, wireVarint), n)
	case attribute.INT64:
		return binary.AppendUvarint(appendTag(b, 3, wireVarint), uint64(v.AsInt64()))
	case attribute.FLOAT64:
		return binary.LittleEndian.AppendUint64(appendTag(b, 4, wireFixed64), math.Float64bits(v.AsFloat64()))
	case attribute.STRING:
		return appendLen(appendTag(b, 1, wireBytes), v.AsString())
	case attribute.BYTESLICE:
		return appendLen(appendTag(b, 7, wireBytes), v.AsByteSlice())
	case attribute.BOOLSLICE:
		return appendArray(b, v.AsBoolSlice(), attribute.BoolValue)
	case attribute.INT64SLICE:
		return appendArray(b, v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		return appendArray(b, v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		return appendArray(b, v.AsStringSlice(), attribute.StringValue)
	case attribute.SLICE:
		return appendArray(b, v.AsSlice(), func(v attribute.Value) attribute.Value { return v })
	case attribute.MAP:
		return appendMessage(b, 6, func(b []byte) []byte { // kvlist_value
			for _, kv := range v.AsMap() {
				b = appendKeyValue(b, 1, kv)
			}
			return b
		})
	case attribute.EMPTY:
		return b
	}
	return appendLen(appendTag(b, 1, wireBytes), "INVALID")
}

// appendArray appends an AnyValue's array_value of vs.
func appendArray[T any](b []byte, vs []T, value func(T) attribute.Value) []byte {
	return appendMessage(b, 5, func(b []byte) []byte {
		for _, v := range vs {
			b = appendMessage(b, 1, func(b []byte) []byte { return appendAnyValue(b, value(v)) })
		}
		return b
	})
}

func spanKind(k trace.SpanKind) uint64 {
	switch k {
	case trace.SpanKindInternal:
		return kindInternal
	case trace.SpanKindServer:
		return kindServer
	case trace.SpanKindClient:
		return kindClient
	case trace.SpanKindProducer:
		return kindProducer
	case trace.SpanKindConsumer:
		return kindConsumer
	}
	return 0
}

func statusCode(c codes.Code) uint64 {
	switch c {
	case codes.Ok:
		return statusOK
	case codes.Error:
		return statusError
	}
	return 0
}

func flags(tf trace.TraceFlags, parent trace.SpanContext) uint32 {
	f := uint32(tf) | flagHasIsRemote
	if parent.IsRemote() {
		f |= flagIsRemote
	}
	return f
}

// unixNano is a time as the proto's fixed64: before 1970 is 0.
func unixNano(n int64) uint64 { return uint64(max(n, 0)) }

// count is a dropped count as the proto's uint32, clamped.
func count(n int) uint64 { return uint64(min(max(n, 0), math.MaxUint32)) }

func appendTag(b []byte, field int, wire uint64) []byte {
	return binary.AppendUvarint(b, uint64(field)<<3|wire)
}

// appendUvarint appends a varint field; zero, the default, is left out.
func appendUvarint(b []byte, field int, v uint64) []byte {
	if v == 0 {
		return b
	}
	return binary.AppendUvarint(appendTag(b, field, wireVarint), v)
}

func appendFixed64(b []byte, field int, v uint64) []byte {
	if v == 0 {
		return b
	}
	return binary.LittleEndian.AppendUint64(appendTag(b, field, wireFixed64), v)
}

func appendFixed32(b []byte, field int, v uint32) []byte {
	if v == 0 {
		return b
	}
	return binary.LittleEndian.AppendUint32(appendTag(b, field, wireFixed32), v)
}

// appendLenField appends a string or bytes field; empty, the default,
// is left out.
func appendLenField[T string | []byte](b []byte, field int, v T) []byte {
	if len(v) == 0 {
		return b
	}
	return appendLen(appendTag(b, field, wireBytes), v)
}

func appendLen[T string | []byte](b []byte, v T) []byte {
	return append(binary.AppendUvarint(b, uint64(len(v))), v...)
}

// appendMessage appends an embedded message as field, its fields written
// by enc straight into b: a length of one byte is reserved before them
// and widened, moving them, when they come to 128 bytes or more.
func appendMessage(b []byte, field int, enc func([]byte) []byte) []byte {
	b = append(appendTag(b, field, wireBytes), 0)
	start := len(b)
	b = enc(b)
	n := len(b) - start
	if n < 0x80 {
		b[start-1] = byte(n)
		return b
	}
	var l [binary.MaxVarintLen64]byte
	ln := binary.PutUvarint(l[:], uint64(n))
	b = append(b, l[1:ln]...) // room for the wider length
	copy(b[start-1+ln:], b[start:start+n])
	copy(b[start-1:], l[:ln])
	return b
}

// errTruncated is returned for a response that ends inside a field.
var errTruncated = errors.New("otlphttp: truncated protobuf response")

// partialSuccess reads an ExportTraceServiceResponse's partial_success
// (field 1: rejected_spans 1, error_message 2), skipping other fields.
func partialSuccess(b []byte) (rejected int64, msg string, err error) {
	err = fields(b, func(field int, v uint64, p []byte) error {
		if field != 1 || p == nil {
			return nil
		}
		return fields(p, func(field int, v uint64, p []byte) error {
			switch {
			case field == 1 && p == nil:
				rejected = int64(v)
			case field == 2 && p != nil:
				msg = string(p)
			}
			return nil
		})
	})
	return rejected, msg, err
}

// fields calls f with each field of message b: a varint's value, or a
// length-delimited field's bytes (non-nil); fixed-width fields are
// skipped.
func fields(b []byte, f func(field int, v uint64, p []byte) error) error {
	for len(b) > 0 {
		tag, n := binary.Uvarint(b)
		if n <= 0 {
			return errTruncated
		}
		b = b[n:]
		field := int(tag >> 3)
		var v uint64
		var p []byte
		switch tag & 7 {
		case wireVarint:
			if v, n = binary.Uvarint(b); n <= 0 {
				return errTruncated
			}
			b = b[n:]
		case wireFixed64, wireFixed32:
			w := 8
			if tag&7 == wireFixed32 {
				w = 4
			}
			if len(b) < w {
				return errTruncated
			}
			b = b[w:]
			continue
		case wireBytes:
			l, n := binary.Uvarint(b)
			if n <= 0 || uint64(len(b)-n) < l {
				return errTruncated
			}
			p, b = b[n:n+int(l)], b[n+int(l):]
			if p == nil {
				p = []byte{}
			}
		default:
			return errors.New("otlphttp: unsupported protobuf wire type in response")
		}
		if err := f(field, v, p); err != nil {
			return err
		}
	}
	return nil
}

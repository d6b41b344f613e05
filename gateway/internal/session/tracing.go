package session

// OpenTelemetry traces of tools/call: a span per call, a child
// per engine step (engine.StepTracer), continuing the W3C trace context
// of the request's _meta.traceparent or its HTTP traceparent header, and
// passing the call's own upstream in the request's _meta. The gateway
// uses the OpenTelemetry API only; the host picks the provider
// (gateway.Options.TracerProvider) and its exporter.

import (
	"context"
	"net/http"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway/internal/router"
)

// TracerName is the instrumentation scope of the gateway's spans.
const TracerName = "github.com/mcpx-dev/mcpx/gateway"

// traceContext is the W3C Trace Context propagator.
var traceContext = propagation.TraceContext{}

// headerTraceKey marks a context whose remote span came from an HTTP
// traceparent header.
type headerTraceKey struct{}

// WithHeaderTrace returns ctx carrying the trace context of h's
// traceparent (and tracestate) header.
func WithHeaderTrace(ctx context.Context, h http.Header) context.Context {
	ctx = traceContext.Extract(ctx, propagation.HeaderCarrier(h))
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ctx
	}
	return context.WithValue(ctx, headerTraceKey{}, true)
}

// hasHeaderTrace reports whether ctx carries an HTTP header's trace
// context.
func hasHeaderTrace(ctx context.Context) bool { return ctx.Value(headerTraceKey{}) != nil }

// metaCarrier reads the trace context of a request's _meta.
type metaCarrier struct{ meta gjson.Result }

func (m metaCarrier) Get(key string) string {
	if v := m.meta.Get(key); v.Type == gjson.String {
		return v.Str
	}
	return ""
}
func (metaCarrier) Set(string, string) {}
func (metaCarrier) Keys() []string     { return []string{"traceparent", "tracestate"} }

// startCallSpan starts t's span of a tools/call: a child of the
// request's _meta.traceparent when it has one, else of ctx's (the HTTP
// header's), else a root.
func startCallSpan(t trace.Tracer, ctx context.Context, r *router.Route, meta gjson.Result) (context.Context, trace.Span) {
	if meta.Get("traceparent").Exists() {
		ctx = traceContext.Extract(ctx, metaCarrier{meta})
	}
	return t.Start(ctx, "tools/call "+r.Tool, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
		attribute.String("mcp.method.name", "tools/call"),
		attribute.String("gen_ai.tool.name", r.Tool),
		attribute.String("mcpx.server", r.Server()),
	))
}

// traceHeaders returns sc as W3C traceparent and tracestate values; ""
// for an invalid one.
func traceHeaders(sc trace.SpanContext) (traceparent, tracestate string) {
	if !sc.IsValid() {
		return "", ""
	}
	c := propagation.MapCarrier{}
	traceContext.Inject(trace.ContextWithSpanContext(context.Background(), sc), c)
	return c["traceparent"], c["tracestate"]
}

// setMetaString sets params' _meta[key] to v.
func setMetaString(params []byte, key, v string) ([]byte, error) {
	return sjson.SetBytes(params, "_meta."+key, v)
}

// keptOutAttributes are a call span's attributes of what the engine did.
func keptOutAttributes(res *engine.Result) []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.Int("mcpx.artifacts", len(res.Artifacts)),
		attribute.Int("mcpx.kept_out.bytes", res.KeptOutBytes),
		attribute.Int("mcpx.kept_out.tokens", res.KeptOutTokens),
		attribute.Bool("mcpx.clamped", res.Clamped),
	}
}

// StepTracer makes a span of each engine step with t, a child of the
// call's.
func StepTracer(t trace.Tracer) engine.StepTracer { return stepTracer{t} }

// stepTracer makes a span of each engine step, a child of the call's.
type stepTracer struct{ t trace.Tracer }

func (st stepTracer) StartStep(ctx context.Context, c *engine.Call, step string) (context.Context, engine.StepSpan) {
	ctx, span := st.t.Start(ctx, "layer "+step, trace.WithAttributes(
		attribute.String("mcpx.layer", step),
		attribute.String("mcpx.server", c.Server),
		attribute.String("gen_ai.tool.name", c.Tool),
	))
	return ctx, stepSpan{span}
}

type stepSpan struct{ span trace.Span }

func (s stepSpan) End(r engine.StepReport) {
	s.span.SetAttributes(
		attribute.Int("mcpx.rewrites", r.Rewrites),
		attribute.Int("mcpx.artifacts", r.Artifacts),
		attribute.Bool("mcpx.changed", r.Changed),
		attribute.Int("mcpx.failures", r.Failures),
	)
	if r.Err != nil {
		s.span.RecordError(r.Err)
		s.span.SetStatus(codes.Error, r.Err.Error())
	}
	s.span.End()
}

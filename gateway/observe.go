package gateway

// What the gateway tells an observer (metrics) of each tools/call, and
// the span it makes of one when tracing is on (tracing.go). With neither
// a call takes the plain path: no clock read, no allocation.

import (
	"context"
	"encoding/json"
	"time"

	"github.com/tidwall/gjson"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway/observe"
	"github.com/mcpx-dev/mcpx/store"
)

// ownServer names the gateway's own tools (artifacts_query, …) in
// observations and spans.
const ownServer = "mcpx"

func (r *toolRoute) serverName() string {
	if r.up == nil {
		return ownServer
	}
	return r.up.Name
}

// callOutcome carries what an observed call needs from forwardCall: the
// trace context to send upstream, and the engine's result.
type callOutcome struct {
	traceparent, tracestate string
	res                     *engine.Result
	scope                   store.Scope
}

// propagate sets the upstream request's _meta.traceparent (and
// tracestate) to the call's trace context, when there is one.
func (oc *callOutcome) propagate(up []byte) ([]byte, error) {
	if oc.traceparent == "" {
		return up, nil
	}
	var err error
	if up, err = setMetaString(up, "traceparent", oc.traceparent); err != nil || oc.tracestate == "" {
		return up, err
	}
	return setMetaString(up, "tracestate", oc.tracestate)
}

// observedCall is forwardCall timed for the observer and traced as a
// span (a child of the request's traceparent) whose context goes
// upstream.
func (s *session) observedCall(ctx context.Context, r *toolRoute, name string, params json.RawMessage, meta gjson.Result, related func([]byte)) (json.RawMessage, error) {
	g := s.g
	oc := &callOutcome{}
	var span trace.Span
	if g.tracer != nil {
		ctx, span = g.startCallSpan(ctx, r, meta)
		oc.traceparent, oc.tracestate = traceHeaders(span.SpanContext())
	} else if !meta.Get("traceparent").Exists() {
		// not tracing: the HTTP header's trace context goes on as is
		oc.traceparent, oc.tracestate = traceHeaders(trace.SpanContextFromContext(ctx))
	}
	start := time.Now()
	out, err := s.forwardCall(ctx, r, name, params, meta, related, oc)
	d := time.Since(start)
	toolErr := err == nil && gjson.GetBytes(out, "isError").Bool()
	if g.observer != nil {
		g.observer.ObserveCall(observe.Call{Server: r.serverName(), Tool: r.tool, Scope: oc.scope, Duration: d, Result: oc.res, Err: err, ToolError: toolErr})
	}
	if span != nil {
		endCallSpan(span, oc.res, err, toolErr)
	}
	return out, err
}

func endCallSpan(span trace.Span, res *engine.Result, err error, toolErr bool) {
	switch {
	case err != nil:
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	case toolErr:
		span.SetStatus(codes.Error, "tool error")
	}
	if res != nil {
		span.SetAttributes(keptOutAttributes(res)...)
	}
	span.End()
}

package session

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
	"github.com/mcpx-dev/mcpx/gateway/internal/router"
	"github.com/mcpx-dev/mcpx/observe"
	"github.com/mcpx-dev/mcpx/store"
)

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
func (s *Session) observedCall(ctx context.Context, r *router.Route, name string, params json.RawMessage, meta gjson.Result, related func([]byte)) (json.RawMessage, error) {
	ctx, ob := s.observe(ctx, r, meta)
	out, err := s.forwardCall(ctx, r, name, params, meta, related, ob.oc)
	ob.end(out, err)
	return out, err
}

// observation is an observed tools/call in flight.
type observation struct {
	s     *Session
	r     *router.Route
	oc    *callOutcome
	span  trace.Span // nil: not tracing
	start time.Time
}

// observe starts timing (and tracing) a call to r.
func (s *Session) observe(ctx context.Context, r *router.Route, meta gjson.Result) (context.Context, *observation) {
	g := s.rooms
	ob := &observation{s: s, r: r, oc: &callOutcome{}}
	if g.Tracer != nil {
		ctx, ob.span = startCallSpan(g.Tracer, ctx, r, meta)
		ob.oc.traceparent, ob.oc.tracestate = traceHeaders(ob.span.SpanContext())
	} else if !meta.Get("traceparent").Exists() {
		// not tracing: the HTTP header's trace context goes on as is
		ob.oc.traceparent, ob.oc.tracestate = traceHeaders(trace.SpanContextFromContext(ctx))
	}
	ob.start = time.Now()
	return ctx, ob
}

// end tells the observer (and the span) how the call ended.
func (ob *observation) end(out json.RawMessage, err error) {
	g, oc := ob.s.rooms, ob.oc
	d := time.Since(ob.start)
	toolErr := err == nil && gjson.GetBytes(out, "isError").Bool()
	if g.Observer != nil {
		g.Observer.ObserveCall(observe.Call{Server: ob.r.Server(), Tool: ob.r.Tool, Scope: oc.scope, Duration: d, Result: oc.res, Err: err, ToolError: toolErr})
	}
	if ob.span != nil {
		endCallSpan(ob.span, oc.res, err, toolErr)
	}
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

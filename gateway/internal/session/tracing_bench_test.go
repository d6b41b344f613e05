package session

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/tidwall/gjson"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway/internal/router"
	_ "github.com/mcpx-dev/mcpx/layers" // the engine's default chain
	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

// BenchmarkCallTracing is the engine's work on a small result as a call
// has it: untraced (gateway.Options.TracerProvider nil: no span, no allocation)
// and traced by an SDK provider without an exporter (the call's span, a
// span per step, the upstream traceparent), recorded and dropped.
func BenchmarkCallTracing(b *testing.B) {
	raw := json.RawMessage(`{"content":[{"type":"text","text":"{\"v\":\"small\"}","annotations":{"audience":["user"]}}],"structuredContent":{"v":"small"},"_meta":{"k":"v"}}`)
	call := engine.Call{Server: "stub", Tool: "echo", Arguments: json.RawMessage(`{"v":"small"}`), Scope: store.Scope{SessionID: "s"}}
	route := &router.Route{Tool: "echo"}
	for _, traced := range []bool{false, true} {
		name := "off"
		if traced {
			name = "sdk-no-exporter"
		}
		b.Run(name, func(b *testing.B) {
			var (
				tracer trace.Tracer
				eo     = engine.Options{Store: memstore.New(memstore.Config{})}
			)
			if traced {
				tp := sdktrace.NewTracerProvider()
				defer tp.Shutdown(context.Background())
				tracer = tp.Tracer(TracerName)
				eo.Tracer = stepTracer{tracer}
			}
			eng, err := engine.New(eo)
			if err != nil {
				b.Fatal(err)
			}
			defer eng.Close(context.Background())
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				cctx := ctx
				var span trace.Span
				if tracer != nil {
					cctx, span = startCallSpan(tracer, ctx, route, gjson.Result{})
					oc := callOutcome{}
					oc.traceparent, oc.tracestate = traceHeaders(span.SpanContext())
					if _, err := oc.propagate([]byte(`{"name":"echo","arguments":{"v":"small"}}`)); err != nil {
						b.Fatal(err)
					}
				}
				res, err := eng.Transform(cctx, call, raw)
				if err != nil {
					b.Fatal(err)
				}
				if span != nil {
					endCallSpan(span, res, nil, false)
				}
			}
		})
	}
}

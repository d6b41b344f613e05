package telemetry_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway"
	"github.com/mcpx-dev/mcpx/observe"
	"github.com/mcpx-dev/mcpx/telemetry"
	"github.com/mcpx-dev/mcpx/telemetry/promtext"
)

// BenchmarkObserveCall is what metrics add to one call: the observer and
// an engine event.
func BenchmarkObserveCall(b *testing.B) {
	m, err := telemetry.NewMetrics(promtext.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	res := &engine.Result{KeptOutBytes: 40000, KeptOutTokens: 12000}
	ev := engine.Event{Type: engine.EventArtifactStored, Server: "up", Tool: "pic", Artifact: &engine.ArtifactRef{SizeBytes: 40000}}
	failed := errors.New("x")
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		var err error
		if i%10 == 0 {
			err = failed
		}
		m.ObserveCall(observe.Call{Server: "up", Tool: "pic", Duration: time.Millisecond, Result: res, Err: err})
		m.OnEvent(ev)
		i++
	}
}

// BenchmarkGatewayCall is one small tools/call through the gateway (HTTP
// in, an in-process HTTP upstream, the test chain) without observation,
// with metrics, with metrics and tracing without an exporter (spans
// recorded and dropped), to compare per call.
func BenchmarkGatewayCall(b *testing.B) {
	for _, mode := range []string{"off", "metrics", "metrics+tracing-no-exporter"} {
		b.Run(mode, func(b *testing.B) {
			var o gateway.Options
			if mode != "off" {
				m, err := telemetry.NewMetrics(promtext.NewRegistry())
				if err != nil {
					b.Fatal(err)
				}
				o.Observer, o.Engine.Listener = m, m
			}
			if mode == "metrics+tracing-no-exporter" {
				tp := sdktrace.NewTracerProvider()
				defer tp.Shutdown(b.Context())
				o.TracerProvider = tp
			}
			call := mcpSession(b, newGateway(b, &upstream{}, o))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				r := call(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"small","arguments":{}}}`, 100+i), nil)
				if r.Get("error").Exists() {
					b.Fatal(r.Raw)
				}
				i++
			}
		})
	}
}

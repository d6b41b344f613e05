package cli

// The observability of "mcpx serve": Prometheus metrics on a
// registry of this process's own (GET /metrics with --listen), and
// OpenTelemetry traces when serve.telemetry or OTEL_EXPORTER_OTLP_ENDPOINT
// names a collector.

import (
	"context"
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/mcpx-dev/mcpx/cmd/mcpx/internal/cli/config"
	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway"
	"github.com/mcpx-dev/mcpx/observe"
	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/telemetry"
	"github.com/mcpx-dev/mcpx/telemetry/promtext"
	"github.com/mcpx-dev/mcpx/web"
)

// traceFlushTimeout bounds the flush of buffered spans at exit.
const traceFlushTimeout = 5 * time.Second

// observability is what serve measures and traces, and where it goes.
type observability struct {
	reg     *promtext.Registry // nil, as metrics: stdio only, no /metrics to read them
	metrics *telemetry.Metrics
	tp      *sdktrace.TracerProvider // nil: tracing off
	bus     *web.EventBus            // nil: stdio, no HTTP API
	log     hclog.Logger
}

// newObservability makes the metrics (with a listener's event bus) and
// the tracer of cfg.Serve.Telemetry.
func newObservability(ctx context.Context, cfg config.File, bus *web.EventBus, log hclog.Logger) (*observability, error) {
	o := &observability{bus: bus, log: log}
	// Metrics are read at GET /metrics, which only a listener serves:
	// without one (mcpx wrap, serve on stdio) no call pays for them.
	if bus != nil {
		o.reg = promtext.NewRegistry()
		o.reg.Collect(promtext.WriteRuntime)
		m, err := telemetry.NewMetrics(o.reg)
		if err != nil {
			return nil, err
		}
		o.metrics = m
	}
	var err error
	if o.tp, err = telemetry.NewTracerProvider(ctx, cfg.Serve.Telemetry); err != nil {
		return nil, err
	}
	if o.tp != nil {
		log.Info("tracing tools/call to OTLP", "endpoint", cfg.Serve.Telemetry.OTLPEndpoint)
	}
	return o, nil
}

// Listener is the engine's: the metrics, and the API's event bus.
func (o *observability) Listener() engine.Listener {
	if o.bus == nil {
		return nil
	}
	return engine.ListenerFunc(func(ev engine.Event) {
		o.metrics.OnEvent(ev)
		o.bus.OnEvent(ev)
	})
}

// Configure sets the gateway's observer, tracer and resource updates.
func (o *observability) Configure(gwo *gateway.Options) {
	if o.bus != nil {
		// The UI shows what each call kept out of the context.
		bus := o.bus
		gwo.Observer = callObservers{o.metrics, rewrittenOn{bus}}
	}
	if o.tp != nil {
		gwo.TracerProvider = o.tp
	}
	if o.bus != nil {
		bus := o.bus
		gwo.OnResourceUpdated = func(u observe.ResourceUpdate) {
			bus.Publish(web.Event{Type: web.EventResourceUpdated, Server: u.Server, URI: u.URI, Scope: u.Scope})
		}
	}
}

// Watch reports gw's upstreams at each scrape.
func (o *observability) Watch(gw *gateway.Gateway) {
	if o.reg == nil {
		return
	}
	telemetry.WatchUpstreams(o.reg, func() []telemetry.UpstreamState {
		st := gw.Status()
		out := make([]telemetry.UpstreamState, len(st))
		for i, s := range st {
			out[i] = telemetry.UpstreamState{Name: s.Name, Ready: s.State == "ready", Restarts: s.Restarts}
		}
		return out
	})
}

// Evicted counts the collector's removals and publishes them.
func (o *observability) Evicted() func(store.Removal) {
	return func(r store.Removal) {
		if o.bus != nil {
			o.metrics.Evicted(r)
			o.bus.Evicted(r)
		}
	}
}

// Handler serves the registry in Prometheus text.
func (o *observability) Handler() http.Handler { return o.reg }

// Shutdown flushes buffered spans.
func (o *observability) Shutdown() {
	if o.tp == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), traceFlushTimeout)
	defer cancel()
	if err := o.tp.Shutdown(ctx); err != nil {
		o.log.Warn("flushing traces", "error", err)
	}
}

// callObservers tells each observer of a call in turn.
type callObservers []observe.Observer

func (os callObservers) ObserveCall(c observe.Call) {
	for _, o := range os {
		o.ObserveCall(c)
	}
}

// rewrittenOn publishes each call's rewritten result on the API's event
// bus (result_rewritten: what it kept out, its artifacts).
type rewrittenOn struct{ bus *web.EventBus }

func (r rewrittenOn) ObserveCall(c observe.Call) {
	r.bus.ResultRewritten(engine.Call{Server: c.Server, Tool: c.Tool, Scope: c.Scope}, c.Result)
}

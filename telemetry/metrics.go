package telemetry

import (
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/observe"
	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/telemetry/promtext"
)

// Namespace prefixes every metric name.
const Namespace = "mcpx"

// DefaultLatencyBuckets returns the call-latency histogram's buckets, in
// seconds: 1 ms to about 33 s (a new slice each call).
func DefaultLatencyBuckets() []float64 { return promtext.ExponentialBuckets(0.001, 2, 16) }

// pluginLayers are the layers that run WASM plugins: their failures are
// also plugin failures.
var pluginLayers = map[string]bool{"custom": true, "presets": true}

// Metrics are mcpx's Prometheus metrics. It is a observe.Observer
// (calls, errors, latency, what results kept out of the context) and an
// engine.Listener (artifacts stored and refused, clamps, layer and
// plugin failures, work the memory budget refused); Evicted counts the retention collector's removals and
// WatchUpstreams reports upstream restarts at scrape time. Safe for
// concurrent use.
type Metrics struct {
	calls, errors, keptBytes, keptTokens *promtext.CounterVec
	latency                              *promtext.HistogramVec
	stored, storedBytes, refused, clamps *promtext.CounterVec
	deduplicated                         *promtext.CounterVec
	layerFailures, pluginFailures        *promtext.CounterVec
	workRefused                          *promtext.CounterVec
	evicted, evictedBytes                *promtext.Counter
	perCall                              sync.Map // server → *sync.Map of tool → *callMetrics
}

// callMetrics are one server's tool's series, resolved once: a call
// then costs no label lookup and no allocation.
type callMetrics struct {
	calls, rpcErrors, toolErrors, keptBytes, keptTokens *promtext.Counter
	latency                                             *promtext.Histogram
}

// NewMetrics makes the metrics and registers them on reg (the caller's
// registry: there is no process-wide one).
func NewMetrics(reg *promtext.Registry) (*Metrics, error) {
	var errs []error
	counter := func(name, help string, labels ...string) *promtext.CounterVec {
		v, err := reg.CounterVec(Namespace+"_"+name, help, labels...)
		errs = append(errs, err)
		return v
	}
	total := func(name, help string) *promtext.Counter {
		c, err := reg.Counter(Namespace+"_"+name, help)
		errs = append(errs, err)
		return c
	}
	latency, err := reg.HistogramVec(Namespace+"_tool_call_duration_seconds", "tools/call latency through the gateway (upstream and engine).", DefaultLatencyBuckets(), "server", "tool")
	errs = append(errs, err)
	m := &Metrics{
		calls:          counter("tool_calls_total", "tools/call requests routed to a server's tool, and POST /transform calls (by their server and tool).", "server", "tool"),
		errors:         counter("tool_call_errors_total", "tools/call that failed: kind=rpc (a JSON-RPC error, or a POST /transform body the engine refused) or tool (a result with isError).", "server", "tool", "kind"),
		keptBytes:      counter("kept_out_bytes_total", "Bytes of tool results kept out of the model's context.", "server", "tool"),
		keptTokens:     counter("kept_out_tokens_total", "Estimated tokens of tool results kept out of the model's context.", "server", "tool"),
		latency:        latency,
		stored:         counter("artifacts_stored_total", "Values moved into the artifact store, re-stores of bytes it already held included.", "server"),
		deduplicated:   counter("artifacts_deduplicated_total", "Values whose bytes the artifact store already held: counted in artifacts_stored_total, not in artifact_bytes_stored_total.", "server"),
		storedBytes:    counter("artifact_bytes_stored_total", "Bytes of new artifacts moved into the artifact store (a re-store adds none).", "server"),
		refused:        counter("artifacts_refused_total", "Values over a store limit, not stored.", "server"),
		clamps:         counter("observations_clamped_total", "Results the guardrail cut to their budget.", "server", "tool"),
		layerFailures:  counter("layer_failures_total", "Layer (or rewrite) failures; the result flowed on.", "server", "layer"),
		pluginFailures: counter("plugin_failures_total", "Failures of WASM plugin layers (custom, presets).", "server", "layer"),
		workRefused:    counter("work_refused_total", "Image views and content summaries left out: the process's work memory (serve.limits.max_work_bytes) could not hold them in time.", "server"),
		evicted:        total("artifacts_evicted_total", "Artifacts the retention collector removed."),
		evictedBytes:   total("artifact_bytes_evicted_total", "Bytes the retention collector removed."),
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *Metrics) forCall(server, tool string) *callMetrics {
	tools, ok := m.perCall.Load(server)
	if !ok {
		tools, _ = m.perCall.LoadOrStore(server, &sync.Map{})
	}
	byTool := tools.(*sync.Map)
	if c, ok := byTool.Load(tool); ok {
		return c.(*callMetrics)
	}
	c := &callMetrics{
		calls:      m.calls.With(server, tool),
		rpcErrors:  m.errors.With(server, tool, "rpc"),
		toolErrors: m.errors.With(server, tool, "tool"),
		keptBytes:  m.keptBytes.With(server, tool),
		keptTokens: m.keptTokens.With(server, tool),
		latency:    m.latency.With(server, tool),
	}
	got, _ := byTool.LoadOrStore(tool, c)
	return got.(*callMetrics)
}

// ObserveCall counts a finished tools/call (observe.Observer).
func (m *Metrics) ObserveCall(c observe.Call) {
	cm := m.forCall(c.Server, c.Tool)
	cm.calls.Inc()
	cm.latency.Observe(c.Duration.Seconds())
	switch {
	case c.Err != nil:
		cm.rpcErrors.Inc()
	case c.ToolError:
		cm.toolErrors.Inc()
	}
	if r := c.Result; r != nil && r.KeptOutBytes > 0 {
		cm.keptBytes.Add(int64(r.KeptOutBytes))
		cm.keptTokens.Add(int64(r.KeptOutTokens))
	}
}

// OnEvent counts an engine event (engine.Listener).
func (m *Metrics) OnEvent(ev engine.Event) {
	switch ev.Type {
	case engine.EventArtifactStored:
		// A re-store is a value kept out of a result whose bytes the
		// store already held: its bytes are not stored, nor counted, again.
		m.stored.With(ev.Server).Inc()
		switch {
		case ev.AlreadyStored:
			m.deduplicated.With(ev.Server).Inc()
		case ev.Artifact != nil:
			m.storedBytes.With(ev.Server).Add(ev.Artifact.SizeBytes)
		}
	case engine.EventArtifactRefused:
		m.refused.With(ev.Server).Inc()
	case engine.EventObservationClamped:
		m.clamps.With(ev.Server, ev.Tool).Inc()
	case engine.EventLayerFailed:
		m.layerFailures.With(ev.Server, ev.Layer).Inc()
		if pluginLayers[ev.Layer] {
			m.pluginFailures.With(ev.Server, ev.Layer).Inc()
		}
	case engine.EventWorkRefused:
		m.workRefused.With(ev.Server).Inc()
	}
}

// Evicted counts a removal of the retention collector
// (store.CollectOptions.Each); a release removes no artifact, and is not
// counted.
func (m *Metrics) Evicted(r store.Removal) {
	if len(r.Released) > 0 {
		return
	}
	m.evicted.Inc()
	m.evictedBytes.Add(r.Bytes)
}

// UpstreamState is what WatchUpstreams reports of one upstream.
type UpstreamState struct {
	Name     string
	Ready    bool
	Restarts int
}

// WatchUpstreams adds to reg, read at each scrape from states:
// mcpx_upstream_restarts_total and mcpx_upstream_up per server.
func WatchUpstreams(reg *promtext.Registry, states func() []UpstreamState) {
	reg.Collect(func(w *promtext.Writer) {
		st := slices.SortedFunc(slices.Values(states()), func(a, b UpstreamState) int { return strings.Compare(a.Name, b.Name) })
		if len(st) == 0 {
			return
		}
		w.Family(Namespace+"_upstream_restarts_total", "Times an upstream's connection was restarted after it ended.", promtext.TypeCounter)
		for _, s := range st {
			w.Sample(Namespace+"_upstream_restarts_total", float64(s.Restarts), "server", s.Name)
		}
		w.Family(Namespace+"_upstream_up", "1 when the upstream is connected and ready.", promtext.TypeGauge)
		for _, s := range st {
			up := 0.0
			if s.Ready {
				up = 1
			}
			w.Sample(Namespace+"_upstream_up", up, "server", s.Name)
		}
	})
}

var (
	_ observe.Observer = (*Metrics)(nil)
	_ engine.Listener  = (*Metrics)(nil)
)

package telemetry

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway/observe"
	"github.com/mcpx-dev/mcpx/store"
)

// Namespace prefixes every metric name.
const Namespace = "mcpx"

// DefaultLatencyBuckets returns the call-latency histogram's buckets, in
// seconds: 1 ms to about 33 s (a new slice each call).
func DefaultLatencyBuckets() []float64 { return prometheus.ExponentialBuckets(0.001, 2, 16) }

// pluginLayers are the layers that run WASM plugins: their failures are
// also plugin failures.
var pluginLayers = map[string]bool{"custom": true, "presets": true}

// Metrics are mcpx's Prometheus metrics. It is a observe.Observer
// (calls, errors, latency, what results kept out of the context) and an
// engine.Listener (artifacts stored and refused, clamps, layer and
// plugin failures); Evicted counts the retention collector's removals and
// WatchUpstreams reports upstream restarts at scrape time. Safe for
// concurrent use.
type Metrics struct {
	calls, errors, keptBytes, keptTokens *prometheus.CounterVec
	latency                              *prometheus.HistogramVec
	stored, storedBytes, refused, clamps *prometheus.CounterVec
	layerFailures, pluginFailures        *prometheus.CounterVec
	evicted, evictedBytes                prometheus.Counter
	perCall                              sync.Map // server → *sync.Map of tool → *callMetrics
}

// callMetrics are one server's tool's series, resolved once: a call
// then costs no label hashing and no allocation.
type callMetrics struct {
	calls, rpcErrors, toolErrors, keptBytes, keptTokens prometheus.Counter
	latency                                             prometheus.Observer
}

// NewMetrics makes the metrics and registers them on reg (the caller's
// registry: nothing goes to the process-wide default).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help}, labels)
	}
	m := &Metrics{
		calls:          counter("tool_calls_total", "tools/call requests routed to a server's tool.", "server", "tool"),
		errors:         counter("tool_call_errors_total", "tools/call that failed: kind=rpc (a JSON-RPC error) or tool (a result with isError).", "server", "tool", "kind"),
		keptBytes:      counter("kept_out_bytes_total", "Bytes of tool results kept out of the model's context.", "server", "tool"),
		keptTokens:     counter("kept_out_tokens_total", "Estimated tokens of tool results kept out of the model's context.", "server", "tool"),
		latency:        prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "tool_call_duration_seconds", Help: "tools/call latency through the gateway (upstream and engine).", Buckets: DefaultLatencyBuckets()}, []string{"server", "tool"}),
		stored:         counter("artifacts_stored_total", "Values moved into the artifact store.", "server"),
		storedBytes:    counter("artifact_bytes_stored_total", "Bytes moved into the artifact store.", "server"),
		refused:        counter("artifacts_refused_total", "Values over a store limit, not stored.", "server"),
		clamps:         counter("observations_clamped_total", "Results the guardrail cut to their budget.", "server", "tool"),
		layerFailures:  counter("layer_failures_total", "Layer (or rewrite) failures; the result flowed on.", "server", "layer"),
		pluginFailures: counter("plugin_failures_total", "Failures of WASM plugin layers (custom, presets).", "server", "layer"),
		evicted:        prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "artifacts_evicted_total", Help: "Artifacts the retention collector removed."}),
		evictedBytes:   prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "artifact_bytes_evicted_total", Help: "Bytes the retention collector removed."}),
	}
	for _, c := range []prometheus.Collector{m.calls, m.errors, m.keptBytes, m.keptTokens, m.latency, m.stored, m.storedBytes, m.refused, m.clamps, m.layerFailures, m.pluginFailures, m.evicted, m.evictedBytes} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
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
		calls:      m.calls.WithLabelValues(server, tool),
		rpcErrors:  m.errors.WithLabelValues(server, tool, "rpc"),
		toolErrors: m.errors.WithLabelValues(server, tool, "tool"),
		keptBytes:  m.keptBytes.WithLabelValues(server, tool),
		keptTokens: m.keptTokens.WithLabelValues(server, tool),
		latency:    m.latency.WithLabelValues(server, tool),
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
		cm.keptBytes.Add(float64(r.KeptOutBytes))
		cm.keptTokens.Add(float64(r.KeptOutTokens))
	}
}

// OnEvent counts an engine event (engine.Listener).
func (m *Metrics) OnEvent(ev engine.Event) {
	switch ev.Type {
	case engine.EventArtifactStored:
		m.stored.WithLabelValues(ev.Server).Inc()
		if ev.Artifact != nil {
			m.storedBytes.WithLabelValues(ev.Server).Add(float64(ev.Artifact.SizeBytes))
		}
	case engine.EventArtifactRefused:
		m.refused.WithLabelValues(ev.Server).Inc()
	case engine.EventObservationClamped:
		m.clamps.WithLabelValues(ev.Server, ev.Tool).Inc()
	case engine.EventLayerFailed:
		m.layerFailures.WithLabelValues(ev.Server, ev.Layer).Inc()
		if pluginLayers[ev.Layer] {
			m.pluginFailures.WithLabelValues(ev.Server, ev.Layer).Inc()
		}
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
	m.evictedBytes.Add(float64(r.Bytes))
}

// UpstreamState is what WatchUpstreams reports of one upstream.
type UpstreamState struct {
	Name     string
	Ready    bool
	Restarts int
}

// WatchUpstreams registers on reg, read at each scrape from states:
// mcpx_upstream_restarts_total and mcpx_upstream_up per server.
func WatchUpstreams(reg prometheus.Registerer, states func() []UpstreamState) error {
	return reg.Register(&upstreamCollector{states: states,
		restarts: prometheus.NewDesc(Namespace+"_upstream_restarts_total", "Times an upstream's connection was restarted after it ended.", []string{"server"}, nil),
		up:       prometheus.NewDesc(Namespace+"_upstream_up", "1 when the upstream is connected and ready.", []string{"server"}, nil),
	})
}

type upstreamCollector struct {
	states       func() []UpstreamState
	restarts, up *prometheus.Desc
}

func (c *upstreamCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.restarts; ch <- c.up }

func (c *upstreamCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.states() {
		up := 0.0
		if s.Ready {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(c.restarts, prometheus.CounterValue, float64(s.Restarts), s.Name)
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up, s.Name)
	}
}

var (
	_ observe.Observer = (*Metrics)(nil)
	_ engine.Listener  = (*Metrics)(nil)
)

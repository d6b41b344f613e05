package telemetry_test

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/observe"
	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/telemetry"
	"github.com/mcpx-dev/mcpx/telemetry/promtext"
)

var update = flag.Bool("update", false, "rewrite testdata/metrics.golden")

// driveMetrics gives every metric a value: calls that succeed, fail and
// time out, engine events of each kind, an eviction, two upstreams; a
// tool name with a quote, a backslash and a line feed.
func driveMetrics(m *telemetry.Metrics) []telemetry.UpstreamState {
	odd := "q\"uo\\te\nnl"
	m.ObserveCall(observe.Call{Server: "up", Tool: "pic", Duration: 3 * time.Millisecond, Result: &engine.Result{KeptOutBytes: 49152, KeptOutTokens: 12000}})
	m.ObserveCall(observe.Call{Server: "up", Tool: "pic", Duration: 1500 * time.Millisecond, Result: &engine.Result{}})
	m.ObserveCall(observe.Call{Server: "up", Tool: "fail", Duration: 40 * time.Second, ToolError: true})
	m.ObserveCall(observe.Call{Server: "b", Tool: odd, Duration: time.Microsecond, Err: errors.New("x")})
	for _, ev := range []engine.Event{
		{Type: engine.EventArtifactStored, Server: "up", Tool: "pic", Artifact: &engine.ArtifactRef{SizeBytes: 40000}},
		{Type: engine.EventArtifactStored, Server: "up", Tool: "pic"},
		{Type: engine.EventArtifactStored, Server: "up", Tool: "pic", Artifact: &engine.ArtifactRef{SizeBytes: 40000}, AlreadyStored: true},
		{Type: engine.EventArtifactRefused, Server: "b", Tool: odd},
		{Type: engine.EventObservationClamped, Server: "b", Tool: odd},
		{Type: engine.EventLayerFailed, Server: "up", Layer: "custom"},
		{Type: engine.EventLayerFailed, Server: "up", Layer: "sizenet"},
	} {
		m.OnEvent(ev)
	}
	m.Evicted(store.Removal{ID: "up_1", Bytes: 77})
	return []telemetry.UpstreamState{{Name: "up", Ready: true, Restarts: 2}, {Name: "b"}}
}

// /metrics names, labels, types, help texts and values are those the
// Prometheus client library wrote (testdata/metrics.golden was written
// by the code before this package wrote the format itself), byte for
// byte, and Prometheus' parser reads them.
func TestMetricsTextUnchanged(t *testing.T) {
	reg := promtext.NewRegistry()
	m, err := telemetry.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	states := driveMetrics(m)
	telemetry.WatchUpstreams(reg, func() []telemetry.UpstreamState { return states })
	var got bytes.Buffer
	if _, err := reg.WriteTo(&got); err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("testdata/metrics.golden", got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile("testdata/metrics.golden")
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != string(want) {
		g, w := strings.Split(got.String(), "\n"), strings.Split(string(want), "\n")
		for i := range max(len(g), len(w)) {
			if i >= len(g) || i >= len(w) || g[i] != w[i] {
				t.Fatalf("/metrics differs from testdata/metrics.golden at line %d:\n got %q\nwant %q", i+1, at(g, i), at(w, i))
			}
		}
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(&got)
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	if len(fams) != 16 {
		t.Errorf("%d families, want 16", len(fams))
	}
}

// A tool name that is not UTF-8 (a hostile upstream's) is counted under
// its valid form; the Prometheus client panicked on it.
func TestMetricsToolNameNotUTF8(t *testing.T) {
	reg := promtext.NewRegistry()
	m, err := telemetry.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.ObserveCall(observe.Call{Server: "up", Tool: "a\xffb", Duration: time.Millisecond})
	m.OnEvent(engine.Event{Type: engine.EventObservationClamped, Server: "up", Tool: "a\xffb"})
	var out bytes.Buffer
	_, _ = reg.WriteTo(&out)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(&out)
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	if got := value(fams, "mcpx_tool_calls_total", "tool", "a\uFFFDb"); got != 1 {
		t.Errorf(`mcpx_tool_calls_total{tool="a\uFFFDb"} = %v, want 1`, got)
	}
	if got := value(fams, "mcpx_observations_clamped_total", "tool", "a\uFFFDb"); got != 1 {
		t.Errorf(`mcpx_observations_clamped_total{tool="a\uFFFDb"} = %v, want 1`, got)
	}
}

func at(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "(end)"
}

package cli

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/cmd/mcpx/internal/cli/config"
	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway"
	"github.com/mcpx-dev/mcpx/observe"
	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/web"
)

// serve's engine events and evictions reach both /metrics and the API's
// event bus; tracing is off without serve.telemetry or the environment.
func TestServeObservabilityWiring(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	bus := web.NewEventBus(web.Limits{})
	obs, err := newObservability(context.Background(), config.File{}, bus, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	if obs.tp != nil {
		t.Fatal("tracing on without configuration")
	}
	var gwo gateway.Options
	obs.Configure(&gwo)
	if gwo.Observer == nil || gwo.TracerProvider != nil || gwo.OnResourceUpdated == nil {
		t.Fatalf("gateway options: %+v", gwo)
	}
	obs.Listener().OnEvent(engine.Event{Type: engine.EventArtifactStored, Server: "s", Artifact: &engine.ArtifactRef{ID: "a_1", SizeBytes: 10}})
	obs.Evicted()(store.Removal{ID: "a_1", Bytes: 10, Why: "ttl"})
	// A release removes no artifact: an event for its owner, no count.
	obs.Evicted()(store.Removal{ID: "a_2", Why: "max_user_bytes user=u", Released: []store.Scope{{UserID: "u"}}})
	gwo.OnResourceUpdated(observe.ResourceUpdate{Server: "s", URI: "x://y"})
	replay, _, _, cancel := bus.Subscribe(0, func(web.Event) bool { return true })
	cancel()
	var types []string
	for _, ev := range replay {
		types = append(types, ev.Type)
	}
	if fmt.Sprint(types) != "[artifact_stored artifact_evicted artifact_evicted resource_updated]" {
		t.Errorf("bus events %v", types)
	}
	srv := httptest.NewServer(obs.Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`mcpx_artifacts_stored_total{server="s"} 1`, "mcpx_artifacts_evicted_total 1", "go_goroutines"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

package engine_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

// countingHost stands in for a WASM host: it counts its opens and closes.
type countingHost struct{ closed *atomic.Int32 }

func (h countingHost) Close(context.Context) error { h.closed.Add(1); return nil }

// The layers an engine builds get Options.Plugins as it was given, and
// Resources.Shared makes one value per engine and key, closed with the
// engine (after its layers) and never again; an engine given a host never
// closes it.
func TestPluginsAndSharedPerEngine(t *testing.T) {
	var opened, closed atomic.Int32
	given := countingHost{closed: new(atomic.Int32)}
	var saw []layer.PluginHost
	reg := layer.NewRegistry()
	reg.Register(layer.Info{Name: "wasmish", New: func(_ json.RawMessage, r layer.Resources) (layer.Layer, error) {
		saw = append(saw, r.Plugins)
		if _, err := r.Shared("host", func() (any, error) { opened.Add(1); return countingHost{closed: &closed}, nil }); err != nil {
			return nil, err
		}
		return fixed(nil), nil
	}})
	for _, plugins := range []layer.PluginHost{nil, given} {
		opened.Store(0)
		closed.Store(0)
		eng, err := engine.New(engine.Options{Store: memstore.New(memstore.Config{}), Registry: reg, Config: engine.Config{Chain: []string{"wasmish"}}, Plugins: plugins})
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range []string{"a", "b", "c"} {
			if err := eng.Validate("s", tool); err != nil {
				t.Fatal(err)
			}
		}
		if opened.Load() != 1 || closed.Load() != 0 {
			t.Fatalf("three chains: opened %d closed %d, want one shared value, open", opened.Load(), closed.Load())
		}
		if err := eng.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if closed.Load() != 1 {
			t.Fatalf("after Close: closed %d, want 1", closed.Load())
		}
		if err := eng.Close(context.Background()); err != nil || closed.Load() != 1 {
			t.Fatalf("a second Close: %v, closed %d", err, closed.Load())
		}
	}
	if len(saw) != 6 || saw[0] != nil || saw[3] != layer.PluginHost(given) {
		t.Fatalf("layers saw Plugins %v", saw)
	}
	if given.closed.Load() != 0 {
		t.Fatal("the engine closed the host it was given")
	}
}

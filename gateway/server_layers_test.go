package gateway

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway/config"
)

// TestServerLayersBadPatch: options that are not an object are an error
// naming where they are, not silently dropped (the merge moved to
// cmd/mcpx/internal/cli/config, which tests the message).
func TestServerLayersBadPatch(t *testing.T) {
	t.Parallel()
	pipeline := engine.Config{Servers: map[string]engine.ServerConfig{
		"tab": {Layers: map[string]json.RawMessage{"resourcelink": json.RawMessage(`{"x":1}`)}},
	}}
	servers := map[string]config.ServerConfig{"tab": {Command: "x", Mcpx: config.ServerOptions{
		Layers: map[string]json.RawMessage{"resourcelink": json.RawMessage(`[1]`)},
	}}}
	if _, err := New(Options{Servers: servers, Engine: engine.Options{Config: pipeline}}); err == nil {
		t.Fatal("New accepted an array of layer options")
	}
}

// TestServerLayersRefused: layer options in mcpServers.X.mcpx are refused
// with the key where they live now, never silently ignored: mcpx moves an
// old config's to the pipeline when it loads it.
func TestServerLayersRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mcpx config.ServerOptions
		want string
	}{
		{config.ServerOptions{Layers: map[string]json.RawMessage{"sizenet": json.RawMessage(`{}`)}}, "mcpServers.tab.mcpx.layers: layer options live in the pipeline: set pipeline.servers.tab.layers"},
		{config.ServerOptions{AutoReadIfSizeUnderBytes: 1}, "set pipeline.servers.tab.layers.resourcelink.auto_read_if_size_under_bytes"},
		{config.ServerOptions{Tools: map[string]config.ToolOptions{"dl": {Layers: map[string]json.RawMessage{"fields": json.RawMessage(`{}`)}}}}, "set pipeline.servers.tab.tools.dl.layers"},
	} {
		_, err := New(Options{Servers: map[string]config.ServerConfig{"tab": {Command: "x", Mcpx: tc.mcpx}}, Engine: engine.Options{}})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New with %+v: err = %v, want %q", tc.mcpx, err, tc.want)
		}
	}
}

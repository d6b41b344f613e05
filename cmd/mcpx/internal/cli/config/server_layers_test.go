package config

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/mcpx-dev/mcpx/engine"
	gatewayconfig "github.com/mcpx-dev/mcpx/gateway/config"
)

// TestServerLayersMergeAsPatches: mcpServers.X.mcpx.layers (and per tool)
// patch the pipeline's options for X instead of replacing them: keys only the pipeline sets stay, null deletes, nested objects
// merge.
func TestServerLayersMergeAsPatches(t *testing.T) {
	pipeline := engine.Config{
		Layers: map[string]json.RawMessage{"sizenet": json.RawMessage(`{"max_inline_size":1}`)},
		Servers: map[string]engine.ServerConfig{
			"tab": {
				Layers: map[string]json.RawMessage{
					"sizenet": json.RawMessage(`{"max_inline_size":100,"preview_chars":50,"nested":{"a":1,"b":2}}`),
				},
				Tools: map[string]engine.ToolConfig{
					"dl": {Layers: map[string]json.RawMessage{"fields": json.RawMessage(`{"paths":["x"],"mime":"a/b"}`)}},
				},
			},
		},
	}
	servers := map[string]gatewayconfig.ServerConfig{
		"tab": {Command: "x", Mcpx: gatewayconfig.ServerOptions{
			AutoReadIfSizeUnderBytes: 4096,
			Layers: map[string]json.RawMessage{
				"sizenet":      json.RawMessage(`{"max_inline_size":200,"preview_chars":null,"nested":{"b":3}}`),
				"resourcelink": json.RawMessage(`{"other":true}`),
			},
			Tools: map[string]gatewayconfig.ToolOptions{
				"dl": {Layers: map[string]json.RawMessage{"fields": json.RawMessage(`{"mime":"c/d"}`)}},
				"up": {Layers: map[string]json.RawMessage{"magicbytes": json.RawMessage(`{"enabled":false}`)}},
			},
		}},
	}
	got, err := withServerLayers(pipeline, servers)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"sizenet":      `{"max_inline_size":200,"nested":{"a":1,"b":3},"preview_chars":null}`,
		"resourcelink": `{"auto_read_if_size_under_bytes":4096,"other":true}`,
	}
	check := func(what string, layers map[string]json.RawMessage, want map[string]string) {
		t.Helper()
		if len(layers) != len(want) {
			t.Errorf("%s: layers %v, want %d of them", what, keysOf(layers), len(want))
		}
		for name, w := range want {
			if !sameJSON(t, layers[name], w) {
				t.Errorf("%s %s = %s, want %s", what, name, layers[name], w)
			}
		}
	}
	check("server", got.Servers["tab"].Layers, want)
	check("tool dl", got.Servers["tab"].Tools["dl"].Layers, map[string]string{"fields": `{"paths":["x"],"mime":"c/d"}`})
	check("tool up", got.Servers["tab"].Tools["up"].Layers, map[string]string{"magicbytes": `{"enabled":false}`})
	// the caller's config is not modified
	if s := string(pipeline.Servers["tab"].Layers["sizenet"]); s != `{"max_inline_size":100,"preview_chars":50,"nested":{"a":1,"b":2}}` {
		t.Errorf("pipeline modified: %s", s)
	}
}

// TestServerLayersBadPatch: options that are not an object are an error
// naming where they are, not silently dropped.
func TestServerLayersBadPatch(t *testing.T) {
	pipeline := engine.Config{Servers: map[string]engine.ServerConfig{
		"tab": {Layers: map[string]json.RawMessage{"resourcelink": json.RawMessage(`{"x":1}`)}},
	}}
	servers := map[string]gatewayconfig.ServerConfig{"tab": {Command: "x", Mcpx: gatewayconfig.ServerOptions{
		Layers: map[string]json.RawMessage{"resourcelink": json.RawMessage(`[1]`)},
	}}}
	_, err := withServerLayers(pipeline, servers)
	if err == nil || err.Error() != "mcpServers.tab.mcpx.layers.resourcelink: merge patch must be a JSON object, got an array" {
		t.Fatalf("err = %v", err)
	}
}

// TestMoveServerLayers: an old config's layer options in mcpServers.X.mcpx
// move to pipeline.servers.X, their one home, with a warning naming it,
// and leave the mcpx section.
func TestMoveServerLayers(t *testing.T) {
	f, err := Decode([]byte(`{
  "pipeline": {"servers": {"tab": {"layers": {"sizenet": {"max_inline_size": 100, "preview_chars": 50}}}}},
  "mcpServers": {"tab": {"command": "x", "mcpx": {
    "auto_read_if_size_under_bytes": 4096,
    "layers": {"sizenet": {"max_inline_size": 200}},
    "tools": {"dl": {"layers": {"fields": {"mime": "c/d"}}, "arguments": {"mode": "off"}}}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	warnings, err := f.MoveServerLayers()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"mcpServers.tab.mcpx.layers is deprecated and will be removed in the next release: it was read as pipeline.servers.tab.layers",
		"mcpServers.tab.mcpx.auto_read_if_size_under_bytes is deprecated and will be removed in the next release: it was read as pipeline.servers.tab.layers.resourcelink.auto_read_if_size_under_bytes",
		"mcpServers.tab.mcpx.tools.dl.layers is deprecated and will be removed in the next release: it was read as pipeline.servers.tab.tools.dl.layers",
	} {
		found := false
		for _, w := range warnings {
			found = found || strings.HasPrefix(w, want)
		}
		if !found {
			t.Errorf("no warning %q in %q", want, warnings)
		}
	}
	if len(warnings) != 3 {
		t.Errorf("%d warnings, want 3: %q", len(warnings), warnings)
	}
	sc := f.Pipeline.Servers["tab"]
	if !sameJSON(t, sc.Layers["sizenet"], `{"max_inline_size":200,"preview_chars":50}`) ||
		!sameJSON(t, sc.Layers["resourcelink"], `{"auto_read_if_size_under_bytes":4096}`) ||
		!sameJSON(t, sc.Tools["dl"].Layers["fields"], `{"mime":"c/d"}`) {
		t.Errorf("pipeline.servers.tab = %+v", sc)
	}
	m := f.MCPServers["tab"].Mcpx
	if m.Layers != nil || m.AutoReadIfSizeUnderBytes != 0 || m.Tools["dl"].Layers != nil || m.Tools["dl"].Arguments.Mode != "off" {
		t.Errorf("mcpx section after the move: %+v", m)
	}
	if again, err := f.MoveServerLayers(); err != nil || len(again) != 0 {
		t.Errorf("a second move: %q, %v", again, err)
	}
}

func keysOf(m map[string]json.RawMessage) []string { return sortedNames(m) }

func sameJSON(t *testing.T, got json.RawMessage, want string) bool {
	t.Helper()
	var a, b any
	if err := json.Unmarshal(got, &a); err != nil {
		return false
	}
	if err := json.Unmarshal([]byte(want), &b); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(a, b)
}

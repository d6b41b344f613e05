package gateway

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/mcpx-dev/mcpx/engine"
)

// TestServerLayersMergeAsPatches: mcpServers.X.mcpx.layers (and per tool)
// patch the pipeline's options for X instead of replacing them (issue 8,
// item 5): keys only the pipeline sets stay, null deletes, nested objects
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
	servers := map[string]ServerConfig{
		"tab": {Command: "x", Mcpx: ServerOptions{
			AutoReadIfSizeUnderBytes: 4096,
			Layers: map[string]json.RawMessage{
				"sizenet":      json.RawMessage(`{"max_inline_size":200,"preview_chars":null,"nested":{"b":3}}`),
				"resourcelink": json.RawMessage(`{"other":true}`),
			},
			Tools: map[string]ToolOptions{
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
	servers := map[string]ServerConfig{"tab": {Command: "x", Mcpx: ServerOptions{
		Layers: map[string]json.RawMessage{"resourcelink": json.RawMessage(`[1]`)},
	}}}
	_, err := withServerLayers(pipeline, servers)
	if err == nil || err.Error() != "mcpServers.tab.mcpx.layers.resourcelink: merge patch must be a JSON object, got an array" {
		t.Fatalf("err = %v", err)
	}
	if _, err := New(Options{Servers: servers, Engine: engine.Options{Config: pipeline}}); err == nil {
		t.Fatal("New accepted an array of layer options")
	}
}

func keysOf(m map[string]json.RawMessage) []string { return sortedKeys(m) }

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

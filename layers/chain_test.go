package layers_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/layers"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

// The default chain is defined here, beside the layers, and is the default
// registry's order: docs/design.md's "The chain" (fastmcp and contract
// first, the WASM layers before the built-in extractors, the guardrail
// last), with every layer it names registered by this package.
func TestDefaultChainIsTheRegistryOrder(t *testing.T) {
	want := []string{"fastmcp", "contract", "custom", "presets", "fields", "resourcelink", "typedcontent", "magicbytes", "sizenet", "guardrail"}
	if got := layers.DefaultChain(); !slices.Equal(got, want) {
		t.Fatalf("DefaultChain() = %v, want %v", got, want)
	}
	layers.DefaultChain()[0] = "changed" // a fresh slice each call
	if got := layer.DefaultRegistry().Chain(); !slices.Equal(got, want) {
		t.Fatalf("DefaultRegistry().Chain() = %v, want %v", got, want)
	}
	for _, name := range want {
		if _, ok := layer.DefaultRegistry().Lookup(name); !ok {
			t.Errorf("layer %q of the default chain is not registered", name)
		}
	}
}

// TestWASMLayersRegistered: with the README's
// one import, a config naming custom plugins got nil errors and the plugin
// never ran, since custom and presets registered only from layers/wasm.
// Now the import registers them: a missing plugin file is an error from
// Validate, and the tableau preset stores a Tableau download with its own
// summary.
func TestWASMLayersRegistered(t *testing.T) {
	st := memstore.New(memstore.Config{})
	missing := filepath.Join(t.TempDir(), "x.wasm")
	eng, err := engine.New(engine.Options{Store: st, Config: engine.Config{Layers: map[string]json.RawMessage{
		"custom": json.RawMessage(`{"plugins":[` + strconv.Quote(missing) + `]}`),
	}}})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(context.Background())
	if err := eng.Validate("s", "t"); err == nil || !strings.Contains(err.Error(), "x.wasm") {
		t.Fatalf("Validate = %v, want the missing plugin named", err)
	}
	for _, name := range []string{"custom", "presets"} {
		if _, ok := layer.DefaultRegistry().Lookup(name); !ok {
			t.Errorf("%s is not registered by package layers", name)
		}
	}
}

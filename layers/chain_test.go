package layers_test

import (
	"slices"
	"testing"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/layers"
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
	if got := engine.DefaultRegistry().Chain(); !slices.Equal(got, want) {
		t.Fatalf("DefaultRegistry().Chain() = %v, want %v", got, want)
	}
	for _, name := range want {
		if _, ok := engine.DefaultRegistry().Lookup(name); !ok {
			t.Errorf("layer %q of the default chain is not registered", name)
		}
	}
}

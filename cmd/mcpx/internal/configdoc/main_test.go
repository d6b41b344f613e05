package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/internal/configref"
	"github.com/mcpx-dev/mcpx/internal/gosrc"
)

// TestReferenceIsCurrent keeps docs/config.md what the config types' doc
// comments and the layers' defaults say: a changed comment, key or
// default fails here until the reference is remade.
func TestReferenceIsCurrent(t *testing.T) {
	// What configref.Generate writes, from the package's one load.
	want := loadReference(t).File()
	root, err := gosrc.Root(".")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(root, configref.Output))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale: run\n\tgo generate ./cmd/mcpx/internal/configdoc\nand commit it; first difference at line %d", configref.Output, firstDiffLine(got, want))
	}
}

// TestEveryKeyStatesItsDefault keeps each setting documented where it is
// declared: a doc comment that says what the key does and, for a value,
// what it is when absent ("Defaults to ...", or "Required").
func TestEveryKeyStatesItsDefault(t *testing.T) {
	if missing := loadReference(t).Undocumented(); len(missing) > 0 {
		t.Errorf("these keys' doc comments do not say what they default to (write \"Defaults to DefaultX.\" naming the constant, or the value in words, or \"Required.\"):\n\t%s", strings.Join(missing, "\n\t"))
	}
}

// TestLayerOptionsReadFromTheirDefaults: a layer's option takes its
// default from what the layer registered (its defaults function), and
// every layer of the chain has its section.
func TestLayerOptionsReadFromTheirDefaults(t *testing.T) {
	ref := loadReference(t)
	keys := map[string]configref.Key{}
	sections := map[string]bool{}
	for _, s := range ref.Sections {
		sections[s.Path] = true
		for _, k := range s.Keys {
			keys[k.Path] = k
		}
	}
	for _, name := range layer.DefaultRegistry().Chain() {
		if !sections["pipeline.layers."+name] {
			t.Errorf("layer %s has no section", name)
		}
	}
	for path, def := range map[string]string{
		"pipeline.layers.sizenet.max_inline_size":           "10000",
		"pipeline.layers.magicbytes.require_magic_bytes":    "true",
		"pipeline.layers.magicbytes.min_size_for_detection": "1000",
	} {
		if k := keys[path]; k.Default != def {
			t.Errorf("%s: default %q, want %q", path, k.Default, def)
		}
	}
}

// loadReference reads mcpx's configuration tree from the repository,
// once for the package's tests (a load type-checks the config packages:
// seconds of CPU).
func loadReference(t *testing.T) configref.Reference {
	t.Helper()
	ref, err := reference()
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

var reference = sync.OnceValues(func() (configref.Reference, error) {
	root, err := gosrc.Root(".")
	if err != nil {
		return configref.Reference{}, err
	}
	return configref.Load(root, configref.RootPackage, configref.RootType, registryLayers(layer.DefaultRegistry()))
})

func firstDiffLine(a, b []byte) int {
	la, lb := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := range min(len(la), len(lb)) {
		if !bytes.Equal(la[i], lb[i]) {
			return i + 1
		}
	}
	return min(len(la), len(lb)) + 1
}

// Command configdoc writes docs/config.md, the reference of mcpx's
// configuration file, from the config types' doc comments and the
// registered layers' options (package internal/configref renders them).
// It is run by "go generate ./cmd/mcpx/internal/configdoc", not
// installed; TestReferenceIsCurrent fails while the file is stale.
package main

//go:generate go run .

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/internal/configref"
	"github.com/mcpx-dev/mcpx/internal/gosrc"
	_ "github.com/mcpx-dev/mcpx/layers" // registers every layer the CLI runs, custom and presets included
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "configdoc:", err)
		os.Exit(1)
	}
}

func run() error {
	root, err := gosrc.Root(".")
	if err != nil {
		return err
	}
	md, err := configref.Generate(root, registryLayers(layer.DefaultRegistry()))
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(root, configref.Output), md, 0o644)
}

// registryLayers returns the options of every layer kind of reg: those
// of its chain in the chain's order, then the others by name.
func registryLayers(reg *layer.Registry) []configref.LayerOptions {
	names := reg.Chain()
	for _, n := range reg.Names() {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	var out []configref.LayerOptions
	for _, n := range names {
		info, ok := reg.Lookup(n)
		if !ok || info.Defaults == nil {
			continue
		}
		out = append(out, configref.LayerOptions{Name: n, Summary: info.Summary, Defaults: info.Defaults()})
	}
	return out
}

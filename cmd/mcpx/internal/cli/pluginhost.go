package cli

import (
	"context"
	"sort"

	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/layers/wasm"
	"github.com/mcpx-dev/mcpx/plugins"
)

// newPluginHost makes the WASM host of one command's engine: the built-in
// presets, the compilation cache in its default folder, and the servers
// the command serves, so that a folder plugin that serves none of them is
// a warning rather than a silent no-op. It returns the host with the
// registry the engine is built from: the built-in layers, custom and
// presets bound to the host. The command closes the host after the
// engine.
func newPluginHost(ctx context.Context, servers []string) (*wasm.Host, *layer.Registry, error) {
	servers = append([]string(nil), servers...)
	sort.Strings(servers)
	h, err := wasm.NewHost(ctx, wasm.HostOptions{Presets: plugins.Catalog(), Servers: servers})
	if err != nil {
		return nil, nil, err
	}
	return h, layer.DefaultRegistry().With(wasm.Layers(h)...), nil
}

// presetNames lists the presets built into the binary.
func presetNames() []string { return plugins.Names() }

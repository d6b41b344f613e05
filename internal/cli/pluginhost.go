package cli

import (
	"context"
	"sort"

	"github.com/mcpx-dev/mcpx/layers/wasm"
	"github.com/mcpx-dev/mcpx/plugins"
)

// newPluginHost makes the WASM host of one command's engine: the built-in
// presets, the compilation cache in its default folder, and the servers
// the command serves, so that a folder plugin that serves none of them is
// a warning rather than a silent no-op. The command closes it after the
// engine.
func newPluginHost(ctx context.Context, servers []string) (*wasm.Host, error) {
	servers = append([]string(nil), servers...)
	sort.Strings(servers)
	return wasm.NewHost(ctx, wasm.HostOptions{Presets: plugins.Catalog(), Servers: servers})
}

// presetNames lists the presets built into the binary.
func presetNames() []string { return plugins.Names() }

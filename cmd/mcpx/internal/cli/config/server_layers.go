package config

// Layer options have one home, pipeline.servers.NAME.layers (and
// .tools.TOOL.layers), where the engine merges every level once. Before,
// mcpServers.NAME.mcpx.layers, .mcpx.tools.TOOL.layers and
// .mcpx.auto_read_if_size_under_bytes set them too and the gateway
// composed them over the pipeline's. For one release an old config still
// works: MoveServerLayers moves them to their home, with a warning that
// names it.

import (
	"encoding/json"
	"fmt"
	"maps"
	"strconv"

	"github.com/mcpx-dev/mcpx/engine"
	gatewayconfig "github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/internal/mergepatch"
)

// MoveServerLayers moves the layer options of every mcpServers entry's
// mcpx section into f.Pipeline.Servers (see withServerLayers) and clears
// them there, once, after Load. It returns a warning per moved key that
// names its new home.
func (f *File) MoveServerLayers() (warnings []string, err error) {
	cfg, err := withServerLayers(f.Pipeline, f.MCPServers)
	if err != nil {
		return nil, err
	}
	f.Pipeline = cfg
	moved := func(old, home string) {
		warnings = append(warnings, fmt.Sprintf("%s is deprecated and will be removed in the next release: it was read as %s; move it there", old, home))
	}
	for _, name := range sortedNames(f.MCPServers) {
		s := f.MCPServers[name]
		at, home := "mcpServers."+name+".mcpx.", "pipeline.servers."+name+"."
		changed := false
		if len(s.Mcpx.Layers) > 0 {
			moved(at+"layers", home+"layers")
			s.Mcpx.Layers, changed = nil, true
		}
		if s.Mcpx.AutoReadIfSizeUnderBytes != 0 {
			moved(at+"auto_read_if_size_under_bytes", home+"layers."+resourceLinkLayer+".auto_read_if_size_under_bytes")
			s.Mcpx.AutoReadIfSizeUnderBytes, changed = 0, true
		}
		tools := maps.Clone(s.Mcpx.Tools)
		for _, tool := range sortedNames(tools) {
			if t := tools[tool]; len(t.Layers) > 0 {
				moved(at+"tools."+tool+".layers", home+"tools."+tool+".layers")
				t.Layers, changed = nil, true
				tools[tool] = t
			}
		}
		if changed {
			s.Mcpx.Tools = tools
			f.MCPServers[name] = s
		}
	}
	return warnings, nil
}

// resourceLinkLayer is the name of the layer whose option
// auto_read_if_size_under_bytes the deprecated
// mcpServers.NAME.mcpx.auto_read_if_size_under_bytes sets.
const resourceLinkLayer = "resourcelink"

// withServerLayers merges each server's mcpx.layers and per-tool layers
// into the pipeline config, and its auto-read policy into the resourcelink
// layer. Each is one more merge patch (RFC 7396) over the pipeline's own
// options for that server or tool, as every other level is: a key the
// pipeline sets and mcpx.layers does not stays.
func withServerLayers(c engine.Config, servers map[string]gatewayconfig.ServerConfig) (engine.Config, error) {
	out := c
	out.Servers = maps.Clone(c.Servers)
	if out.Servers == nil {
		out.Servers = map[string]engine.ServerConfig{}
	}
	for _, name := range sortedNames(servers) {
		m := servers[name].Mcpx
		if len(m.Layers) == 0 && len(m.Tools) == 0 && m.AutoReadIfSizeUnderBytes == 0 {
			continue
		}
		at := "mcpServers." + name + ".mcpx"
		sc := out.Servers[name]
		patch := m.Layers
		if m.AutoReadIfSizeUnderBytes > 0 {
			patch = maps.Clone(patch)
			if patch == nil {
				patch = map[string]json.RawMessage{}
			}
			auto := json.RawMessage(`{"auto_read_if_size_under_bytes":` + strconv.FormatInt(m.AutoReadIfSizeUnderBytes, 10) + `}`)
			rl, err := mergepatch.Compose(patch[resourceLinkLayer], auto)
			if err != nil {
				return engine.Config{}, fmt.Errorf("%s.layers.%s: %w", at, resourceLinkLayer, err)
			}
			patch[resourceLinkLayer] = rl
		}
		layers, err := composeLayers(sc.Layers, patch, at+".layers")
		if err != nil {
			return engine.Config{}, err
		}
		sc.Layers = layers
		tools := maps.Clone(sc.Tools)
		for _, tname := range sortedNames(m.Tools) {
			t := m.Tools[tname]
			if len(t.Layers) == 0 {
				continue
			}
			if tools == nil {
				tools = map[string]engine.ToolConfig{}
			}
			tc := tools[tname]
			if tc.Layers, err = composeLayers(tc.Layers, t.Layers, at+".tools."+tname+".layers"); err != nil {
				return engine.Config{}, err
			}
			tools[tname] = tc
		}
		sc.Tools = tools
		out.Servers[name] = sc
	}
	return out, nil
}

// composeLayers returns base's layer options with each of patch's composed
// over them (mergepatch.Compose); at names patch in errors.
func composeLayers(base, patch map[string]json.RawMessage, at string) (map[string]json.RawMessage, error) {
	if len(patch) == 0 {
		return base, nil
	}
	out := maps.Clone(base)
	if out == nil {
		out = map[string]json.RawMessage{}
	}
	for _, layer := range sortedNames(patch) {
		merged, err := mergepatch.Compose(out[layer], patch[layer])
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", at, layer, err)
		}
		out[layer] = merged
	}
	return out, nil
}

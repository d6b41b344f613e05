package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"sort"

	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/internal/mergepatch"
)

// Defaults of Config.
const (
	// DefaultMaxArtifactBytes caps one artifact unless Config says otherwise.
	DefaultMaxArtifactBytes = 1 << 30
	// DefaultMaxArtifactsPerResult is the retention defaults' per-trace
	// artifact count, applied per result (docs/design.md, "Limits").
	DefaultMaxArtifactsPerResult = 100
	// DefaultMaxDepth is the deepest nesting of a result the chain runs on
	// unless Config.MaxDepth says otherwise (layer.DefaultMaxDepth).
	DefaultMaxDepth = layer.DefaultMaxDepth
)

// maxCreatesPerStep bounds the replaces of one step that create their
// path: each costs a pass over its buffer.
const maxCreatesPerStep = 64

// Config is the pipeline's configuration tree, as it sits on disk under
// "pipeline". The zero value runs every registered layer of the registry's
// default order (Registry.Chain; package layers sets it) with its defaults.
//
//	{
//	  "layers":  {"sizenet": {"max_inline_size": 20000}},
//	  "servers": {
//	    "tableau": {
//	      "layers": {"magicbytes": {"enabled": false}},
//	      "tools":  {"download_workbook": {"layers": {"fields": {...}}}}
//	    }
//	  }
//	}
type Config struct {
	// Chain is the order of layers. Defaults to the registry's Chain.
	Chain []string `json:"chain,omitempty"`
	// Layers holds each layer's options by name, for every server and
	// tool. {"enabled": false} switches a layer off; each layer's options
	// are listed in docs/config.md. Defaults to none: every layer with its
	// own defaults.
	Layers map[string]json.RawMessage `json:"layers,omitempty"`
	// Servers overrides Layers per upstream server. Keys are server names
	// or globs ("github*", "*"); an exact name wins over globs, and globs
	// apply in sorted order. Defaults to none.
	Servers map[string]ServerConfig `json:"servers,omitempty"`
	// MaxArtifactBytes caps the bytes of one artifact; a larger value is
	// not stored: the result keeps a truncated preview and a note naming
	// the limit, and EventArtifactRefused is emitted. Defaults to
	// DefaultMaxArtifactBytes (1 GiB).
	MaxArtifactBytes int64 `json:"max_artifact_bytes,omitempty"`
	// SchemaFallback says what happens to a value in structuredContent
	// that no rewrite can replace validly under the tool's outputSchema
	// (the schema wants a number where a blob was, or the result fails
	// validation after the rewrite). Defaults to "placeholder", which
	// keeps the structure with a placeholder the schema accepts and puts
	// the artifact's reference in content and in _meta["mcpx/artifacts"];
	// "keep" leaves the original value in place. Either way it is logged.
	SchemaFallback string `json:"schema_fallback,omitempty"`
	// MaxArtifactsPerResult caps the artifacts the layers before the
	// guardrail store for one result (the retention defaults' per-trace count,
	// applied per result). Values past the cap stay inline, where the guardrail
	// clamps them (storing what it cuts), and the result carries a note for
	// the model. Defaults to DefaultMaxArtifactsPerResult.
	MaxArtifactsPerResult int `json:"max_artifacts_per_result,omitempty"`
	// MaxDepth is the deepest nesting of a result the chain runs on.
	// A deeper result is stored whole as one artifact and replaced by a
	// short note naming it (a layer_failed event with ErrTooDeep). Defaults
	// to DefaultMaxDepth.
	MaxDepth int `json:"max_depth,omitempty"`
	// Inspect bounds the content summaries of stored artifacts (page
	// count, pixel dimensions, line count, JSON keys ...) that default
	// summaries and {content.*} template fields use.
	Inspect InspectConfig `json:"inspect,omitempty"`
}

// ServerConfig overrides layer options for one server and its tools.
type ServerConfig struct {
	// Layers overrides the global options of each named layer (a JSON
	// merge patch, RFC 7396). Defaults to none.
	Layers map[string]json.RawMessage `json:"layers,omitempty"`
	// Tools overrides the server's options per tool name or glob.
	// Defaults to none.
	Tools map[string]ToolConfig `json:"tools,omitempty"`
}

// ToolConfig overrides layer options for one tool.
type ToolConfig struct {
	// Layers overrides the server's options of each named layer.
	// Defaults to none.
	Layers map[string]json.RawMessage `json:"layers,omitempty"`
}

func (c Config) withDefaults() Config {
	if c.MaxArtifactBytes <= 0 {
		c.MaxArtifactBytes = DefaultMaxArtifactBytes
	}
	if c.SchemaFallback == "" {
		c.SchemaFallback = schemaFallbackPlaceholder
	}
	if c.MaxArtifactsPerResult <= 0 {
		c.MaxArtifactsPerResult = DefaultMaxArtifactsPerResult
	}
	if c.MaxDepth <= 0 {
		c.MaxDepth = DefaultMaxDepth
	}
	return c
}

// layerOptions returns the merged options of layer name for server/tool and
// whether the layer is enabled.
func (c Config) layerOptions(name, server, tool string) (json.RawMessage, bool, error) {
	merged := map[string]any{}
	apply := func(raw json.RawMessage, where string) error {
		if len(raw) == 0 {
			return nil
		}
		// Numbers stay json.Number: a float64 would round integers over
		// 2^53 in a plugin's config (ids, snowflakes) on their way through.
		var patch any
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&patch); err != nil {
			return fmt.Errorf("config %s layers.%s: %w", where, name, err)
		}
		if dec.More() {
			return fmt.Errorf("config %s layers.%s: trailing data after the options", where, name)
		}
		p, ok := patch.(map[string]any)
		if !ok {
			return fmt.Errorf("config %s layers.%s: options must be an object", where, name)
		}
		mergepatch.Apply(merged, p)
		return nil
	}
	if err := apply(c.Layers[name], "global"); err != nil {
		return nil, false, err
	}
	for _, key := range matchingKeys(c.Servers, server) {
		sc := c.Servers[key]
		if err := apply(sc.Layers[name], "servers."+key); err != nil {
			return nil, false, err
		}
		for _, tkey := range matchingKeys(sc.Tools, tool) {
			if err := apply(sc.Tools[tkey].Layers[name], "servers."+key+".tools."+tkey); err != nil {
				return nil, false, err
			}
		}
	}
	enabled := true
	if v, ok := merged["enabled"]; ok {
		b, isBool := v.(bool)
		if !isBool {
			return nil, false, fmt.Errorf("config layers.%s.enabled: want true or false", name)
		}
		enabled = b
	}
	raw, err := json.Marshal(merged)
	return raw, enabled, err
}

// matchingKeys returns the keys of m that match name: globs first in sorted
// order, then the exact key, so the most specific override applies last.
func matchingKeys[V any](m map[string]V, name string) []string {
	var globs []string
	exact := false
	for k := range m {
		if k == name {
			exact = true
			continue
		}
		if ok, _ := path.Match(k, name); ok {
			globs = append(globs, k)
		}
	}
	sort.Strings(globs)
	if exact {
		globs = append(globs, name)
	}
	return globs
}

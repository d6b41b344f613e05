package config

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/mcpx-dev/mcpx/engine"
)

// Every path in a configuration file is relative to the file's folder, not
// to the folder mcpx was started from: MCP clients start mcpx from
// wherever they like. Load resolves them (resolvePaths); Decode, which has
// no file, leaves them as written.
//
// The path-valued options are:
//
//   - store.dir
//   - mcpServers.NAME.cwd, and mcpServers.NAME.command when it is a relative
//     path with a separator ("./server", "bin/server"; a bare "node" is
//     looked up on PATH), taken from the server's cwd when it has one
//   - the custom layer's "dir" and "plugins" (a path, or {"file": path}),
//     wherever layer options sit: pipeline.layers, pipeline.servers.S.layers,
//     pipeline.servers.S.tools.T.layers, mcpServers.S.mcpx.layers and
//     mcpServers.S.mcpx.tools.T.layers.

// customLayer is the name of the layer whose options hold file paths
// (layers/wasm.CustomOptions).
const customLayer = "custom"

// resolvePaths makes every relative path of f absolute against base, the
// configuration file's folder (itself absolute).
func (f *File) resolvePaths(base string) error {
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(base, p)
	}
	f.Store.Dir = abs(f.Store.Dir)
	if err := resolvePipeline(&f.Pipeline, base); err != nil {
		return err
	}
	for _, name := range sortedNames(f.MCPServers) {
		s := f.MCPServers[name]
		at := "mcpServers." + name
		s.Cwd = abs(s.Cwd)
		if s.Command != "" && !filepath.IsAbs(s.Command) && strings.ContainsRune(s.Command, filepath.Separator) {
			from := base
			if s.Cwd != "" {
				from = s.Cwd
			}
			s.Command = filepath.Join(from, s.Command)
		}
		var err error
		if s.Mcpx.Layers, err = resolveLayers(s.Mcpx.Layers, base, at+".mcpx.layers"); err != nil {
			return err
		}
		for _, tn := range sortedNames(s.Mcpx.Tools) {
			t := s.Mcpx.Tools[tn]
			if t.Layers, err = resolveLayers(t.Layers, base, at+".mcpx.tools."+tn+".layers"); err != nil {
				return err
			}
			s.Mcpx.Tools[tn] = t
		}
		f.MCPServers[name] = s
	}
	return nil
}

// resolvePipeline resolves the layer options of c at every level.
func resolvePipeline(c *engine.Config, base string) error {
	var err error
	if c.Layers, err = resolveLayers(c.Layers, base, "pipeline.layers"); err != nil {
		return err
	}
	for _, sn := range sortedNames(c.Servers) {
		s := c.Servers[sn]
		at := "pipeline.servers." + sn
		if s.Layers, err = resolveLayers(s.Layers, base, at+".layers"); err != nil {
			return err
		}
		for _, tn := range sortedNames(s.Tools) {
			t := s.Tools[tn]
			if t.Layers, err = resolveLayers(t.Layers, base, at+".tools."+tn+".layers"); err != nil {
				return err
			}
			s.Tools[tn] = t
		}
		c.Servers[sn] = s
	}
	return nil
}

// resolveLayers returns layers with the custom layer's paths resolved
// against base. The options' other bytes are kept as written (no round trip
// through map[string]any, which would round large integers). Options of the
// wrong shape are left for the layer to reject with its own message.
func resolveLayers(layers map[string]json.RawMessage, base, at string) (map[string]json.RawMessage, error) {
	raw, ok := layers[customLayer]
	if !ok || !gjson.ValidBytes(raw) {
		return layers, nil
	}
	opts := gjson.ParseBytes(raw)
	if !opts.IsObject() {
		return layers, nil
	}
	out := []byte(raw)
	set := func(path, p string) error {
		if p == "" || filepath.IsAbs(p) {
			return nil
		}
		var err error
		if out, err = sjson.SetBytes(out, path, filepath.Join(base, p)); err != nil {
			return fmt.Errorf("%s.%s.%s: %w", at, customLayer, path, err)
		}
		return nil
	}
	if d := opts.Get("dir"); d.Type == gjson.String {
		if err := set("dir", d.String()); err != nil {
			return nil, err
		}
	}
	var err error
	if plugins := opts.Get("plugins"); plugins.IsArray() {
		plugins.ForEach(func(i, p gjson.Result) bool {
			switch {
			case p.Type == gjson.String:
				err = set(fmt.Sprintf("plugins.%d", i.Int()), p.String())
			case p.IsObject() && p.Get("file").Type == gjson.String:
				err = set(fmt.Sprintf("plugins.%d.file", i.Int()), p.Get("file").String())
			}
			return err == nil
		})
	}
	if err != nil {
		return nil, err
	}
	if string(out) == string(raw) {
		return layers, nil
	}
	copied := make(map[string]json.RawMessage, len(layers))
	for k, v := range layers {
		copied[k] = v
	}
	copied[customLayer] = out
	return copied, nil
}

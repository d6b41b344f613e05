package wasm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/engine/layer"
)

// Layers returns the package's layer kinds bound to h, for a registry
// (layer.DefaultRegistry().With(wasm.Layers(h)...)): "custom" (the plugin
// files configured per server and tool, and those of a watched plugins
// folder) and "presets" (h's presets, chosen per server). Every layer
// built from them runs on h, so that one compilation cache and one set of
// compiled modules serve every server and tool of every engine that holds
// them. The caller owns h and closes it after those engines, which never
// close it. A nil h is a wiring bug: Layers panics (LayersOnDemand makes
// its own Host).
func Layers(h *Host) []layer.Info {
	if h == nil {
		panic("wasm: Layers needs a Host; LayersOnDemand makes its own")
	}
	return kinds(&hostSource{fixed: h}, h.PresetNames())
}

// LayersOnDemand returns the same layer kinds bound to a Host they make
// from o when the first layer is built and close when the last layer
// built from them closes (an engine's Close closes its layers, so the
// Host lives as long as some engine's chain needs it). Package layers
// registers them, with mcpx's presets, in the default registry: an
// embedder that gives its engine no Host of its own pays for none until
// a chain runs a plugin layer, and leaks none after Close.
func LayersOnDemand(o HostOptions) []layer.Info {
	o.Presets = slices.Clone(o.Presets)
	o.Servers = slices.Clone(o.Servers)
	names := make([]string, 0, len(o.Presets))
	for _, p := range o.Presets {
		names = append(names, p.Name)
	}
	sort.Strings(names)
	return kinds(&hostSource{opts: o}, names)
}

// kinds are the custom and presets layer kinds on src's Host; presetNames
// are that Host's presets, for the summary.
func kinds(src *hostSource, presetNames []string) []layer.Info {
	return []layer.Info{
		layer.NewInfo("custom",
			"WASM custom transformers per server and tool (plugin files and a hot-loaded plugins folder); may replace the payload",
			nil, func(o CustomOptions, r layer.Resources) (layer.Layer, error) {
				ctx := r.Context
				if ctx == nil {
					ctx = context.Background()
				}
				return src.build(func(h *Host, release func(context.Context) error) (layer.Layer, error) {
					return newCustom(ctx, h, release, o, r)
				})
			}),
		layer.NewInfo("presets",
			"WASM presets per server (built in: "+strings.Join(presetNames, ", ")+"), loaded on the first matching call",
			nil, func(o PresetsOptions, r layer.Resources) (layer.Layer, error) {
				return src.build(func(h *Host, release func(context.Context) error) (layer.Layer, error) {
					return newPresets(h, release, o, r)
				})
			}),
	}
}

// hostSource gives the layers of one set of kinds their Host: the
// caller's (Layers), or one made on first need and closed after the last
// layer that holds it (LayersOnDemand).
type hostSource struct {
	fixed *Host
	opts  HostOptions

	// mu guards h and refs, the on-demand Host and how many layers hold
	// it.
	mu   sync.Mutex
	h    *Host
	refs int
}

// acquire returns the Host a new layer runs on and the release the layer
// calls when it closes (a second call does nothing).
func (s *hostSource) acquire() (*Host, func(context.Context) error, error) {
	if s.fixed != nil {
		return s.fixed, func(context.Context) error { return nil }, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.h == nil {
		h, err := NewHost(context.Background(), s.opts)
		if err != nil {
			return nil, nil, err
		}
		h.log.Debug("plugin host made on demand", "cache_dir", h.CacheDir())
		s.h = h
	}
	s.refs++
	h := s.h
	var once sync.Once
	return h, func(ctx context.Context) (err error) {
		once.Do(func() { err = s.release(ctx, h) })
		return err
	}, nil
}

// build builds a layer with newLayer on a Host of s and the release the
// layer calls when it closes; a layer that fails to build lets go of the
// Host at once.
func (s *hostSource) build(newLayer func(h *Host, release func(context.Context) error) (layer.Layer, error)) (layer.Layer, error) {
	h, release, err := s.acquire()
	if err != nil {
		return nil, err
	}
	l, err := newLayer(h, release)
	if err != nil {
		if rerr := release(context.Background()); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return nil, err
	}
	return l, nil
}

// release drops one layer's hold on h and closes h after the last.
func (s *hostSource) release(ctx context.Context, h *Host) error {
	s.mu.Lock()
	s.refs--
	last := s.refs == 0
	if last {
		s.h = nil
	}
	s.mu.Unlock()
	if !last {
		return nil
	}
	if err := h.Close(ctx); err != nil {
		return fmt.Errorf("wasm: closing the on-demand plugin host: %w", err)
	}
	h.log.Debug("on-demand plugin host closed: no layer holds it")
	return nil
}

// PluginFile names one plugin of the custom layer.
type PluginFile struct {
	// File is the .wasm path. Required.
	File string `json:"file"`
	// Config is handed to the plugin (request "config", host.get_config).
	// Defaults to none.
	Config json.RawMessage `json:"config,omitempty"`
	// Limits override the layer's limits for this plugin.
	Limits *Limits `json:"limits,omitempty"`
}

// UnmarshalJSON accepts a plain path string as well as an object.
func (p *PluginFile) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*p = PluginFile{File: s}
		return nil
	}
	type plain PluginFile
	var v plain
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return err
	}
	*p = PluginFile(v)
	return nil
}

// CustomOptions configure the custom layer, globally or per server and
// tool (servers.S.tools.T.layers.custom).
type CustomOptions struct {
	// Plugins are the transformers of this server and tool, run in order.
	// Each is a path or {"file", "config", "limits"}. Defaults to none.
	Plugins []PluginFile `json:"plugins,omitempty"`
	// Dir is a plugins folder, watched: NAME.wasm (with an optional
	// NAME.json sidecar) is loaded, reloaded when it or its sidecar
	// changes, and unloaded when removed. Defaults to none.
	Dir string `json:"dir,omitempty"`
	// Limits apply to every plugin of the layer. Defaults to 2 s, 128 MiB
	// of memory and 16 MiB of output per call.
	Limits Limits `json:"limits,omitempty"`
	// MaxFileBytes caps a module file, listed or in Dir: a larger one is
	// not read. Only regular files (or symlinks to one) are read. Defaults
	// to 64 MiB.
	MaxFileBytes int64 `json:"max_file_bytes,omitempty"`
}

// PresetsOptions configure the presets layer, globally or per server.
type PresetsOptions struct {
	// Names are the presets to run. Defaults to those whose server globs
	// match the server's name (tableau* runs tableau, github* runs github).
	Names []string `json:"names,omitempty"`
	// Add names presets to run besides Names or the server's defaults
	// (mcpx transform --preset). Defaults to none.
	Add []string `json:"add,omitempty"`
	// Config holds each preset's config by name. Defaults to none.
	Config map[string]json.RawMessage `json:"config,omitempty"`
	// Limits apply to the presets. Defaults as for custom.
	Limits Limits `json:"limits,omitempty"`
}

// custom is the "custom" layer of one server and tool.
type custom struct {
	host   *Host
	log    hclog.Logger
	server string
	tool   string
	owned  []*Plugin
	folder *Folder
	// release lets go of host (hostSource.acquire) when the layer closes.
	release func(context.Context) error
}

// newCustom builds the custom layer for r.Server and r.Tool: it compiles
// the listed plugins (or shares those another layer of h compiled from the
// same file, limits and config) and opens (or shares) the plugins folder.
// The layer calls release when it closes.
func newCustom(ctx context.Context, h *Host, release func(context.Context) error, o CustomOptions, r layer.Resources) (layer.Layer, error) {
	base, err := o.Limits.Apply(h.Sandbox())
	if err != nil {
		return nil, err
	}
	maxFile := o.MaxFileBytes
	if maxFile < 0 {
		return nil, fmt.Errorf("max_file_bytes %d: must not be negative", maxFile)
	}
	if maxFile == 0 {
		maxFile = DefaultMaxPluginFileBytes
	}
	l := &custom{host: h, log: r.Log, server: r.Server, tool: r.Tool, release: release}
	if l.log == nil {
		l.log = hclog.NewNullLogger()
	}
	for i, pf := range o.Plugins {
		if pf.File == "" {
			l.close(ctx)
			return nil, fmt.Errorf("plugins[%d]: file is required", i)
		}
		cfg := base
		if pf.Limits != nil {
			if cfg, err = pf.Limits.Apply(base); err != nil {
				l.close(ctx)
				return nil, fmt.Errorf("plugins[%d]: %w", i, err)
			}
		}
		bin, err := readPluginFile(ctx, pf.File, maxFile)
		if err != nil {
			l.close(ctx)
			return nil, fmt.Errorf("plugins[%d]: %w", i, err)
		}
		p, err := h.acquireShared(ctx, pluginName(pf.File), bin, cfg, pf.Config)
		if err != nil {
			l.close(ctx)
			return nil, fmt.Errorf("plugins[%d] %s: %w", i, pf.File, err)
		}
		l.owned = append(l.owned, p)
	}
	if o.Dir != "" {
		f, err := openShared(ctx, h, o.Dir, base, maxFile, l.log)
		if err != nil {
			l.close(ctx)
			return nil, err
		}
		l.folder = f
	}
	return l, nil
}

// pluginName is a file's base name without .wasm.
func pluginName(file string) string {
	return strings.TrimSuffix(filepath.Base(file), ".wasm")
}

// Plan runs the plugins in order in custom mode. Their rewrites add up; a
// plugin that replaces the payload ends the layer's run (later plugins
// would look at a payload that no longer is). Any plugin's failure fails
// the layer for this call, so the result stays as the previous layer left
// it; so does a folder plugin that failed to load (ErrNotLoaded) and would
// serve the call.
func (l *custom) Plan(ctx context.Context, d *layer.Doc) ([]layer.Rewrite, error) {
	if l.folder != nil {
		if err := l.folder.loadFailure(l.server, l.tool); err != nil {
			return nil, err
		}
	}
	ctx = WithLogger(ctx, l.log)
	var all []layer.Rewrite
	run := func(p *Plugin) (bool, error) {
		rws, err := p.Run(ctx, d, ModeCustom)
		if err != nil {
			return false, err
		}
		all = append(all, rws...)
		return len(rws) == 1 && rws[0].Path == "" && rws[0].Action == layer.ActionReplace, nil
	}
	for _, p := range l.owned {
		if replaced, err := run(p); err != nil || replaced {
			return all, err
		}
	}
	if l.folder == nil {
		return all, nil
	}
	for _, e := range l.folder.matching(l.server, l.tool) {
		replaced, err := run(e.plugin)
		// A reload retired the plugin between the lookup and the call:
		// run its successor.
		for tries := 0; errors.Is(err, ErrClosed) && tries < 3; tries++ {
			next := l.folder.lookup(e.name)
			if next == nil {
				err = nil
				break
			}
			replaced, err = run(next.plugin)
		}
		if err != nil || replaced {
			return all, err
		}
	}
	return all, nil
}

// Close closes the layer's own plugins, lets go of the folder, then of
// the host.
func (l *custom) Close(ctx context.Context) error {
	l.close(ctx)
	return l.release(ctx)
}

func (l *custom) close(ctx context.Context) {
	for _, p := range l.owned {
		l.host.releaseShared(ctx, p)
	}
	l.owned = nil
	if l.folder != nil {
		l.folder.release(ctx)
		l.folder = nil
	}
}

// presets is the "presets" layer of one server and tool.
type presets struct {
	host   *Host
	log    hclog.Logger
	names  []string
	config map[string]json.RawMessage
	cfg    SandboxConfig
	// loaded holds the plugins compiled for non-default limits or config;
	// the default ones are the host's shared presets.
	mu     sync.Mutex
	loaded map[string]*Plugin
	warmed atomic.Bool // Warm ran
	// release lets go of host (hostSource.acquire) when the layer closes.
	release func(context.Context) error
}

// newPresets builds the presets layer for r.Server. Nothing is compiled
// here: each preset loads on the first call that runs it. The layer calls
// release when it closes.
func newPresets(h *Host, release func(context.Context) error, o PresetsOptions, r layer.Resources) (layer.Layer, error) {
	cfg, err := o.Limits.Apply(h.Sandbox())
	if err != nil {
		return nil, err
	}
	names := o.Names
	if names == nil {
		for _, n := range h.PresetNames() {
			if h.presetMatches(n, r.Server) {
				names = append(names, n)
			}
		}
	}
	for _, n := range o.Add {
		if !contains(names, n) {
			names = append(names, n)
		}
	}
	for _, n := range names {
		if !contains(h.PresetNames(), n) {
			return nil, &PluginError{Plugin: n, Err: fmt.Errorf("%w (built in: %v)", ErrUnknownPreset, h.PresetNames())}
		}
	}
	for n, c := range o.Config {
		if !contains(names, n) {
			return nil, fmt.Errorf("config.%s: no such preset in names %v", n, names)
		}
		if !json.Valid(c) {
			return nil, fmt.Errorf("config.%s: not JSON", n)
		}
	}
	l := &presets{host: h, log: r.Log, names: names, config: o.Config, cfg: cfg, loaded: map[string]*Plugin{}, release: release}
	if l.log == nil {
		l.log = hclog.NewNullLogger()
	}
	return l, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// plugin returns the compiled preset, loading it now on the first call.
func (l *presets) plugin(ctx context.Context, name string) (*Plugin, error) {
	if l.config[name] == nil && l.cfg.withDefaults() == l.host.Sandbox().withDefaults() {
		return l.host.Preset(ctx, name)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if p, ok := l.loaded[name]; ok {
		return p, nil
	}
	info, _ := l.host.lookupPreset(name)
	p, err := l.host.Compile(context.WithoutCancel(ctx), "preset."+name, info, l.cfg, l.config[name])
	if err != nil {
		return nil, err
	}
	l.loaded[name] = p
	return p, nil
}

// Plan runs the layer's presets in order; their rewrites add up.
func (l *presets) Plan(ctx context.Context, d *layer.Doc) ([]layer.Rewrite, error) {
	if len(l.names) == 0 {
		return nil, nil
	}
	ctx = WithLogger(ctx, l.log)
	var all []layer.Rewrite
	for _, n := range l.names {
		if l.host.cannotChange(n, d, l.cfg.withDefaults().LongString) {
			// Not loading it is the saving: a fresh process that
			// transforms one small result pays no compile-cache load.
			continue
		}
		p, err := l.plugin(ctx, n)
		if err != nil {
			return nil, err
		}
		rws, err := p.Run(ctx, d, ModeRewrites)
		if err != nil {
			return nil, err
		}
		all = append(all, rws...)
	}
	return all, nil
}

// Warm starts compiling the layer's presets in the background, once: the
// first Plan that runs one then waits for its load instead of starting it.
func (l *presets) Warm(ctx context.Context) {
	if !l.warmed.CompareAndSwap(false, true) {
		return
	}
	ctx = context.WithoutCancel(ctx)
	for _, n := range l.names {
		go func() {
			if _, err := l.plugin(ctx, n); err != nil {
				l.log.Debug("warming a preset failed; the call that runs it reports why", "preset", n, "error", err)
			}
		}()
	}
}

// Close closes the presets compiled for this layer alone, then lets go
// of the host.
func (l *presets) Close(ctx context.Context) error {
	l.mu.Lock()
	for _, p := range l.loaded {
		_ = p.Close(ctx)
	}
	l.loaded = map[string]*Plugin{}
	l.mu.Unlock()
	return l.release(ctx)
}

// Interface guards.
var (
	_ layer.Layer  = (*custom)(nil)
	_ layer.Closer = (*custom)(nil)
	_ layer.Layer  = (*presets)(nil)
	_ layer.Closer = (*presets)(nil)
	_ layer.Warmer = (*presets)(nil)
)

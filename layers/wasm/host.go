package wasm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/tetratelabs/wazero"

	"github.com/mcpx-dev/mcpx/plugins"
)

// HostOptions configure a Host. The zero value is usable.
type HostOptions struct {
	// CacheDir holds wazero's compilation cache, shared by every plugin
	// and every process that uses the same folder. Defaults to
	// DefaultCacheDir(); "-" keeps compiled code in memory only.
	CacheDir string
	// Logger is the parent of the plugins' loggers (each is named after
	// its plugin). Defaults to a null logger.
	Logger hclog.Logger
	// Sandbox holds the default limits of the plugins; a plugin's own
	// limits apply on top. The zero value is the default limits.
	Sandbox SandboxConfig
	// Presets are the modules the presets layer may run (plugins.Catalog()
	// is mcpx's). Defaults to none.
	Presets []plugins.Preset
	// Servers names the servers the embedder serves, as SetServers does.
	Servers []string
}

// Host compiles plugins and shares one compilation cache among them. It is
// safe for concurrent use.
type Host struct {
	cache   wazero.CompilationCache
	log     hclog.Logger
	sandbox SandboxConfig
	dir     string

	mu      sync.Mutex
	catalog map[string]plugins.Preset
	presets map[string]*presetSlot
	shared  map[sharedPluginKey]*sharedPlugin
	closed  bool
	// servers are the server names the embedder serves (SetServers); nil
	// when it never said.
	servers []string
	folders map[*Folder]struct{}

	// folderMu guards sharedFolders, the folders the host's layers share
	// (openShared); held while one opens, so it is not mu.
	folderMu      sync.Mutex
	sharedFolders map[sharedFolderKey]*Folder
}

// sharedPluginKey identifies a compiled plugin that layers may share: the
// same module, limits and config.
type sharedPluginKey struct {
	name, sha, config string
	cfg               SandboxConfig
}

type sharedPlugin struct {
	p    *Plugin
	refs int
}

// NewHost returns a Host. A cache folder that cannot be created is logged
// and compiled code is then kept in memory.
func NewHost(ctx context.Context, o HostOptions) (*Host, error) {
	if err := o.Sandbox.validate(); err != nil {
		return nil, fmt.Errorf("wasm: sandbox: %w", err)
	}
	h := &Host{log: o.Logger, sandbox: o.Sandbox, catalog: map[string]plugins.Preset{}, presets: map[string]*presetSlot{}, shared: map[sharedPluginKey]*sharedPlugin{}, folders: map[*Folder]struct{}{}, sharedFolders: map[sharedFolderKey]*Folder{}}
	for _, p := range o.Presets {
		if p.Name == "" || len(p.Wasm) == 0 {
			return nil, fmt.Errorf("wasm: preset %q: a name and a module are required", p.Name)
		}
		if _, dup := h.catalog[p.Name]; dup {
			return nil, fmt.Errorf("wasm: preset %q given twice", p.Name)
		}
		h.catalog[p.Name] = p
	}
	if o.Servers != nil {
		h.servers = append([]string{}, o.Servers...)
	}
	if h.log == nil {
		h.log = hclog.NewNullLogger()
	}
	dir := o.CacheDir
	if dir == "" {
		dir = DefaultCacheDir()
	}
	if dir != "-" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			h.log.Warn("compilation cache folder unusable; compiling in memory", "dir", dir, "error", err)
			dir = "-"
		}
	}
	if dir != "-" {
		c, err := wazero.NewCompilationCacheWithDir(dir)
		if err != nil {
			h.log.Warn("compilation cache unusable; compiling in memory", "dir", dir, "error", err)
		} else {
			h.cache, h.dir = c, dir
		}
	}
	if h.cache == nil {
		h.cache = wazero.NewCompilationCache()
	}
	return h, nil
}

// SetServers tells the host the names of the servers it transforms for
// (the gateway's upstreams, the CLI's --server). A plugin in a watched
// folder whose server globs match none of them would serve nothing, which
// is easy to miss: each such plugin is then logged once, as a warning, on
// load and on each reload (and now, for the plugins already loaded).
// Without a call nothing is checked: an embedder may serve any name.
func (h *Host) SetServers(names []string) {
	h.mu.Lock()
	h.servers = append([]string{}, names...)
	folders := make([]*Folder, 0, len(h.folders))
	for f := range h.folders {
		folders = append(folders, f)
	}
	h.mu.Unlock()
	for _, f := range folders {
		f.warnUnmatched()
	}
}

// knownServers returns the names given to SetServers, or nil.
func (h *Host) knownServers() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.servers
}

func (h *Host) addFolder(f *Folder) {
	h.mu.Lock()
	h.folders[f] = struct{}{}
	h.mu.Unlock()
}

func (h *Host) removeFolder(f *Folder) {
	h.mu.Lock()
	delete(h.folders, f)
	h.mu.Unlock()
}

// CacheDir is the folder of the compilation cache, or "" when it is in
// memory.
func (h *Host) CacheDir() string { return h.dir }

// Sandbox is the default limits of the host's plugins.
func (h *Host) Sandbox() SandboxConfig { return h.sandbox }

// Compile compiles bin as the plugin name with the limits cfg and the
// plugin config (a JSON object the guest reads; nil for {}). It checks the
// ABI v1 exports and imports, so a module that lacks one fails here with
// ErrBadModule and a message that names what is missing.
func (h *Host) Compile(ctx context.Context, name string, bin []byte, cfg SandboxConfig, config json.RawMessage) (*Plugin, error) {
	if err := cfg.validate(); err != nil {
		return nil, &PluginError{Plugin: name, Err: err}
	}
	h.mu.Lock()
	closed := h.closed
	h.mu.Unlock()
	if closed {
		return nil, &PluginError{Plugin: name, Err: ErrClosed}
	}
	if len(config) > 0 && !json.Valid(config) {
		return nil, &PluginError{Plugin: name, Err: fmt.Errorf("config is not JSON")}
	}
	return newPlugin(ctx, h, name, bin, cfg, config)
}

// acquireShared returns the plugin compiled from bin with cfg and config,
// compiling it on first use; layers of different servers and tools that
// name the same file share one compiled module and its instance pool.
// Release it with releaseShared.
func (h *Host) acquireShared(ctx context.Context, name string, bin []byte, cfg SandboxConfig, config json.RawMessage) (*Plugin, error) {
	key := sharedPluginKey{name: name, sha: digest(bin), config: string(config), cfg: cfg.withDefaults()}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, &PluginError{Plugin: name, Err: ErrClosed}
	}
	if sp, ok := h.shared[key]; ok {
		sp.refs++
		return sp.p, nil
	}
	if err := cfg.validate(); err != nil {
		return nil, &PluginError{Plugin: name, Err: err}
	}
	if len(config) > 0 && !json.Valid(config) {
		return nil, &PluginError{Plugin: name, Err: fmt.Errorf("config is not JSON")}
	}
	p, err := newPlugin(ctx, h, name, bin, cfg, config)
	if err != nil {
		return nil, err
	}
	p.shareKey = &key
	h.shared[key] = &sharedPlugin{p: p, refs: 1}
	return p, nil
}

// releaseShared drops one use of a shared plugin and closes it after the
// last.
func (h *Host) releaseShared(ctx context.Context, p *Plugin) {
	h.mu.Lock()
	sp, ok := h.shared[*p.shareKey]
	last := ok && sp.p == p && sp.refs == 1
	if ok && sp.p == p {
		sp.refs--
		if last {
			delete(h.shared, *p.shareKey)
		}
	}
	h.mu.Unlock()
	if last {
		_ = p.Close(ctx)
	}
}

// Close closes the compilation cache; plugins must be closed first. It is
// idempotent.
func (h *Host) Close(ctx context.Context) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	slots := h.presets
	h.presets = map[string]*presetSlot{}
	shared := h.shared
	h.shared = map[sharedPluginKey]*sharedPlugin{}
	h.mu.Unlock()
	for _, sp := range shared {
		_ = sp.p.Close(ctx)
	}
	for _, s := range slots {
		if p := s.loaded(); p != nil {
			_ = p.Close(ctx)
		}
	}
	return h.cache.Close(ctx)
}

// digest is a short hash of a module, for logs.
func digest(bin []byte) string {
	s := sha256.Sum256(bin)
	return hex.EncodeToString(s[:6])
}

package wasm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/hashicorp/go-hclog"
)

// debounce is how long the folder waits after the last change to a plugin
// before it reloads: an editor or a copy writes a file in several steps.
const debounce = 100 * time.Millisecond

// Sidecar is NAME.json beside NAME.wasm in a plugins folder.
type Sidecar struct {
	// Servers are the server-name globs the plugin serves. Defaults to
	// [NAME]: tableau.wasm transforms the results of server "tableau". A
	// file name is a name, not a glob: x*.wasm without a sidecar serves
	// the server "x*" alone.
	Servers []string `json:"servers,omitempty"`
	// Tools are tool-name globs. Defaults to ["*"].
	Tools []string `json:"tools,omitempty"`
	// Config is handed to the plugin.
	Config json.RawMessage `json:"config,omitempty"`
	// Limits override the folder's limits.
	Limits *Limits `json:"limits,omitempty"`
}

// folderEntry is one loaded plugin of a folder.
type folderEntry struct {
	name    string
	servers []string
	tools   []string
	plugin  *Plugin
	// stamp identifies what was loaded (module and sidecar bytes), so a
	// touch without a change does not reload.
	stamp string
}

func (e *folderEntry) matches(server, tool string) bool {
	return globAny(e.servers, server) && globAny(e.tools, tool)
}

func globAny(globs []string, s string) bool {
	for _, g := range globs {
		if ok, _ := path.Match(g, s); ok {
			return true
		}
	}
	return false
}

// failedEntry is a plugin of a folder that failed to load: every call of
// the servers and tools it would serve fails the custom layer, so the
// failure is counted where the call is reported, not only logged.
type failedEntry struct {
	folderEntry
	err error
}

// Folder is a watched plugins folder. Its set of plugins is an immutable
// snapshot swapped atomically on each load: a call takes the snapshot, runs
// its plugins (each counts the call in flight), and a plugin replaced
// meanwhile closes once its last call returns. A plugin that fails to load
// leaves its previous version serving, and the failure is logged.
type Folder struct {
	dir      string
	host     *Host
	cfg      SandboxConfig
	log      hclog.Logger
	maxBytes int64

	snap atomic.Pointer[[]*folderEntry]
	gen  atomic.Uint64
	// failed holds the plugins that failed to load with no previous
	// version serving, by name (written under loadMu); failing is its
	// snapshot, read by calls.
	failed  map[string]*failedEntry
	failing atomic.Pointer[[]*failedEntry]
	watcher *fsnotify.Watcher
	loadMu  sync.Mutex // one load at a time
	stop    chan struct{}
	stopped chan struct{}
	refs    int // guarded by host.folderMu

	warnMu sync.Mutex
	warned map[string]string // plugin name -> the stamp warned about
}

// FolderOptions configure a plugins folder. The zero value is usable.
type FolderOptions struct {
	// Sandbox holds the limits of the folder's plugins; a sidecar's limits
	// apply on top. Defaults to the host's.
	Sandbox *SandboxConfig
	// Log receives loads, failures and warnings. Defaults to a null
	// logger.
	Log hclog.Logger
	// MaxFileBytes caps a module file; a larger one is not read and fails
	// to load. Defaults to DefaultMaxPluginFileBytes.
	MaxFileBytes int64
}

// OpenFolder loads every plugin of dir and watches it, with the limits cfg
// and the default file size cap. Close stops the watch and closes the
// plugins.
func OpenFolder(ctx context.Context, h *Host, dir string, cfg SandboxConfig, log hclog.Logger) (*Folder, error) {
	return OpenFolderWith(ctx, h, dir, FolderOptions{Sandbox: &cfg, Log: log})
}

// OpenFolderWith loads every plugin of dir and watches it. Only regular
// files are read (a symlink to one is followed; one to a FIFO, a device or
// a folder fails to load), each at most o.MaxFileBytes. Close stops the
// watch and closes the plugins.
func OpenFolderWith(ctx context.Context, h *Host, dir string, o FolderOptions) (*Folder, error) {
	log := o.Log
	if log == nil {
		log = hclog.NewNullLogger()
	}
	cfg := h.Sandbox()
	if o.Sandbox != nil {
		cfg = *o.Sandbox
	}
	maxBytes := o.MaxFileBytes
	if maxBytes <= 0 {
		maxBytes = DefaultMaxPluginFileBytes
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("plugins folder %s: %w", dir, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("plugins folder: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("plugins folder %s: not a folder", abs)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("plugins folder %s: watch: %w", abs, err)
	}
	if err := w.Add(abs); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("plugins folder %s: watch: %w", abs, err)
	}
	f := &Folder{
		dir: abs, host: h, cfg: cfg, log: log.Named("plugins").With("dir", abs), watcher: w, maxBytes: maxBytes,
		stop: make(chan struct{}), stopped: make(chan struct{}), warned: map[string]string{}, failed: map[string]*failedEntry{},
	}
	empty := []*folderEntry{}
	f.snap.Store(&empty)
	h.addFolder(f)
	f.Reload(ctx)
	go f.watch()
	return f, nil
}

// Dir is the folder's absolute path.
func (f *Folder) Dir() string { return f.dir }

// Generation counts the loads that changed the set of plugins.
func (f *Folder) Generation() uint64 { return f.gen.Load() }

// Names lists the loaded plugins.
func (f *Folder) Names() []string {
	var names []string
	for _, e := range *f.snap.Load() {
		names = append(names, e.name)
	}
	return names
}

// Plugin returns the loaded plugin called name, or nil.
func (f *Folder) Plugin(name string) *Plugin {
	if e := f.lookup(name); e != nil {
		return e.plugin
	}
	return nil
}

func (f *Folder) lookup(name string) *folderEntry {
	for _, e := range *f.snap.Load() {
		if e.name == name {
			return e
		}
	}
	return nil
}

// Match names the loaded plugins that serve server and tool, in the order
// they run.
func (f *Folder) Match(server, tool string) []string {
	var names []string
	for _, e := range f.matching(server, tool) {
		names = append(names, e.name)
	}
	return names
}

func (f *Folder) matching(server, tool string) []*folderEntry {
	var out []*folderEntry
	for _, e := range *f.snap.Load() {
		if e.matches(server, tool) {
			out = append(out, e)
		}
	}
	return out
}

// Reload scans the whole folder now: new and changed plugins load, removed
// ones unload. The watcher calls it per plugin; tests and tools may call it.
func (f *Folder) Reload(ctx context.Context) {
	names := map[string]bool{}
	if ents, err := os.ReadDir(f.dir); err != nil {
		f.log.Error("cannot list the plugins folder", "error", err)
	} else {
		for _, e := range ents {
			if n, ok := pluginOf(e.Name()); ok {
				names[n] = true
			}
		}
	}
	for _, e := range *f.snap.Load() {
		names[e.name] = true
	}
	f.load(ctx, names)
}

// pluginOf maps a file name to the plugin it belongs to.
func pluginOf(file string) (string, bool) {
	if strings.HasPrefix(file, ".") {
		return "", false
	}
	if n, ok := strings.CutSuffix(file, ".wasm"); ok && n != "" {
		return n, true
	}
	if n, ok := strings.CutSuffix(file, ".json"); ok && n != "" {
		return n, true
	}
	return "", false
}

// load (re)loads the named plugins and swaps the snapshot once.
func (f *Folder) load(ctx context.Context, names map[string]bool) {
	f.loadMu.Lock()
	defer f.loadMu.Unlock()
	old := *f.snap.Load()
	next := make([]*folderEntry, 0, len(old)+len(names))
	var retire []*Plugin
	for _, e := range old {
		if !names[e.name] {
			next = append(next, e)
		}
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	changed := false
	for _, n := range sorted {
		prev := findEntry(old, n)
		e, err := f.loadOne(ctx, n, prev)
		delete(f.failed, n)
		switch {
		case errors.Is(err, os.ErrNotExist) && prev != nil:
			f.log.Info("plugin removed; unloading", "plugin", n)
			retire = append(retire, prev.plugin)
			changed = true
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			if prev != nil {
				f.log.Error("plugin failed to load; the previous version keeps serving", "plugin", n, "error", err)
				next = append(next, prev)
			} else {
				f.log.Error("plugin failed to load; the calls it would serve fail the custom layer", "plugin", n, "error", err)
				f.failed[n] = f.failedEntry(ctx, n, err)
				continue
			}
		case e == prev:
			next = append(next, prev)
		default:
			next = append(next, e)
			if prev != nil {
				retire = append(retire, prev.plugin)
				f.log.Info("plugin reloaded", "plugin", n, "sha256", e.plugin.SHA256(), "servers", e.servers, "tools", e.tools)
			} else {
				f.log.Info("plugin loaded", "plugin", n, "sha256", e.plugin.SHA256(), "servers", e.servers, "tools", e.tools)
			}
			changed = true
		}
	}
	sort.Slice(next, func(i, j int) bool { return next[i].name < next[j].name })
	f.snap.Store(&next)
	failing := make([]*failedEntry, 0, len(f.failed))
	for _, fe := range f.failed {
		failing = append(failing, fe)
	}
	sort.Slice(failing, func(i, j int) bool { return failing[i].name < failing[j].name })
	f.failing.Store(&failing)
	if changed {
		f.gen.Add(1)
	}
	f.warnUnmatched()
	for _, p := range retire {
		_ = p.Close(ctx) // calls in flight finish first
	}
}

func findEntry(es []*folderEntry, name string) *folderEntry {
	for _, e := range es {
		if e.name == name {
			return e
		}
	}
	return nil
}

// failedEntry records name's failure to load, with the servers and tools
// its sidecar names when it can still be read as JSON (an unknown field,
// a bad limit), else the defaults: the server called name, every tool.
func (f *Folder) failedEntry(ctx context.Context, name string, err error) *failedEntry {
	fe := &failedEntry{folderEntry: folderEntry{name: name}, err: &PluginError{Plugin: name, Err: fmt.Errorf("%w: %w", ErrNotLoaded, err)}}
	if side, rerr := readPluginFile(ctx, filepath.Join(f.dir, name+".json"), maxSidecarBytes); rerr == nil {
		var sc struct{ Servers, Tools []string }
		if json.Unmarshal(side, &sc) == nil {
			fe.servers, fe.tools = sc.Servers, sc.Tools
		}
	}
	if len(fe.servers) == 0 {
		fe.servers = []string{escapeGlob(name)}
	}
	if len(fe.tools) == 0 {
		fe.tools = []string{"*"}
	}
	return fe
}

// loadFailure returns the failure of the first plugin that failed to load
// and would serve server and tool, or nil.
func (f *Folder) loadFailure(server, tool string) error {
	fs := f.failing.Load()
	if fs == nil {
		return nil
	}
	for _, fe := range *fs {
		if fe.matches(server, tool) {
			return fe.err
		}
	}
	return nil
}

// loadOne reads NAME.wasm and NAME.json and compiles them, or returns prev
// when neither changed. os.ErrNotExist: the module is gone.
func (f *Folder) loadOne(ctx context.Context, name string, prev *folderEntry) (*folderEntry, error) {
	bin, err := readPluginFile(ctx, filepath.Join(f.dir, name+".wasm"), f.maxBytes)
	if err != nil {
		return nil, err
	}
	side, err := readPluginFile(ctx, filepath.Join(f.dir, name+".json"), maxSidecarBytes)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s.json: %w", name, err)
	}
	stamp := digest(bin) + "/" + digest(side)
	if prev != nil && prev.stamp == stamp {
		return prev, nil
	}
	sc := Sidecar{}
	if len(bytes.TrimSpace(side)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(side))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&sc); err != nil {
			return nil, fmt.Errorf("%s.json: %w", name, err)
		}
	}
	if len(sc.Servers) == 0 {
		sc.Servers = []string{escapeGlob(name)}
	}
	if len(sc.Tools) == 0 {
		sc.Tools = []string{"*"}
	}
	for _, g := range append(append([]string(nil), sc.Servers...), sc.Tools...) {
		if _, err := path.Match(g, ""); err != nil {
			return nil, fmt.Errorf("%s.json: glob %q: %w", name, g, err)
		}
	}
	cfg := f.cfg
	if sc.Limits != nil {
		if cfg, err = sc.Limits.Apply(f.cfg); err != nil {
			return nil, fmt.Errorf("%s.json: %w", name, err)
		}
	}
	p, err := f.host.Compile(ctx, name, bin, cfg, sc.Config)
	if err != nil {
		return nil, err
	}
	return &folderEntry{name: name, servers: sc.Servers, tools: sc.Tools, plugin: p, stamp: stamp}, nil
}

// warnUnmatched logs, once per loaded version, each plugin whose server
// globs match none of the host's known servers (Host.SetServers): it is
// loaded and serves nothing, and a name chosen after a folder ("my-plugin")
// rather than after the server is the usual cause.
func (f *Folder) warnUnmatched() {
	known := f.host.knownServers()
	if known == nil {
		return
	}
	f.warnMu.Lock()
	defer f.warnMu.Unlock()
	for _, e := range *f.snap.Load() {
		if f.warned[e.name] == e.stamp {
			continue
		}
		served := false
		for _, s := range known {
			if globAny(e.servers, s) {
				served = true
				break
			}
		}
		if !served {
			f.warned[e.name] = e.stamp
			f.log.Warn("plugin matches no configured server and serves nothing: name it after its server (SERVER.wasm) or list servers in its sidecar (NAME.json: {\"servers\": [...]})",
				"plugin", e.name, "servers", e.servers, "configured", known)
		}
	}
}

// watch turns file events into debounced loads of the plugins they touch.
func (f *Folder) watch() {
	defer close(f.stopped)
	pending := map[string]bool{}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-f.stop:
			timer.Stop()
			return
		case ev, ok := <-f.watcher.Events:
			if !ok {
				return
			}
			if n, isPlugin := pluginOf(filepath.Base(ev.Name)); isPlugin {
				pending[n] = true
				timer.Reset(debounce)
			}
		case err, ok := <-f.watcher.Errors:
			if !ok {
				return
			}
			// An overflow loses events: rescan everything.
			f.log.Warn("watching the plugins folder", "error", err)
			f.Reload(context.Background())
		case <-timer.C:
			names := pending
			pending = map[string]bool{}
			f.load(context.Background(), names)
		}
	}
}

// Close stops watching and closes the plugins (calls in flight finish
// first). It is idempotent.
func (f *Folder) Close(ctx context.Context) error {
	select {
	case <-f.stop:
		return nil
	default:
	}
	close(f.stop)
	f.host.removeFolder(f)
	err := f.watcher.Close()
	<-f.stopped
	f.loadMu.Lock()
	defer f.loadMu.Unlock()
	for _, e := range *f.snap.Load() {
		_ = e.plugin.Close(ctx)
	}
	empty := []*folderEntry{}
	f.snap.Store(&empty)
	return err
}

// sharedFolderKey identifies a folder that layers of one Host share (its
// Host's sharedFolders): the same folder and limits.
type sharedFolderKey struct {
	dir      string
	cfg      SandboxConfig
	maxBytes int64
}

// openShared returns the folder every layer of h that names the same
// folder and limits shares, opening it for the first; the last release
// closes it.
func openShared(ctx context.Context, h *Host, dir string, cfg SandboxConfig, maxBytes int64, log hclog.Logger) (*Folder, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	key := sharedFolderKey{abs, cfg, maxBytes}
	h.folderMu.Lock()
	defer h.folderMu.Unlock()
	if f, ok := h.sharedFolders[key]; ok {
		f.refs++
		return f, nil
	}
	f, err := OpenFolderWith(ctx, h, abs, FolderOptions{Sandbox: &cfg, Log: log, MaxFileBytes: maxBytes})
	if err != nil {
		return nil, err
	}
	f.refs = 1
	h.sharedFolders[key] = f
	return f, nil
}

func (f *Folder) release(ctx context.Context) {
	h := f.host
	h.folderMu.Lock()
	f.refs--
	last := f.refs == 0
	if last {
		for k, v := range h.sharedFolders {
			if v == f {
				delete(h.sharedFolders, k)
			}
		}
	}
	h.folderMu.Unlock()
	if last {
		_ = f.Close(ctx)
	}
}

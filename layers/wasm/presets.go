package wasm

import (
	"context"
	"fmt"
	"path"
	"sort"
	"sync"
	"time"

	"github.com/mcpx-dev/mcpx/engine/layer"
)

// presetSlot compiles one preset on first use.
type presetSlot struct {
	once sync.Once
	p    *Plugin
	err  error
	mu   sync.Mutex
}

func (s *presetSlot) loaded() *Plugin {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.p
}

// PresetNames lists the host's presets (HostOptions.Presets), sorted.
func (h *Host) PresetNames() []string {
	names := make([]string, 0, len(h.catalog))
	for n := range h.catalog {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// presetMatches reports whether the preset's default server globs match
// server (tableau matches "tableau", "tableau-prod", ...).
func (h *Host) presetMatches(name, server string) bool {
	info, ok := h.catalog[name]
	if !ok {
		return false
	}
	for _, g := range info.Servers {
		if ok, _ := path.Match(g, server); ok {
			return true
		}
	}
	return false
}

// Preset returns the built-in preset name, compiling it on the first call
// (presets load lazily) with the host's default limits. The host owns it:
// Host.Close closes it.
func (h *Host) Preset(ctx context.Context, name string) (*Plugin, error) {
	info, ok := h.catalog[name]
	if !ok {
		return nil, &PluginError{Plugin: name, Err: fmt.Errorf("%w (built in: %v)", ErrUnknownPreset, h.PresetNames())}
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, &PluginError{Plugin: name, Err: ErrClosed}
	}
	s, ok := h.presets[name]
	if !ok {
		s = &presetSlot{}
		h.presets[name] = s
	}
	h.mu.Unlock()
	s.once.Do(func() {
		start := now()
		p, err := h.Compile(context.WithoutCancel(ctx), "preset."+name, info.Wasm, h.sandbox, nil)
		s.mu.Lock()
		s.p, s.err = p, err
		s.mu.Unlock()
		if err == nil {
			h.log.Debug("preset loaded", "preset", name, "sha256", p.SHA256(), "dur_ms", float64(now().Sub(start).Microseconds())/1000)
		}
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.p, s.err
}

// now is the clock of load times.
var now = time.Now

// lookupPreset returns a preset's module.
func (h *Host) lookupPreset(name string) ([]byte, bool) {
	info, ok := h.catalog[name]
	return info.Wasm, ok
}

// cannotChange reports whether the preset name cannot rewrite d: it
// rewrites only candidates, and d has no string long enough to be one.
func (h *Host) cannotChange(name string, d *layer.Doc, longString int) bool {
	info, ok := h.catalog[name]
	return ok && info.CandidatesOnly && len(d.Strings(longString)) == 0
}

package layer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// Layer is one step of the chain. Plan looks at the document and returns
// rewrites; it must not keep d or its bytes after returning. A Layer built by
// Info.New serves one server and tool and may be called concurrently.
type Layer interface {
	Plan(ctx context.Context, d *Doc) ([]Rewrite, error)
}

// Closer is implemented by layers that hold resources.
type Closer interface {
	Close(ctx context.Context) error
}

// Warmer is implemented by layers that can prepare ahead of their first
// Plan (the presets layer compiles its presets). Warm starts that work in
// the background and returns at once; Plan waits for what it needs.
type Warmer interface {
	Warm(ctx context.Context)
}

// Clamper is implemented by layers whose rewrites cut the observation to a
// budget (the guardrail): the engine emits observation_clamped after them.
type Clamper interface {
	Clamps()
}

// ResourceReader reads an MCP resource from an upstream server; the gateway
// provides one. It returns the resources/read result's JSON.
type ResourceReader interface {
	ReadResource(ctx context.Context, server, uri string) (json.RawMessage, error)
}

// Resources are what a layer gets when it is built.
type Resources struct {
	// Context is the context of the call that builds the layer, for work
	// New does (compiling a plugin): it ends when that call is abandoned.
	// Valid only during New; a layer must not keep it.
	Context context.Context
	// Log is already named "layer.<name>" and carries the server and tool.
	Log hclog.Logger
	// Server and Tool the layer instance serves.
	Server, Tool string
	// Reader reads upstream resources; nil outside a gateway.
	Reader ResourceReader
}

// Info registers a layer kind.
type Info struct {
	// Name is the layer's id in config and logs: lowercase, no dots.
	Name string
	// Summary is one line for `mcpx layers` and docs.
	Summary string
	// Defaults returns the layer's options with their defaults, for docs
	// and for `mcpx transform --print-config`.
	Defaults func() any
	// New builds the layer from its merged options (a JSON object, "{}"
	// when nothing is configured). It must not have side effects beyond
	// the returned layer; decode options with DecodeOptions.
	New func(opts json.RawMessage, r Resources) (Layer, error)
}

// NewInfo is the Info of a layer kind whose options are the
// struct O: New starts from defaults() (the zero O when defaults is nil),
// decodes the configured options over it with DecodeOptions, and hands the
// result to build.
func NewInfo[O any](name, summary string, defaults func() O, build func(o O, r Resources) (Layer, error)) Info {
	if defaults == nil {
		defaults = func() O { var o O; return o }
	}
	return Info{
		Name:     name,
		Summary:  summary,
		Defaults: func() any { return defaults() },
		New: func(opts json.RawMessage, r Resources) (Layer, error) {
			o := defaults()
			if err := DecodeOptions(opts, &o); err != nil {
				return nil, err
			}
			return build(o, r)
		},
	}
}

// Registry holds layer kinds by name and their default order.
type Registry struct {
	mu    sync.RWMutex
	infos map[string]Info
	chain []string
}

// NewRegistry returns an empty registry, isolated from the default one.
func NewRegistry() *Registry { return &Registry{infos: map[string]Info{}} }

var defaultRegistry = NewRegistry()

// DefaultRegistry is the registry Register adds to; package layers
// registers the built-in layers there from init.
func DefaultRegistry() *Registry { return defaultRegistry }

// Register adds a layer kind to the default registry. Call it from
// init; it panics on an empty name, a nil New or a duplicate, so wiring
// bugs fail at start.
func Register(info Info) { defaultRegistry.Register(info) }

// Register adds a layer kind; it panics like the package's Register.
func (r *Registry) Register(info Info) {
	if info.Name == "" || info.New == nil {
		panic("layer: Register needs a name and a New func")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.infos[info.Name]; dup {
		panic(fmt.Sprintf("layer: %q registered twice", info.Name))
	}
	r.infos[info.Name] = info
}

// With returns a copy of r, its default order included, in which infos
// are registered in place of the kinds of the same names (an embedder
// binds the WASM layers to its own host: DefaultRegistry().With(
// wasm.Layers(host)...)). r is unchanged. It panics like Register on an
// info without a name or a New func, or on two infos of one name.
func (r *Registry) With(infos ...Info) *Registry {
	r.mu.RLock()
	out := &Registry{infos: maps.Clone(r.infos), chain: slices.Clone(r.chain)}
	r.mu.RUnlock()
	if out.infos == nil {
		out.infos = map[string]Info{}
	}
	for _, info := range infos {
		delete(out.infos, info.Name)
	}
	for _, info := range infos {
		out.Register(info)
	}
	return out
}

// Lookup returns the layer kind registered under name.
func (r *Registry) Lookup(name string) (Info, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	info, ok := r.infos[name]
	return info, ok
}

// SetChain sets the registry's default order: the chain of an Engine whose
// Config.Chain is empty. It may name layers that are not registered (a build
// without layers/wasm lacks custom and presets): an Engine skips them in
// its chain and accepts their names in Config without building them.
func (r *Registry) SetChain(names []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.chain = append([]string(nil), names...)
}

// Chain returns a copy of the default order SetChain set; nil when none was.
func (r *Registry) Chain() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return append([]string(nil), r.chain...)
}

// Known reports whether name is registered or named by the default order.
func (r *Registry) Known(name string) bool {
	if _, ok := r.Lookup(name); ok {
		return true
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Contains(r.chain, name)
}

// Names lists the registered layer names, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.infos))
	for n := range r.infos {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// DecodeOptions decodes a layer's merged options into dst strictly: an
// unknown key is an error. dst holds the defaults beforehand. The engine's
// own "enabled" key is ignored.
func DecodeOptions(raw json.RawMessage, dst any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("options: %w", err)
	}
	delete(m, "enabled")
	clean, err := json.Marshal(m)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(clean))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return fmt.Errorf("options: %w", err)
	}
	return nil
}

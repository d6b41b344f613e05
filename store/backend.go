package store

// Backends a configuration names by kind. A backend's package registers
// itself from init (as the built-in layers do with layer.Register), so a
// binary has the backends it links, and a host that opens stores from a
// config file looks one up by the key of its section instead of naming
// each backend's package.

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// Backend is a kind of store a config file names by the key of its
// section under "store": {"store": {"s3": {"bucket": "mcpx"}}}.
type Backend struct {
	// Kind is the section's key ("s3").
	Kind string
	// Open opens the store the section describes. The section is the
	// JSON object under the kind's key, already checked by the caller's
	// config; fields it leaves to the environment are read with
	// o.Getenv.
	Open func(ctx context.Context, section json.RawMessage, o OpenOptions) (Store, error)
}

// OpenOptions is what a Backend's Open gets besides its section.
type OpenOptions struct {
	// Getenv reads the environment (os.Getenv; a test's map). Nil reads
	// nothing.
	Getenv func(string) string
	// Logger is the store's logger. Nil logs nothing.
	Logger hclog.Logger
}

// Backends holds backends by kind. The zero value is an empty set.
type Backends struct {
	mu     sync.RWMutex
	byKind map[string]Backend
}

// NewBackends returns an empty set of backends, isolated from the
// default one.
func NewBackends() *Backends { return &Backends{} }

// defaultBackends is a static empty set, not NewBackends()'s result, so
// that linking the package runs no initialisation.
var defaultBackends = &Backends{}

// DefaultBackends is the set RegisterBackend adds to.
func DefaultBackends() *Backends { return defaultBackends }

// RegisterBackend adds a backend to the default set. Call it from init;
// it panics on an empty kind, a nil Open or a duplicate, so wiring bugs
// fail at start.
func RegisterBackend(b Backend) { defaultBackends.Register(b) }

// Register adds a backend; it panics like RegisterBackend.
func (s *Backends) Register(b Backend) {
	if b.Kind == "" || b.Open == nil {
		panic("store: RegisterBackend needs a kind and an Open func")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.byKind[b.Kind]; dup {
		panic(fmt.Sprintf("store: backend %q registered twice", b.Kind))
	}
	if s.byKind == nil {
		s.byKind = map[string]Backend{}
	}
	s.byKind[b.Kind] = b
}

// With returns a copy of s in which bs replace the backends of their
// kinds (a test opens a stand-in for "s3"). s is unchanged.
func (s *Backends) With(bs ...Backend) *Backends {
	s.mu.RLock()
	out := &Backends{byKind: maps.Clone(s.byKind)}
	s.mu.RUnlock()
	for _, b := range bs {
		delete(out.byKind, b.Kind)
	}
	for _, b := range bs {
		out.Register(b)
	}
	return out
}

// Lookup returns the backend registered for kind.
func (s *Backends) Lookup(kind string) (Backend, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	b, ok := s.byKind[kind]
	return b, ok
}

// Kinds lists the registered kinds, sorted.
func (s *Backends) Kinds() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Sorted(maps.Keys(s.byKind))
}

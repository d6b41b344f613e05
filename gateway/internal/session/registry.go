package session

import (
	"encoding/json"
	"sync"
	"sync/atomic"

	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
	"github.com/mcpx-dev/mcpx/gateway/internal/router"
	"github.com/mcpx-dev/mcpx/gateway/internal/upstream"
)

// Registry holds the open sessions (not the stateless requests, which
// have none): who hears a broadcast, and who may be asked on an
// upstream's behalf outside any call.
type Registry struct {
	ups *router.Upstreams // their run is an idle caller's context
	seq atomic.Int64      // numbers the callers of server-to-client requests

	mu       sync.RWMutex
	sessions map[string]*Session
}

// NewRegistry returns an empty registry of the sessions of a gateway over
// ups.
func NewRegistry(ups *router.Upstreams) *Registry {
	return &Registry{ups: ups, sessions: map[string]*Session{}}
}

func (r *Registry) add(s *Session) {
	r.mu.Lock()
	r.sessions[s.ID] = s
	r.mu.Unlock()
}

func (r *Registry) remove(s *Session) {
	r.mu.Lock()
	delete(r.sessions, s.ID)
	r.mu.Unlock()
}

// all returns the open sessions that keep.
func (r *Registry) all(keep func(*Session) bool) []*Session {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]*Session, 0, len(r.sessions))
	for _, s := range r.sessions {
		if keep(s) {
			out = append(out, s)
		}
	}
	return out
}

// CloseAll ends every open session.
func (r *Registry) CloseAll() {
	for _, s := range r.all(func(*Session) bool { return true }) {
		s.Close()
	}
}

// Broadcast sends a notification to every initialized session that
// hears from; the zero Owner is everyone.
func (r *Registry) Broadcast(from upstream.Owner, method string, params json.RawMessage) {
	msg := jsonrpc.EncodeRequest(nil, method, params)
	// send outside the lock: a stdio client that does not read holds its
	// sender up (back-pressure), and must not hold up new sessions too
	for _, s := range r.all(func(s *Session) bool { return s.initialized.Load() && s.Hears(from) }) {
		s.Send(msg)
	}
}

// anyHasRoots reports whether an open session's client declared roots.
func (r *Registry) anyHasRoots() bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, s := range r.sessions {
		if s.clientHas("roots") {
			return true
		}
	}
	return false
}

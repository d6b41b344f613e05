package memstore

// Retention in Go: the same rules fsstore applies in SQL (see
// store.Collector), over the catalog, under the store's lock.

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/internal/catalog"
)

var _ store.Collector = (*Store)(nil)

// Collect applies policy (see store.Collector).
func (s *Store) Collect(ctx context.Context, policy store.Retention, o store.CollectOptions) (store.CollectReport, error) {
	rep := store.CollectReport{DryRun: o.DryRun}
	if err := policy.Check(); err != nil {
		return rep, fmt.Errorf("memstore: collect: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return rep, fmt.Errorf("memstore: collect: %w", err)
	}
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return rep, fmt.Errorf("memstore: collect: %w", store.ErrClosed)
	}
	entries, held := s.held()
	chosen := policy.Choose(held, now)
	for i, e := range entries {
		c, ok := chosen[e.Ref.ID]
		if !ok {
			continue
		}
		if !o.DryRun {
			s.release(e, c)
		}
		rep.Add(c.Removal(held[i]), o.Each)
	}
	return rep, nil
}

// held returns the entries in insertion order and each as a collector
// weighs it. The caller holds s.mu.
func (s *Store) held() ([]*catalog.Entry, []store.Held) {
	entries := s.cat.Entries()
	held := make([]store.Held, len(entries))
	for i, e := range entries {
		held[i] = e.Held(s.access[e.Ref.ID])
	}
	return entries, held
}

// release applies c to e: the artifact goes, or the scopes c names. The
// caller holds s.mu (write).
func (s *Store) release(e *catalog.Entry, c store.Chosen) {
	if c.All {
		s.remove(e.Ref.ID)
		return
	}
	gone := make(map[store.Scope]bool, len(c.Scopes))
	for _, i := range c.Scopes {
		gone[e.Scopes[i].Scope] = true
	}
	s.keepScopes(e, func(sc store.Scope) bool { return !gone[sc] })
}

// keepScopes drops e's scopes that keep refuses, and the names recorded
// under them. The caller holds s.mu (write) and leaves e at least one.
func (s *Store) keepScopes(e *catalog.Entry, keep func(store.Scope) bool) {
	e.Scopes = slices.DeleteFunc(e.Scopes, func(h store.HeldScope) bool {
		if keep(h.Scope) {
			return false
		}
		delete(s.names[e.Ref.ID], h.Scope)
		return true
	})
	e.Ref.Scope = e.Scopes[0].Scope
	e.Ref.Created = time.Unix(0, e.Scopes[0].Created).UTC()
}

// DropScope removes scope from every artifact put under it, and the
// artifacts left with no scope (see store.Collector).
func (s *Store) DropScope(ctx context.Context, scope store.Scope) (store.CollectReport, error) {
	var rep store.CollectReport
	if scope.IsZero() {
		return rep, fmt.Errorf("memstore: drop scope: empty scope would drop every artifact")
	}
	if err := ctx.Err(); err != nil {
		return rep, fmt.Errorf("memstore: drop scope: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return rep, fmt.Errorf("memstore: drop scope: %w", store.ErrClosed)
	}
	for _, e := range s.cat.Entries() {
		n := 0
		for _, h := range e.Scopes {
			if scope.Contains(h.Scope) {
				n++
			}
		}
		switch n {
		case 0:
		case len(e.Scopes):
			s.remove(e.Ref.ID)
			rep.Add(store.Removal{ID: e.Ref.ID, Bytes: e.Ref.SizeBytes, Why: "drop_on_session_end"}, nil)
		default:
			s.keepScopes(e, func(sc store.Scope) bool { return !scope.Contains(sc) })
		}
	}
	return rep, nil
}

// remove deletes the artifact id. The caller holds s.mu (write).
func (s *Store) remove(id string) {
	e, free, ok := s.cat.Remove(id)
	if !ok {
		return
	}
	if free {
		delete(s.blobs, e.Ref.SHA256)
	}
	delete(s.names, id)
	delete(s.access, id)
	delete(s.lines, id)
	delete(s.content, id)
}

// checkQuota is fsstore's checkQuota over the catalog. The caller holds
// s.mu (write).
func (s *Store) checkQuota(q store.Quota, sc store.Scope, id string, size int64) error {
	_, held := s.held()
	return q.Check(held, sc, id, size)
}

package memstore

// Retention in Go: the same rules fsstore applies in SQL (see
// store.Collector), over the catalog, under the store's lock.

import (
	"cmp"
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
	entries := s.cat.Entries()
	held := make([]store.Held, len(entries))
	for i, e := range entries {
		held[i] = store.Held{ID: e.Ref.ID, Size: e.Ref.SizeBytes, Created: e.Ref.Created.UnixNano(), LastAccess: s.lastAccess(e), Order: int64(e.Seq), Scopes: e.Scopes}
	}
	why := policy.Choose(held, now)
	slices.SortFunc(entries, func(a, b *catalog.Entry) int { return cmp.Compare(a.Seq, b.Seq) })
	for _, e := range entries {
		reason, ok := why[e.Ref.ID]
		if !ok {
			continue
		}
		if !o.DryRun {
			s.remove(e.Ref.ID)
		}
		rep.Add(store.Removal{ID: e.Ref.ID, Bytes: e.Ref.SizeBytes, Why: reason}, o.Each)
	}
	return rep, nil
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
		kept := e.Scopes[:0:0]
		for _, sc := range e.Scopes {
			if !scope.Contains(sc) {
				kept = append(kept, sc)
			}
		}
		if len(kept) == len(e.Scopes) {
			continue
		}
		if len(kept) > 0 {
			e.Scopes = kept
			e.Ref.Scope = kept[0]
			continue
		}
		s.remove(e.Ref.ID)
		rep.Add(store.Removal{ID: e.Ref.ID, Bytes: e.Ref.SizeBytes, Why: "drop_on_session_end"}, nil)
	}
	return rep, nil
}

// lastAccess is when e was last read or put. The caller holds s.mu.
func (s *Store) lastAccess(e *catalog.Entry) int64 {
	return max(s.access[e.Ref.ID], e.Ref.Created.UnixNano())
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
	usage := func(field func(store.Scope) string) store.Usage {
		v := field(sc)
		u := store.Usage{Scoped: v != ""}
		if !u.Scoped {
			return u
		}
		for _, e := range s.cat.Entries() {
			if !slices.ContainsFunc(e.Scopes, func(o store.Scope) bool { return field(o) == v }) {
				continue
			}
			if e.Ref.ID == id {
				return store.Usage{}
			}
			u.Count++
			u.Bytes += e.Ref.SizeBytes
		}
		return u
	}
	return q.CheckQuota(size,
		usage(func(o store.Scope) string { return o.SessionID }),
		usage(func(o store.Scope) string { return o.TraceID }))
}

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
	key := func(e *catalog.Entry) int64 {
		if policy.ByAccess() {
			return s.lastAccess(e)
		}
		return e.Ref.Created.UnixNano()
	}
	// Newest (or most recently read) first, as the limits keep those.
	slices.SortFunc(entries, func(a, b *catalog.Entry) int {
		return cmp.Or(cmp.Compare(key(b), key(a)), cmp.Compare(b.Seq, a.Seq))
	})
	why := map[string]string{}
	choose := func(e *catalog.Entry, reason string) {
		if _, ok := why[e.Ref.ID]; !ok {
			why[e.Ref.ID] = reason
		}
	}
	for _, e := range entries {
		if policy.TTL > 0 && key(e) < now.Add(-time.Duration(policy.TTL)).UnixNano() {
			choose(e, "ttl")
		}
	}
	for _, e := range entries {
		if policy.MaxArtifactBytes > 0 && e.Ref.SizeBytes > policy.MaxArtifactBytes {
			choose(e, "max_artifact_bytes")
		}
	}
	if policy.Evicts() {
		for _, g := range []struct {
			name               string
			field              func(store.Scope) string
			maxCount, maxBytes int64
		}{
			{"session", func(sc store.Scope) string { return sc.SessionID }, policy.MaxArtifactsPerSession, policy.MaxSessionBytes},
			{"trace", func(sc store.Scope) string { return sc.TraceID }, policy.MaxArtifactsPerTrace, policy.MaxTraceBytes},
		} {
			if g.maxCount == 0 && g.maxBytes == 0 {
				continue
			}
			type usage struct{ n, bytes int64 }
			used := map[string]*usage{}
			var picked []struct {
				e   *catalog.Entry
				why string
			}
			for _, e := range entries {
				if _, gone := why[e.Ref.ID]; gone {
					continue
				}
				seen := map[string]bool{}
				for _, sc := range e.Scopes {
					k := g.field(sc)
					if k == "" || seen[k] {
						continue
					}
					seen[k] = true
					u := used[k]
					if u == nil {
						u = &usage{}
						used[k] = u
					}
					u.n++
					u.bytes += e.Ref.SizeBytes
					switch {
					case g.maxCount > 0 && u.n > g.maxCount:
						picked = append(picked, struct {
							e   *catalog.Entry
							why string
						}{e, "max_artifacts_per_" + g.name + " " + g.name + "=" + k})
					case g.maxBytes > 0 && u.bytes > g.maxBytes:
						picked = append(picked, struct {
							e   *catalog.Entry
							why string
						}{e, "max_" + g.name + "_bytes " + g.name + "=" + k})
					}
				}
			}
			for _, p := range picked {
				choose(p.e, p.why)
			}
		}
		if policy.MaxBytes > 0 {
			var total int64
			for _, e := range entries {
				if _, gone := why[e.Ref.ID]; gone {
					continue
				}
				if total += e.Ref.SizeBytes; total > policy.MaxBytes {
					choose(e, "max_bytes")
				}
			}
		}
	}
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

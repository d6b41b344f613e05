package s3store

// Retention: memstore's rules over three listings (order/ for sizes and
// creation, scope/ for scopes, access/ for reads), then deletes that are
// idempotent, so several collectors may run at once; and a sweep of what
// a crash left behind.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/mcpx-dev/mcpx/store"
)

// artifactEntry is one artifact as a collector sees it.
type artifactEntry struct {
	order      orderEntry
	scopes     []store.Scope
	lastAccess int64 // Unix ns, at least created
}

// snapshot lists every artifact with its scopes and last access.
func (s *Store) snapshot(ctx context.Context) ([]*artifactEntry, error) {
	var out []*artifactEntry
	byID := map[string]*artifactEntry{}
	for obj := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.key("order/", ""), Recursive: true}) {
		if obj.Err != nil {
			return nil, obj.Err
		}
		e, ok := parseOrderName(strings.TrimPrefix(obj.Key, s.key("order/", "")), false)
		if !ok || byID[e.id] != nil {
			continue
		}
		e.key = obj.Key
		a := &artifactEntry{order: e, lastAccess: e.created}
		byID[e.id] = a
		out = append(out, a)
	}
	scopes, err := s.listScopes(ctx, "scope/")
	if err != nil {
		return nil, err
	}
	for _, sc := range scopes {
		if a := byID[sc.id]; a != nil {
			a.scopes = append(a.scopes, sc.scope)
		}
	}
	for obj := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.key("access/", ""), Recursive: true}) {
		if obj.Err != nil {
			return nil, obj.Err
		}
		id, at, _ := strings.Cut(strings.TrimPrefix(obj.Key, s.key("access/", "")), "/")
		if t, ok := parseNanos(at); ok && byID[id] != nil {
			byID[id].lastAccess = max(byID[id].lastAccess, t.UnixNano())
		}
	}
	return out, nil
}

// Collect applies policy (see store.Collector). Each removal is reported
// by the collector whose delete found the artifact, so collectors on
// several replicas never report one twice. Unless DryRun, it then
// removes objects no artifact names that are older than
// Config.OrphanGrace.
func (s *Store) Collect(ctx context.Context, policy store.Retention, o store.CollectOptions) (store.CollectReport, error) {
	rep := store.CollectReport{DryRun: o.DryRun}
	if err := policy.Check(); err != nil {
		return rep, fmt.Errorf("s3store: collect: %w", err)
	}
	if err := s.usable(ctx); err != nil {
		return rep, fmt.Errorf("s3store: collect: %w", err)
	}
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	entries, err := s.snapshot(ctx)
	if err != nil {
		return rep, fmt.Errorf("s3store: collect: %w", err)
	}
	why := choose(entries, policy, now)
	slices.SortFunc(entries, func(a, b *artifactEntry) int { return cmp.Compare(a.order.created, b.order.created) })
	for _, e := range entries {
		reason, ok := why[e.order.id]
		if !ok {
			continue
		}
		if !o.DryRun {
			if err := s.Delete(ctx, e.order.id); errors.Is(err, store.ErrNotFound) {
				continue // another collector took it
			} else if err != nil {
				return rep, fmt.Errorf("s3store: collect: %w", err)
			}
		}
		rep.Add(store.Removal{ID: e.order.id, Bytes: e.order.size, Why: reason}, o.Each)
	}
	if !o.DryRun {
		if err := s.sweep(ctx, entries); err != nil {
			return rep, fmt.Errorf("s3store: collect: sweep: %w", err)
		}
	}
	return rep, nil
}

// choose returns the artifacts policy removes and why: memstore's rules.
func choose(entries []*artifactEntry, policy store.Retention, now time.Time) map[string]string {
	key := func(e *artifactEntry) int64 {
		if policy.ByAccess() {
			return e.lastAccess
		}
		return e.order.created
	}
	entries = slices.Clone(entries)
	// Newest (or most recently read) first, as the limits keep those.
	slices.SortFunc(entries, func(a, b *artifactEntry) int {
		return cmp.Or(cmp.Compare(key(b), key(a)), cmp.Compare(b.order.created, a.order.created))
	})
	why := map[string]string{}
	pick := func(e *artifactEntry, reason string) {
		if _, ok := why[e.order.id]; !ok {
			why[e.order.id] = reason
		}
	}
	for _, e := range entries {
		if policy.TTL > 0 && key(e) < now.Add(-time.Duration(policy.TTL)).UnixNano() {
			pick(e, "ttl")
		}
	}
	for _, e := range entries {
		if policy.MaxArtifactBytes > 0 && e.order.size > policy.MaxArtifactBytes {
			pick(e, "max_artifact_bytes")
		}
	}
	if !policy.Evicts() {
		return why
	}
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
		var picked [][2]string
		for _, e := range entries {
			if _, gone := why[e.order.id]; gone {
				continue
			}
			seen := map[string]bool{}
			for _, sc := range e.scopes {
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
				u.bytes += e.order.size
				switch {
				case g.maxCount > 0 && u.n > g.maxCount:
					picked = append(picked, [2]string{e.order.id, "max_artifacts_per_" + g.name + " " + g.name + "=" + k})
				case g.maxBytes > 0 && u.bytes > g.maxBytes:
					picked = append(picked, [2]string{e.order.id, "max_" + g.name + "_bytes " + g.name + "=" + k})
				}
			}
		}
		for _, p := range picked {
			if _, ok := why[p[0]]; !ok {
				why[p[0]] = p[1]
			}
		}
	}
	if policy.MaxBytes > 0 {
		var total int64
		for _, e := range entries {
			if _, gone := why[e.order.id]; gone {
				continue
			}
			if total += e.order.size; total > policy.MaxBytes {
				pick(e, "max_bytes")
			}
		}
	}
	return why
}

// DropScope removes scope from every artifact put under it, and the
// artifacts left with no scope (see store.Collector).
func (s *Store) DropScope(ctx context.Context, scope store.Scope) (store.CollectReport, error) {
	var rep store.CollectReport
	if scope.IsZero() {
		return rep, fmt.Errorf("s3store: drop scope: empty scope would drop every artifact")
	}
	if err := s.usable(ctx); err != nil {
		return rep, fmt.Errorf("s3store: drop scope: %w", err)
	}
	keys, err := s.listScopes(ctx, "scope/")
	if err != nil {
		return rep, fmt.Errorf("s3store: drop scope: %w", err)
	}
	left := map[string]int{}
	var dropped []scopeEntry
	for _, k := range keys {
		if scope.Contains(k.scope) {
			dropped = append(dropped, k)
		} else {
			left[k.id]++
		}
	}
	done := map[string]bool{}
	for _, k := range dropped {
		if err := s.removeErr(ctx, k.key); err != nil {
			return rep, fmt.Errorf("s3store: drop scope: %w", err)
		}
		if left[k.id] > 0 || done[k.id] {
			continue
		}
		done[k.id] = true
		rec, _, ok, err := s.getRecord(ctx, k.id)
		if err != nil {
			return rep, fmt.Errorf("s3store: drop scope: %w", err)
		}
		if !ok {
			continue
		}
		// A put under another scope may have come meanwhile.
		if rest, err := s.scopeKeys(ctx, k.id); err != nil || len(rest) > 0 {
			if err != nil {
				return rep, fmt.Errorf("s3store: drop scope: %w", err)
			}
			continue
		}
		if claimed, err := s.claimAndDelete(ctx, k.id, rec); err != nil {
			return rep, fmt.Errorf("s3store: drop scope: %w", err)
		} else if !claimed {
			continue
		}
		rep.Add(store.Removal{ID: k.id, Bytes: rec.Size, Why: "drop_on_session_end"}, nil)
	}
	return rep, nil
}

// checkQuota is memstore's checkQuota over a snapshot: not atomic with
// the put across replicas (two replicas may each admit the last
// artifact a limit allows).
func (s *Store) checkQuota(ctx context.Context, q store.Quota, sc store.Scope, id string, size int64) error {
	entries, err := s.snapshot(ctx)
	if err != nil {
		return err
	}
	usage := func(field func(store.Scope) string) store.Usage {
		v := field(sc)
		u := store.Usage{Scoped: v != ""}
		if !u.Scoped {
			return u
		}
		for _, e := range entries {
			if !slices.ContainsFunc(e.scopes, func(o store.Scope) bool { return field(o) == v }) {
				continue
			}
			if e.order.id == id {
				return store.Usage{}
			}
			u.Count++
			u.Bytes += e.order.size
		}
		return u
	}
	return q.CheckQuota(size,
		usage(func(o store.Scope) string { return o.SessionID }),
		usage(func(o store.Scope) string { return o.TraceID }))
}

// sweep removes objects older than OrphanGrace that no listed artifact
// names: what a put or delete killed half way left.
func (s *Store) sweep(ctx context.Context, entries []*artifactEntry) error {
	ids, blobs, orders := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, e := range entries {
		ids[e.order.id], blobs[e.order.blob] = true, true
		orders[fmt.Sprintf("%s.%d.%s", e.order.id, e.order.size, e.order.blob)] = true
	}
	cutoff := time.Now().Add(-s.orphanGrace)
	for _, part := range []string{"blobs/", "meta/", "text/", "scope/", "access/", "rorder/", "gone/"} {
		for obj := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.key(part, ""), Recursive: true}) {
			if obj.Err != nil {
				return obj.Err
			}
			// S3 times are whole seconds (truncated): a second's margin.
			if obj.LastModified.Add(time.Second).After(cutoff) {
				continue
			}
			name := strings.TrimPrefix(obj.Key, s.key(part, ""))
			var known bool
			switch part {
			case "blobs/":
				known = blobs[name]
			case "gone/":
				known = false // a delete that has not finished within the grace died
			case "rorder/":
				_, rest, _ := strings.Cut(name, ".")
				known = orders[rest]
			default:
				id, _, _ := strings.Cut(name, "/")
				known = ids[id]
			}
			if !known {
				s.log.Info("removing an orphan object", "key", obj.Key, "modified", obj.LastModified)
				if err := s.removeErr(ctx, obj.Key); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

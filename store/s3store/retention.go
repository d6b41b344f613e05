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

	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/store"
)

// artifactEntry is one artifact as a collector sees it.
type artifactEntry struct {
	order      orderEntry
	scopes     []scopeEntry
	lastAccess int64 // Unix ns, at least created
}

// held is e as a collector weighs it.
func (e *artifactEntry) held() store.Held {
	h := store.Held{ID: e.order.id, Size: e.order.size, Created: e.order.created, LastAccess: e.lastAccess, Order: e.order.created}
	for _, sc := range e.scopes {
		created := e.order.created
		if t, ok := parseNanos(sc.added); ok {
			created = t.UnixNano()
		}
		h.Scopes = append(h.Scopes, store.HeldScope{Scope: sc.scope, Created: created})
	}
	return h
}

// collector applies retention (Collect), drops scopes (DropScope) and
// sweeps what crashed puts and deletes left.
type collector struct {
	orphanGrace time.Duration // Config.OrphanGrace
	log         hclog.Logger
	life        *openState
	bucket      *bucket
	records     *records
	writer      *writer
}

// collect applies policy (see store.Collector). Each removal is reported
// by the collector whose delete found the artifact, so collectors on
// several replicas never report one twice. Unless DryRun, it then
// removes objects no artifact names that are older than
// Config.OrphanGrace.
func (c *collector) collect(ctx context.Context, policy store.Retention, o store.CollectOptions) (store.CollectReport, error) {
	rep := store.CollectReport{DryRun: o.DryRun}
	if err := policy.Check(); err != nil {
		return rep, fmt.Errorf("s3store: collect: %w", err)
	}
	if err := c.life.usable(ctx); err != nil {
		return rep, fmt.Errorf("s3store: collect: %w", err)
	}
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	entries, err := c.records.snapshot(ctx)
	if err != nil {
		return rep, fmt.Errorf("s3store: collect: %w", err)
	}
	chosen := choose(entries, policy, now)
	slices.SortFunc(entries, func(a, b *artifactEntry) int { return cmp.Compare(a.order.created, b.order.created) })
	for _, e := range entries {
		ch, ok := chosen[e.order.id]
		if !ok {
			continue
		}
		if !o.DryRun {
			if claimed, err := c.release(ctx, e, ch); err != nil {
				return rep, fmt.Errorf("s3store: collect: %w", err)
			} else if !claimed {
				continue // another collector took it
			}
		}
		rep.Add(ch.Removal(e.held()), o.Each)
	}
	if !o.DryRun {
		if err := c.dropUnscoped(ctx, entries, chosen); err != nil {
			return rep, fmt.Errorf("s3store: collect: %w", err)
		}
		if err := c.sweep(ctx, entries); err != nil {
			return rep, fmt.Errorf("s3store: collect: sweep: %w", err)
		}
	}
	return rep, nil
}

// choose returns what policy removes (store.Retention.Choose).
func choose(entries []*artifactEntry, policy store.Retention, now time.Time) map[string]store.Chosen {
	return policy.Choose(helds(entries), now)
}

func helds(entries []*artifactEntry) []store.Held {
	held := make([]store.Held, len(entries))
	for i, e := range entries {
		held[i] = e.held()
	}
	return held
}

// release applies ch to e: the artifact is deleted, or the scope keys ch
// names are. claimed is false when another collector deleted it first.
func (c *collector) release(ctx context.Context, e *artifactEntry, ch store.Chosen) (claimed bool, err error) {
	if ch.All {
		err := c.writer.delete(ctx, e.order.id)
		if errors.Is(err, store.ErrNotFound) {
			return false, nil
		}
		return err == nil, err
	}
	for _, i := range ch.Scopes {
		if err := c.bucket.removeErr(ctx, e.scopes[i].key); err != nil {
			return false, err
		}
	}
	return true, nil
}

// dropScope removes scope from every artifact put under it, and the
// artifacts left with no scope (see store.Collector).
func (c *collector) dropScope(ctx context.Context, scope store.Scope) (store.CollectReport, error) {
	var rep store.CollectReport
	if scope.IsZero() {
		return rep, fmt.Errorf("s3store: drop scope: empty scope would drop every artifact")
	}
	if err := c.life.usable(ctx); err != nil {
		return rep, fmt.Errorf("s3store: drop scope: %w", err)
	}
	keys, err := c.records.listScopes(ctx, "scope/")
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
		if err := c.bucket.removeErr(ctx, k.key); err != nil {
			return rep, fmt.Errorf("s3store: drop scope: %w", err)
		}
		if left[k.id] > 0 || done[k.id] {
			continue
		}
		done[k.id] = true
		rec, _, ok, err := c.records.get(ctx, k.id)
		if err != nil {
			return rep, fmt.Errorf("s3store: drop scope: %w", err)
		}
		if !ok {
			continue
		}
		// A put under another scope may have come meanwhile.
		if rest, err := c.records.scopeKeys(ctx, k.id); err != nil || len(rest) > 0 {
			if err != nil {
				return rep, fmt.Errorf("s3store: drop scope: %w", err)
			}
			continue
		}
		if claimed, err := c.writer.claimAndDelete(ctx, k.id, rec); err != nil {
			return rep, fmt.Errorf("s3store: drop scope: %w", err)
		} else if !claimed {
			continue
		}
		rep.Add(store.Removal{ID: k.id, Bytes: rec.Size, Why: "drop_on_session_end"}, nil)
	}
	return rep, nil
}

// dropUnscoped deletes the artifacts, older than OrphanGrace, that have
// an order key but no scope: what a put killed after its order key and
// before its scope key left (Put writes them at once). Nobody can list or
// read them. Those the policy removed (why) are gone already.
func (c *collector) dropUnscoped(ctx context.Context, entries []*artifactEntry, chosen map[string]store.Chosen) error {
	cutoff := time.Now().Add(-c.orphanGrace).UnixNano()
	for _, e := range entries {
		if len(e.scopes) > 0 || e.order.created > cutoff {
			continue
		}
		if ch, gone := chosen[e.order.id]; gone && ch.All {
			continue
		}
		c.log.Info("removing an artifact no scope holds", "id", e.order.id)
		if err := c.writer.delete(ctx, e.order.id); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	return nil
}

// sweep removes objects older than OrphanGrace that no listed artifact
// names, and aborts multipart uploads begun before then: what a put or
// delete killed half way left.
func (c *collector) sweep(ctx context.Context, entries []*artifactEntry) error {
	ids, blobs, orders := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, e := range entries {
		ids[e.order.id], blobs[e.order.blob] = true, true
		orders[fmt.Sprintf("%s.%d.%s", e.order.id, e.order.size, e.order.blob)] = true
	}
	cutoff := time.Now().Add(-c.orphanGrace)
	for _, part := range []string{"blobs/", "meta/", "text/", "scope/", "access/", "rorder/", "gone/", "hash/"} {
		for obj, err := range c.bucket.keys(ctx, part, "") {
			if err != nil {
				return err
			}
			// S3 times are whole seconds (truncated): a second's margin.
			if obj.modified.Add(time.Second).After(cutoff) {
				continue
			}
			name := strings.TrimPrefix(obj.key, c.bucket.key(part, ""))
			var known bool
			switch part {
			case "blobs/":
				known = blobs[name]
			case "gone/":
				known = false // a delete that has not finished within the grace died
			case "rorder/":
				_, rest, _ := strings.Cut(name, ".")
				known = orders[rest]
			case "hash/":
				known = hashKnown(ids, name)
			default:
				id, _, _ := strings.Cut(name, "/")
				known = ids[id]
			}
			if !known {
				c.log.Info("removing an orphan object", "key", obj.key, "modified", obj.modified)
				if err := c.bucket.removeErr(ctx, obj.key); err != nil {
					return err
				}
			}
		}
	}
	// A put killed during a multipart upload leaves the upload open: its
	// parts take space but are no object. The lifecycle rule the package
	// doc recommends aborts them too; this serves buckets without one.
	for up, err := range c.bucket.uploads(ctx, c.bucket.key("blobs/", "")) {
		if err != nil {
			return err
		}
		if up.initiated.Add(time.Second).After(cutoff) {
			continue
		}
		c.log.Info("aborting an unfinished multipart upload", "key", up.key, "initiated", up.initiated)
		if err := c.bucket.abortUpload(ctx, up.key, up.id); err != nil {
			return err
		}
	}
	return nil
}

// hashKnown reports whether hash/<ns>/<sha256> (name) may name a listed
// artifact: one of ids is ns and a prefix of the sha256.
func hashKnown(ids map[string]bool, name string) bool {
	ns, sum, ok := strings.Cut(name, "/")
	if !ok {
		return false
	}
	for k := 1; k <= len(sum); k++ {
		if ids[ns+"_"+sum[:k]] {
			return true
		}
	}
	return false
}

package s3store

// Listing: S3 lists keys in byte order, so insertion order is a key
// order: order/ by creation time, rorder/ by its inverse (newest first).
// A page reads the record and scopes of each key, in parallel.

import (
	"context"
	"fmt"
	"iter"
	"math"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/mcpx-dev/mcpx/store"
)

// orderEntry is one key of order/ (or rorder/), parsed.
type orderEntry struct {
	key     string
	name    string // the key without the store's prefix and part
	created int64  // Unix ns
	id      string
	size    int64
	blob    string
}

// parseOrderName reads the name of an order/ or rorder/ key (reverse for
// rorder/).
func parseOrderName(name string, reverse bool) (orderEntry, bool) {
	f := strings.Split(name, ".")
	if len(f) != 4 || len(f[0]) != 20 || !store.ValidID(f[1]) || len(f[3]) != 32 {
		return orderEntry{}, false
	}
	t, err1 := strconv.ParseInt(f[0], 10, 64)
	size, err2 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil || t < 0 || size < 0 {
		return orderEntry{}, false
	}
	if reverse {
		t = math.MaxInt64 - t
	}
	return orderEntry{name: name, created: t, id: f[1], size: size, blob: f[3]}, true
}

// list returns one page of the refs whose scope scope contains, in
// order, with when each artifact was last read when withAccess.
func (r *reader) list(ctx context.Context, scope store.Scope, cursor string, order store.Order, withAccess bool) ([]store.Ref, []time.Time, string, error) {
	if err := r.life.usable(ctx); err != nil {
		return nil, nil, "", fmt.Errorf("s3store: list: %w", err)
	}
	part, tag, reverse := "order/", "o", false
	if order == store.NewestFirst {
		part, tag, reverse = "rorder/", "n", true
	}
	startAfter := ""
	if cursor != "" {
		name, ok := strings.CutPrefix(cursor, tag)
		if _, valid := parseOrderName(name, reverse); !ok || !valid {
			return nil, nil, "", fmt.Errorf("s3store: list: cursor %q: %w", cursor, store.ErrInvalidCursor)
		}
		startAfter = r.bucket.key(part, name)
	}
	next, stop := iter.Pull2(r.bucket.list(ctx, listing{prefix: r.bucket.key(part, ""), startAfter: startAfter, pageKeys: min(1000, 2*r.pageSize)}))
	defer stop()
	var (
		refs   []store.Ref
		access []time.Time
	)
	for {
		var batch []orderEntry
		for {
			obj, err, more := next()
			if !more {
				break
			}
			if err != nil {
				return nil, nil, "", fmt.Errorf("s3store: list: %w", err)
			}
			e, ok := parseOrderName(strings.TrimPrefix(obj.key, r.bucket.key(part, "")), reverse)
			if !ok {
				continue
			}
			batch = append(batch, e)
			if len(batch) == r.pageSize {
				break
			}
		}
		if len(batch) == 0 {
			return refs, access, "", nil
		}
		got, at, err := r.resolve(ctx, batch, scope, withAccess)
		if err != nil {
			return nil, nil, "", fmt.Errorf("s3store: list: %w", err)
		}
		for i, e := range batch {
			if got[i] == nil {
				continue
			}
			refs = append(refs, *got[i])
			access = append(access, at[i])
			if len(refs) == r.pageSize {
				return refs, access, tag + e.name, nil
			}
		}
		if len(batch) < r.pageSize {
			return refs, access, "", nil
		}
	}
}

// resolve reads the refs of entries, seen from filter, in parallel: nil
// where the artifact is gone, stale or in no scope filter contains.
func (r *reader) resolve(ctx context.Context, entries []orderEntry, filter store.Scope, withAccess bool) ([]*store.Ref, []time.Time, error) {
	refs := make([]*store.Ref, len(entries))
	access := make([]time.Time, len(entries))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(parallel)
	for i, e := range entries {
		g.Go(func() error {
			rec, _, ok, err := r.records.get(gctx, e.id)
			if err != nil || !ok || rec.Created.UnixNano() != e.created || rec.Blob != e.blob {
				return err
			}
			ref, ok, err := r.records.refIn(gctx, e.id, rec, filter)
			if err != nil || !ok {
				return err
			}
			refs[i] = &ref
			if withAccess {
				access[i], err = r.access.last(gctx, e.id, rec.Created)
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	return refs, access, nil
}

// parseNanos reads what nanos wrote.
func parseNanos(s string) (time.Time, bool) {
	if len(s) != 20 {
		return time.Time{}, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return time.Time{}, false
	}
	return time.Unix(0, n).UTC(), true
}

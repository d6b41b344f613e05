package s3store

// Listing: S3 lists keys in byte order, so insertion order is a key
// order: order/ by creation time, rorder/ by its inverse (newest first).
// A page reads the record and scopes of each key, in parallel.

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"golang.org/x/sync/errgroup"

	"github.com/mcpx-dev/mcpx/store"
)

var _ store.OrderedLister = (*Store)(nil)

// orderEntry is one key of order/ (or rorder/), parsed.
type orderEntry struct {
	key     string
	name    string // the key without the store's prefix and part
	created int64  // Unix ns
	id      string
	size    int64
	blob    string
}

func (s *Store) orderKey(id string, rec record) string {
	return s.key("order/", fmt.Sprintf("%020d.%s.%d.%s", rec.Created.UnixNano(), id, rec.Size, rec.Blob))
}

func (s *Store) rorderKey(id string, rec record) string {
	return s.key("rorder/", fmt.Sprintf("%020d.%s.%d.%s", math.MaxInt64-rec.Created.UnixNano(), id, rec.Size, rec.Blob))
}

// putOrder writes both order keys of id (again: they are idempotent).
func (s *Store) putOrder(ctx context.Context, id string, rec record) error {
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return s.putBytes(gctx, s.orderKey(id, rec), nil) })
	g.Go(func() error { return s.putBytes(gctx, s.rorderKey(id, rec), nil) })
	return g.Wait()
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

// List returns one page of the refs whose scope scope contains, oldest
// first (see store.Store.List).
func (s *Store) List(ctx context.Context, scope store.Scope, cursor string) ([]store.Ref, string, error) {
	return s.ListOrder(ctx, scope, cursor, store.OldestFirst)
}

// ListOrder is List in either order. A cursor of one order is invalid
// in the other.
func (s *Store) ListOrder(ctx context.Context, scope store.Scope, cursor string, order store.Order) ([]store.Ref, string, error) {
	refs, _, next, err := s.listPage(ctx, scope, cursor, order, false)
	return refs, next, err
}

// ListAccess is ListOrder with when each artifact was last read (or
// created, when never read).
func (s *Store) ListAccess(ctx context.Context, scope store.Scope, cursor string, order store.Order) ([]store.Ref, []time.Time, string, error) {
	return s.listPage(ctx, scope, cursor, order, true)
}

func (s *Store) listPage(ctx context.Context, scope store.Scope, cursor string, order store.Order, withAccess bool) ([]store.Ref, []time.Time, string, error) {
	if err := s.usable(ctx); err != nil {
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
		startAfter = s.key(part, name)
	}
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	keys := s.client.ListObjects(lctx, s.bucket, minio.ListObjectsOptions{
		Prefix: s.key(part, ""), StartAfter: startAfter, Recursive: true, MaxKeys: min(1000, 2*s.pageSize)})
	var (
		refs   []store.Ref
		access []time.Time
	)
	for {
		var batch []orderEntry
		for obj := range keys {
			if obj.Err != nil {
				return nil, nil, "", fmt.Errorf("s3store: list: %w", obj.Err)
			}
			e, ok := parseOrderName(strings.TrimPrefix(obj.Key, s.key(part, "")), reverse)
			if !ok {
				continue
			}
			batch = append(batch, e)
			if len(batch) == s.pageSize {
				break
			}
		}
		if len(batch) == 0 {
			return refs, access, "", nil
		}
		got, at, err := s.resolve(ctx, batch, scope, withAccess)
		if err != nil {
			return nil, nil, "", fmt.Errorf("s3store: list: %w", err)
		}
		for i, e := range batch {
			if got[i] == nil {
				continue
			}
			refs = append(refs, *got[i])
			access = append(access, at[i])
			if len(refs) == s.pageSize {
				return refs, access, tag + e.name, nil
			}
		}
		if len(batch) < s.pageSize {
			return refs, access, "", nil
		}
	}
}

// resolve reads the refs of entries, seen from filter, in parallel: nil
// where the artifact is gone, stale or in no scope filter contains.
func (s *Store) resolve(ctx context.Context, entries []orderEntry, filter store.Scope, withAccess bool) ([]*store.Ref, []time.Time, error) {
	refs := make([]*store.Ref, len(entries))
	access := make([]time.Time, len(entries))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(parallel)
	for i, e := range entries {
		g.Go(func() error {
			rec, _, ok, err := s.getRecord(gctx, e.id)
			if err != nil || !ok || rec.Created.UnixNano() != e.created || rec.Blob != e.blob {
				return err
			}
			ref, ok, err := s.refIn(gctx, e.id, rec, filter)
			if err != nil || !ok {
				return err
			}
			refs[i] = &ref
			if withAccess {
				access[i], err = s.lastAccess(gctx, e.id, rec.Created)
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	return refs, access, nil
}

// lastAccess is when id was last read or put again, else created.
func (s *Store) lastAccess(ctx context.Context, id string, created time.Time) (time.Time, error) {
	last := created
	for obj := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.key("access/", id+"/"), Recursive: true}) {
		if obj.Err != nil {
			return time.Time{}, obj.Err
		}
		if t, ok := parseNanos(obj.Key[strings.LastIndexByte(obj.Key, '/')+1:]); ok && t.After(last) {
			last = t
		}
	}
	return last, nil
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

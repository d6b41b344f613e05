package s3store

// The artifacts' records in the bucket: meta/<id>, hash/<ns>/<sha256>,
// the scope keys (scope.go) and the order keys (list.go), and the refs
// read from them.

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/mcpx-dev/mcpx/store"
)

// record is meta/<id>: what an artifact is, whichever scope asks.
type record struct {
	SHA256   string          `json:"sha256"`
	Size     int64           `json:"size"`
	MIMEType string          `json:"mime_type,omitempty"`
	Created  time.Time       `json:"created_at"`
	Blob     string          `json:"blob"`
	Content  json.RawMessage `json:"content,omitempty"`
}

// naming is the body of a scope/ key: what the latest put under that
// scope called the bytes (and the scope itself when too long for the key).
type naming struct {
	Scope    *store.Scope `json:"scope,omitempty"`
	Filename string       `json:"filename,omitempty"`
	Source   store.Source `json:"source"`
}

// namingOf is the scope/ body a put with o writes.
func namingOf(o store.PutOptions, prevName string) naming {
	n := naming{Filename: o.Filename, Source: o.Source}
	if n.Filename == "" {
		n.Filename = prevName
	}
	if _, inKey := encodeScope(o.Scope); !inKey {
		sc := o.Scope
		n.Scope = &sc
	}
	return n
}

// ref is the Ref of the artifact id seen from scope sc.
func (r record) ref(id string, sc store.Scope) store.Ref {
	return store.Ref{ID: id, MIMEType: r.MIMEType, SizeBytes: r.Size, SHA256: r.SHA256,
		Scope: sc, Created: r.Created, Content: r.Content}
}

// records reads and names the records of artifacts; it remembers which
// blob holds those it read lately (recent).
type records struct {
	bucket *bucket
	recent *recentBlobs
}

// get reads meta/<id>; ok is false when it does not exist.
func (r *records) get(ctx context.Context, id string) (rec record, etag string, ok bool, err error) {
	b, etag, err := r.bucket.getBytes(ctx, r.bucket.key("meta/", id), 1<<20)
	if isNotFound(err) {
		return record{}, "", false, nil
	}
	if err != nil {
		return record{}, "", false, err
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return record{}, "", false, fmt.Errorf("meta/%s: %w", id, err)
	}
	return rec, etag, true, nil
}

// naming reads the body of the scope key key.
func (r *records) naming(ctx context.Context, key string) (naming, error) {
	var n naming
	b, _, err := r.bucket.getBytes(ctx, key, 1<<20)
	if err != nil {
		return n, err
	}
	if len(b) == 0 {
		return n, nil
	}
	return n, json.Unmarshal(b, &n)
}

// stat returns the ref (with the artifact's first scope) and record of id.
func (r *records) stat(ctx context.Context, id string) (store.Ref, record, error) {
	rec, keys, err := r.withScopes(ctx, id)
	if err != nil {
		return store.Ref{}, record{}, err
	}
	ref, ok, err := r.refOf(ctx, id, rec, keys, store.Scope{})
	if err != nil {
		return store.Ref{}, record{}, err
	}
	if !ok {
		return store.Ref{}, record{}, store.ErrNotFound // being deleted
	}
	r.recent.add(id, rec.Blob)
	return ref, rec, nil
}

// withScopes returns the record of id and its scope keys, read at once:
// one round trip, not two. A missing record is store.ErrNotFound.
func (r *records) withScopes(ctx context.Context, id string) (rec record, keys []scopeEntry, err error) {
	var ok bool
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) { rec, _, ok, err = r.get(gctx, id); return err })
	g.Go(func() (err error) { keys, err = r.scopeKeys(gctx, id); return err })
	if err := g.Wait(); err != nil {
		return record{}, nil, err
	}
	if !ok {
		return record{}, nil, store.ErrNotFound
	}
	return rec, keys, nil
}

// refIn returns the ref of id with the first of its scopes that filter
// contains and that scope's name; ok is false when none is.
func (r *records) refIn(ctx context.Context, id string, rec record, filter store.Scope) (store.Ref, bool, error) {
	keys, err := r.scopeKeys(ctx, id)
	if err != nil {
		return store.Ref{}, false, err
	}
	return r.refOf(ctx, id, rec, keys, filter)
}

// refOf is refIn with the scope keys listed.
func (r *records) refOf(ctx context.Context, id string, rec record, keys []scopeEntry, filter store.Scope) (store.Ref, bool, error) {
	for _, k := range keys {
		if !filter.Contains(k.scope) {
			continue
		}
		ref, err := r.refAs(ctx, id, rec, k)
		return ref, err == nil, err
	}
	return store.Ref{}, false, nil
}

// refAs is the ref of id as its scope key k holds it: k's scope, its
// creation, and the name and source of its latest put.
func (r *records) refAs(ctx context.Context, id string, rec record, k scopeEntry) (store.Ref, error) {
	ref := rec.ref(id, k.scope)
	ref.Created = k.created(rec)
	nm, err := r.naming(ctx, k.key)
	if err != nil && !isNotFound(err) {
		return store.Ref{}, err
	}
	ref.Filename, ref.Source = nm.Filename, nm.Source
	return ref, nil
}

// byContent finds the artifact of sum in ns.
func (r *records) byContent(ctx context.Context, ns, sum string) (id string, rec record, found bool, err error) {
	b, _, err := r.bucket.getBytes(ctx, r.bucket.key("hash/", ns+"/"+sum), 1024)
	if isNotFound(err) {
		return "", record{}, false, nil
	}
	if err != nil {
		return "", record{}, false, err
	}
	id = string(b)
	if !store.ValidID(id) {
		return "", record{}, false, nil
	}
	rec, _, ok, err := r.get(ctx, id)
	if err != nil || !ok || rec.SHA256 != sum {
		return "", record{}, false, err
	}
	return id, rec, true, nil
}

func (r *records) orderKey(id string, rec record) string {
	return r.bucket.key("order/", fmt.Sprintf("%020d.%s.%d.%s", rec.Created.UnixNano(), id, rec.Size, rec.Blob))
}

func (r *records) rorderKey(id string, rec record) string {
	return r.bucket.key("rorder/", fmt.Sprintf("%020d.%s.%d.%s", math.MaxInt64-rec.Created.UnixNano(), id, rec.Size, rec.Blob))
}

// putOrder writes both order keys of id (again: they are idempotent).
func (r *records) putOrder(ctx context.Context, id string, rec record) error {
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return r.bucket.putBytes(gctx, r.orderKey(id, rec), nil) })
	g.Go(func() error { return r.bucket.putBytes(gctx, r.rorderKey(id, rec), nil) })
	return g.Wait()
}

// snapshot lists every artifact with its scopes and last access: order/,
// scope/ and access/ once each, no bodies.
func (r *records) snapshot(ctx context.Context) ([]*artifactEntry, error) {
	var out []*artifactEntry
	byID := map[string]*artifactEntry{}
	for obj, err := range r.bucket.keys(ctx, "order/", "") {
		if err != nil {
			return nil, err
		}
		e, ok := parseOrderName(strings.TrimPrefix(obj.key, r.bucket.key("order/", "")), false)
		if !ok || byID[e.id] != nil {
			continue
		}
		e.key = obj.key
		a := &artifactEntry{order: e, lastAccess: e.created}
		byID[e.id] = a
		out = append(out, a)
	}
	scopes, err := r.listScopes(ctx, "scope/")
	if err != nil {
		return nil, err
	}
	for _, sc := range scopes {
		if a := byID[sc.id]; a != nil {
			a.scopes = append(a.scopes, sc)
		}
	}
	for obj, err := range r.bucket.keys(ctx, "access/", "") {
		if err != nil {
			return nil, err
		}
		id, at, _ := strings.Cut(strings.TrimPrefix(obj.key, r.bucket.key("access/", "")), "/")
		if t, ok := parseNanos(at); ok && byID[id] != nil {
			byID[id].lastAccess = max(byID[id].lastAccess, t.UnixNano())
		}
	}
	return out, nil
}

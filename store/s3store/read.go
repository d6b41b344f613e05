package s3store

// Reads: an artifact's record and scope keys, then its bytes; pages of
// the order keys (list.go).

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/internal/catalog"
)

// reader answers Get, Stat, Owned, InScope, Exists and List.
type reader struct {
	pageSize int
	life     *openState
	bucket   *bucket
	records  *records
	access   *accessLog
}

// stat returns the artifact's ref and record.
func (r *reader) stat(ctx context.Context, id string) (store.Ref, record, error) {
	if err := r.life.usableID(ctx, id); err != nil {
		return store.Ref{}, record{}, err
	}
	return r.records.stat(ctx, id)
}

// get returns a reader of the artifact's bytes (or rng of them) and its
// ref, and records the read for lru.
func (r *reader) get(ctx context.Context, id string, rng *store.Range) (io.ReadCloser, store.Ref, error) {
	ref, rec, err := r.stat(ctx, id)
	if err != nil {
		return nil, store.Ref{}, fmt.Errorf("s3store: artifact[%s]: %w", store.QuoteID(id), err)
	}
	off, n, err := catalog.Bounds(rng, rec.Size)
	if err != nil {
		return nil, store.Ref{}, fmt.Errorf("s3store: artifact[%s]: %w", store.QuoteID(id), err)
	}
	r.access.touch(ctx, id, false)
	if n == 0 {
		return io.NopCloser(bytes.NewReader(nil)), ref, nil
	}
	rc, err := r.bucket.get(ctx, r.bucket.key("blobs/", rec.Blob), off, n, rec.Size)
	if err != nil {
		if isNotFound(err) {
			err = fmt.Errorf("%w (its bytes are gone)", store.ErrNotFound)
		}
		return nil, store.Ref{}, fmt.Errorf("s3store: artifact[%s]: %w", store.QuoteID(id), err)
	}
	return rc, ref, nil
}

// owned returns the artifact as owner holds it (see store.Store.Owned):
// its record and one listing of its scope keys, then the names of
// owner's.
func (r *reader) owned(ctx context.Context, id string, owner store.Owner) ([]store.Ref, error) {
	if err := r.life.usableID(ctx, id); err != nil {
		return nil, fmt.Errorf("s3store: artifact[%s]: %w", store.QuoteID(id), err)
	}
	rec, keys, err := r.records.withScopes(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("s3store: artifact[%s]: %w", store.QuoteID(id), err)
	}
	var refs []store.Ref
	for _, k := range keys {
		if !owner.Holds(k.scope) {
			continue
		}
		ref, err := r.records.refAs(ctx, id, rec, k)
		if err != nil {
			return nil, fmt.Errorf("s3store: artifact[%s]: %w", store.QuoteID(id), err)
		}
		refs = append(refs, ref)
	}
	return refs, nil
}

// inScope reports whether the artifact was put under a scope that scope
// contains: one listing of its scope keys.
func (r *reader) inScope(ctx context.Context, id string, scope store.Scope) (bool, error) {
	if err := r.life.usableID(ctx, id); err != nil {
		return false, fmt.Errorf("s3store: artifact[%s]: %w", store.QuoteID(id), err)
	}
	keys, err := r.records.scopeKeys(ctx, id)
	if err != nil {
		return false, fmt.Errorf("s3store: artifact[%s]: %w", store.QuoteID(id), err)
	}
	if len(keys) == 0 {
		if _, _, ok, err := r.records.get(ctx, id); err != nil || !ok {
			if err == nil {
				err = store.ErrNotFound
			}
			return false, fmt.Errorf("s3store: artifact[%s]: %w", store.QuoteID(id), err)
		}
	}
	for _, k := range keys {
		if scope.Contains(k.scope) {
			return true, nil
		}
	}
	return false, nil
}

// exists reports whether the artifact is stored.
func (r *reader) exists(ctx context.Context, id string) (bool, error) {
	if err := r.life.usableID(ctx, id); err != nil {
		return false, fmt.Errorf("s3store: artifact[%s]: %w", store.QuoteID(id), err)
	}
	_, _, ok, err := r.records.get(ctx, id)
	if err != nil {
		return false, fmt.Errorf("s3store: artifact[%s]: %w", store.QuoteID(id), err)
	}
	return ok, nil
}

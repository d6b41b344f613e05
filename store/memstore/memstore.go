// Package memstore is an in-memory artifact store: for tests, for embedders
// that keep artifacts for one process lifetime, and as the reference the
// conformance suite (storetest) is checked against.
//
// Bytes are kept once per sha256, however many namespaces or scopes hold
// them. Nothing is evicted by itself: Collect (store.Collector) applies a
// retention policy when called; otherwise the store grows until Delete or
// Close.
package memstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/internal/catalog"
	"github.com/mcpx-dev/mcpx/store/internal/putio"
)

// DefaultPageSize is the number of refs List returns per page by default.
const DefaultPageSize = 100

// Config configures a Store. The zero value means the defaults.
//
//	s := memstore.New(memstore.Config{PageSize: 10})
type Config struct {
	// PageSize is how many refs List returns per page; n < 1 means the
	// default. Defaults to DefaultPageSize.
	PageSize int
	// IDPrefixLen is how many sha256 hex characters a new id starts with;
	// n < 1 means the default. Defaults to store.DefaultIDPrefixLen.
	IDPrefixLen int
}

// Store is the in-memory store. It is safe for concurrent use.
type Store struct {
	pageSize    int
	idPrefixLen int

	mu     sync.RWMutex
	closed bool
	cat    *catalog.Catalog
	blobs  map[string][]byte // sha256 → bytes, shared by every id that holds them
	// names holds, per id and per scope it was put under, the file name
	// and source of the latest put under that scope: the same bytes found
	// again are listed under their latest name, and one principal never
	// sees the name another gave them.
	names map[string]map[store.Scope]naming
	// access holds when each id was last read or put again (Unix ns);
	// an id missing here was last used when created.
	access map[string]int64
	// lines holds, per id, the lines Annotate indexed for Search.
	lines map[string]*indexed
	// content is each annotated artifact's summary (Ref.Content).
	content map[string]json.RawMessage
}

// naming is what a put called its bytes.
type naming struct {
	filename string
	source   store.Source
}

var (
	_ store.Store     = (*Store)(nil)
	_ store.Annotator = (*Store)(nil)
)

// New returns an empty store.
func New(cfg Config) *Store {
	s := &Store{
		pageSize:    cfg.PageSize,
		idPrefixLen: cfg.IDPrefixLen,
		cat:         catalog.New(),
		blobs:       make(map[string][]byte),
		names:       make(map[string]map[store.Scope]naming),
		access:      make(map[string]int64),
		content:     make(map[string]json.RawMessage),
	}
	if s.pageSize < 1 {
		s.pageSize = DefaultPageSize
	}
	if s.idPrefixLen < 1 {
		s.idPrefixLen = store.DefaultIDPrefixLen
	}
	return s
}

// Put reads r into memory, hashing as it reads, and stores it (see
// store.Store.Put). The returned ref carries o.Scope, o.Filename (when
// set) and o.Source; an artifact put again keeps its id and first MIME
// type, and is listed under the name, source and first creation of each
// scope.
func (s *Store) Put(ctx context.Context, r io.Reader, o store.PutOptions) (store.Ref, error) {
	ns := store.SanitizeNamespace(o.Namespace)
	if err := s.checkOpen(); err != nil {
		return store.Ref{}, fmt.Errorf("memstore: put[%s]: %w", ns, err)
	}
	var buf bytes.Buffer
	if l, ok := r.(interface{ Len() int }); ok {
		// bytes.Reader, strings.Reader, bytes.Buffer: size known up front.
		hint := int64(l.Len())
		if o.MaxBytes > 0 {
			hint = min(hint, o.MaxBytes+1)
		}
		buf.Grow(int(hint))
	}
	n, sum, err := putio.Copy(ctx, &buf, r, o.MaxBytes)
	if err != nil {
		return store.Ref{}, fmt.Errorf("memstore: put[%s]: %w", ns, err)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return store.Ref{}, fmt.Errorf("memstore: put[%s]: %w", ns, store.ErrClosed)
	}
	if e, ok := s.cat.ByContent(ns, sum); ok {
		if !o.Quota.IsZero() {
			if err := s.checkQuota(o.Quota, o.Scope, e.Ref.ID, e.Ref.SizeBytes); err != nil {
				return store.Ref{}, fmt.Errorf("memstore: put[%s]: %w", ns, err)
			}
		}
		now := time.Now().UTC().Round(0)
		s.cat.AddScope(e.Ref.ID, o.Scope, now)
		s.access[e.Ref.ID] = now.UnixNano()
		s.rename(e.Ref.ID, o)
		ref := s.named(e.As(e.Index(o.Scope)))
		ref.AlreadyStored = true
		return ref, nil
	}
	if !o.Quota.IsZero() {
		if err := s.checkQuota(o.Quota, o.Scope, "", n); err != nil {
			return store.Ref{}, fmt.Errorf("memstore: put[%s]: %w", ns, err)
		}
	}
	id, err := s.cat.AllocateID(ns, sum, s.idPrefixLen)
	if err != nil {
		return store.Ref{}, fmt.Errorf("memstore: put[%s]: %w", ns, err)
	}
	ref := store.NewRef(id, sum, n, o)
	if _, err := s.cat.Insert(s.cat.NextSeq(), ref); err != nil {
		return store.Ref{}, fmt.Errorf("memstore: artifact[%s]: %w", store.QuoteID(id), err)
	}
	s.rename(id, o)
	if _, ok := s.blobs[sum]; !ok {
		b := buf.Bytes()
		if cap(b)-len(b) > len(b)/8 {
			b = bytes.Clone(b) // do not keep a doubled buffer's slack
		}
		s.blobs[sum] = b[:len(b):len(b)]
	}
	return ref, nil
}

// Get returns a reader of the artifact's bytes, or of rng of them.
func (s *Store) Get(ctx context.Context, id string, rng *store.Range) (io.ReadCloser, store.Ref, error) {
	e, data, err := s.lookup(ctx, id)
	if err != nil {
		return nil, store.Ref{}, err
	}
	off, n, err := catalog.Bounds(rng, e.SizeBytes)
	if err != nil {
		return nil, store.Ref{}, fmt.Errorf("memstore: artifact[%s]: %w", store.QuoteID(id), err)
	}
	s.mu.Lock()
	if !s.closed {
		s.access[id] = time.Now().UnixNano()
	}
	s.mu.Unlock()
	return bytesReader{bytes.NewReader(data[off : off+n])}, e, nil
}

// Stat returns the artifact's ref.
func (s *Store) Stat(ctx context.Context, id string) (store.Ref, error) {
	ref, _, err := s.lookup(ctx, id)
	return ref, err
}

// InScope reports whether the artifact was put under a scope that scope
// contains.
func (s *Store) InScope(ctx context.Context, id string, scope store.Scope) (in bool, err error) {
	err = s.read(ctx, id, func(e *catalog.Entry) { _, in = e.ScopeOf(scope) })
	return in, err
}

// Owned returns the artifact as owner holds it (see store.Store.Owned).
func (s *Store) Owned(ctx context.Context, id string, owner store.Owner) (refs []store.Ref, err error) {
	err = s.read(ctx, id, func(e *catalog.Entry) {
		for i, h := range e.Scopes {
			if owner.Holds(h.Scope) {
				refs = append(refs, s.named(e.As(i)))
			}
		}
	})
	return refs, err
}

// Exists reports whether the artifact is stored.
func (s *Store) Exists(ctx context.Context, id string) (bool, error) {
	_, _, err := s.lookup(ctx, id)
	switch {
	case err == nil:
		return true, nil
	case isNotFound(err):
		return false, nil
	}
	return false, err
}

// Delete removes the artifact, and its bytes when no other id holds them.
func (s *Store) Delete(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memstore: artifact[%s]: %w", store.QuoteID(id), err)
	}
	if !store.ValidID(id) {
		return fmt.Errorf("memstore: artifact[%s]: %w", store.QuoteID(id), store.ErrInvalidID)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("memstore: artifact[%s]: %w", store.QuoteID(id), store.ErrClosed)
	}
	if _, ok := s.cat.Get(id); !ok {
		return fmt.Errorf("memstore: artifact[%s]: %w", store.QuoteID(id), store.ErrNotFound)
	}
	s.remove(id)
	return nil
}

// List returns one page of the refs whose scope scope contains, oldest
// first. An artifact put under several scopes is listed once, with the first
// of its scopes that scope contains.
func (s *Store) List(ctx context.Context, scope store.Scope, cursor string) ([]store.Ref, string, error) {
	if err := ctx.Err(); err != nil {
		return nil, "", fmt.Errorf("memstore: list: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, "", fmt.Errorf("memstore: list: %w", store.ErrClosed)
	}
	refs, next, err := s.cat.List(scope, cursor, s.pageSize)
	if err != nil {
		return nil, "", fmt.Errorf("memstore: list: %w", err)
	}
	for i := range refs {
		refs[i] = s.named(refs[i])
	}
	return refs, next, nil
}

// Close drops every artifact. It is idempotent and ignores ctx.
func (s *Store) Close(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.cat = catalog.New()
	s.blobs = nil
	s.names = nil
	s.access = nil
	s.lines = nil
	s.content = nil
	return nil
}

func (s *Store) checkOpen() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return store.ErrClosed
	}
	return nil
}

func (s *Store) lookup(ctx context.Context, id string) (ref store.Ref, data []byte, err error) {
	err = s.read(ctx, id, func(e *catalog.Entry) { ref, data = s.named(e.Ref), s.blobs[e.Ref.SHA256] })
	return ref, data, err
}

// read runs f on the entry of id under the read lock, once ctx, id and
// the store check out; a missing id is store.ErrNotFound.
func (s *Store) read(ctx context.Context, id string, f func(*catalog.Entry)) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memstore: artifact[%s]: %w", store.QuoteID(id), err)
	}
	if !store.ValidID(id) {
		return fmt.Errorf("memstore: artifact[%s]: %w", store.QuoteID(id), store.ErrInvalidID)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return fmt.Errorf("memstore: artifact[%s]: %w", store.QuoteID(id), store.ErrClosed)
	}
	e, ok := s.cat.Get(id)
	if !ok {
		return fmt.Errorf("memstore: artifact[%s]: %w", store.QuoteID(id), store.ErrNotFound)
	}
	f(e)
	return nil
}

// rename records o's file name and source as the latest under o.Scope.
// The caller holds s.mu.
func (s *Store) rename(id string, o store.PutOptions) {
	byScope := s.names[id]
	if byScope == nil {
		byScope = make(map[store.Scope]naming, 1)
		s.names[id] = byScope
	}
	n := byScope[o.Scope]
	if o.Filename != "" {
		n.filename = o.Filename
	}
	n.source = o.Source
	byScope[o.Scope] = n
}

// named returns ref with the name and source of the latest put under
// ref.Scope, and its content summary. The caller holds s.mu (read or
// write).
func (s *Store) named(ref store.Ref) store.Ref {
	ref.Content = s.content[ref.ID]
	if n, ok := s.names[ref.ID][ref.Scope]; ok {
		// Another scope's name is not this one's to see.
		ref.Filename, ref.Source = n.filename, n.source
	}
	return ref
}

// bytesReader is what Get returns: a reader that is also an io.ReaderAt
// (content summaries read at offsets) and closes to nothing.
type bytesReader struct{ *bytes.Reader }

func (bytesReader) Close() error { return nil }

func isNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }

// Package catalog is the in-memory index that the store backends share: refs
// by id, ids by (namespace, sha256), per-blob reference counts, the scopes
// each artifact was put under, and the insertion order List pages through.
//
// A Catalog is not safe for concurrent use: backends guard it with their own
// lock. It does no I/O.
package catalog

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/mcpx-dev/mcpx/store"
)

// Entry is one artifact: its ref (whose Scope is the first scope it was put
// under), every scope it was put under with when it first was, and its
// position in insertion order.
type Entry struct {
	Seq    uint64
	Ref    store.Ref
	Scopes []store.HeldScope
}

// As returns e's ref as its i-th scope holds it: that scope, and when it
// was first put under it.
func (e *Entry) As(i int) store.Ref {
	ref := e.Ref
	ref.Scope = e.Scopes[i].Scope
	ref.Created = time.Unix(0, e.Scopes[i].Created).UTC()
	return ref
}

// Held returns e as a collector weighs it, last used at lastAccess (Unix
// ns; at least its creation).
func (e *Entry) Held(lastAccess int64) store.Held {
	return store.Held{ID: e.Ref.ID, Size: e.Ref.SizeBytes, Created: e.Ref.Created.UnixNano(),
		LastAccess: max(lastAccess, e.Ref.Created.UnixNano()), Order: int64(e.Seq), Scopes: slices.Clone(e.Scopes)}
}

type contentKey struct{ namespace, sha256 string }

// Catalog indexes entries. The zero value is not usable: call New.
type Catalog struct {
	byID      map[string]*Entry
	byContent map[contentKey]*Entry
	blobRefs  map[string]int // sha256 → number of entries holding it
	order     []*Entry       // sorted by Seq
	lastSeq   uint64
}

// New returns an empty catalog.
func New() *Catalog {
	return &Catalog{
		byID:      make(map[string]*Entry),
		byContent: make(map[contentKey]*Entry),
		blobRefs:  make(map[string]int),
	}
}

// Len returns the number of entries.
func (c *Catalog) Len() int { return len(c.order) }

// Get returns the entry with id. The entry is the catalog's own: callers
// must not modify it.
func (c *Catalog) Get(id string) (*Entry, bool) {
	e, ok := c.byID[id]
	return e, ok
}

// ByContent returns the entry holding the content with digest sha256hex in
// namespace (sanitized here), if any.
func (c *Catalog) ByContent(namespace, sha256hex string) (*Entry, bool) {
	e, ok := c.byContent[contentKey{store.SanitizeNamespace(namespace), sha256hex}]
	return e, ok
}

// AllocateID returns a free id for new content (see store.AllocateID).
// Callers check ByContent first.
func (c *Catalog) AllocateID(namespace, sha256hex string, prefixLen int) (string, error) {
	return store.AllocateID(namespace, sha256hex, prefixLen, func(id string) (string, bool) {
		e, ok := c.byID[id]
		if !ok {
			return "", false
		}
		return e.Ref.SHA256, true
	})
}

// NextSeq returns the sequence number the next new entry gets.
func (c *Catalog) NextSeq() uint64 { return c.lastSeq + 1 }

// AdvanceSeq makes sure new entries get sequence numbers above seq.
func (c *Catalog) AdvanceSeq(seq uint64) { c.lastSeq = max(c.lastSeq, seq) }

// LastSeq returns the highest sequence number seen.
func (c *Catalog) LastSeq() uint64 { return c.lastSeq }

// Insert adds a new entry: ref with the scope it was first put under. It
// fails when the id is already present or the ref is malformed; replaying a
// journal may insert out of order (the order is kept sorted by seq).
func (c *Catalog) Insert(seq uint64, ref store.Ref) (*Entry, error) {
	ns, _, ok := store.SplitID(ref.ID)
	if !ok {
		return nil, fmt.Errorf("catalog: artifact[%s]: %w", ref.ID, store.ErrInvalidID)
	}
	if !store.ValidSHA256(ref.SHA256) {
		return nil, fmt.Errorf("catalog: artifact[%s]: bad sha256 %q", ref.ID, ref.SHA256)
	}
	if seq == 0 {
		return nil, fmt.Errorf("catalog: artifact[%s]: zero sequence number", ref.ID)
	}
	if _, dup := c.byID[ref.ID]; dup {
		return nil, fmt.Errorf("catalog: artifact[%s]: already present", ref.ID)
	}
	key := contentKey{ns, ref.SHA256}
	if _, dup := c.byContent[key]; dup {
		return nil, fmt.Errorf("catalog: artifact[%s]: content already present under another id", ref.ID)
	}
	e := &Entry{Seq: seq, Ref: ref, Scopes: []store.HeldScope{{Scope: ref.Scope, Created: ref.Created.UnixNano()}}}
	c.byID[ref.ID] = e
	c.byContent[key] = e
	c.blobRefs[ref.SHA256]++
	if seq > c.lastSeq {
		c.lastSeq = seq
		c.order = append(c.order, e)
	} else {
		i, _ := slices.BinarySearchFunc(c.order, seq, cmpSeq)
		c.order = slices.Insert(c.order, i, e)
	}
	return e, nil
}

// AddScope records scope, first put under at created, for the entry with
// id. It reports false when the entry is missing or already has the
// scope.
func (c *Catalog) AddScope(id string, scope store.Scope, created time.Time) bool {
	e, ok := c.byID[id]
	if !ok || e.Index(scope) >= 0 {
		return false
	}
	e.Scopes = append(e.Scopes, store.HeldScope{Scope: scope, Created: created.UnixNano()})
	return true
}

// Index returns the index of sc in e.Scopes, -1 when e was never put
// under it.
func (e *Entry) Index(sc store.Scope) int {
	return slices.IndexFunc(e.Scopes, func(h store.HeldScope) bool { return h.Scope == sc })
}

// ScopeOf returns the index in e.Scopes of the first scope that filter
// contains, and false when none is.
func (e *Entry) ScopeOf(filter store.Scope) (int, bool) {
	i := slices.IndexFunc(e.Scopes, func(h store.HeldScope) bool { return filter.Contains(h.Scope) })
	return i, i >= 0
}

// Remove deletes the entry with id and reports whether its blob is now held
// by no entry (the caller may free it).
func (c *Catalog) Remove(id string) (e *Entry, blobFree, ok bool) {
	e, ok = c.byID[id]
	if !ok {
		return nil, false, false
	}
	delete(c.byID, id)
	ns, _, _ := store.SplitID(id)
	delete(c.byContent, contentKey{ns, e.Ref.SHA256})
	c.blobRefs[e.Ref.SHA256]--
	if c.blobRefs[e.Ref.SHA256] <= 0 {
		delete(c.blobRefs, e.Ref.SHA256)
		blobFree = true
	}
	if i, found := slices.BinarySearchFunc(c.order, e.Seq, cmpSeq); found {
		c.order = slices.Delete(c.order, i, i+1)
	}
	return e, blobFree, true
}

// BlobRefs returns how many entries hold the blob with digest sha256hex.
func (c *Catalog) BlobRefs(sha256hex string) int { return c.blobRefs[sha256hex] }

// Entries returns the entries in insertion order. The slice is a copy; the
// entries are the catalog's own.
func (c *Catalog) Entries() []*Entry { return slices.Clone(c.order) }

// List returns up to pageSize refs whose scopes include one contained in
// filter, after cursor, in insertion order. Each ref carries the first of
// its scopes that filter contains, and that scope's creation. next is ""
// when no match follows.
func (c *Catalog) List(filter store.Scope, cursor string, pageSize int) (refs []store.Ref, next string, err error) {
	after, err := DecodeCursor(cursor)
	if err != nil {
		return nil, "", err
	}
	if pageSize < 1 {
		pageSize = 1
	}
	i, found := slices.BinarySearchFunc(c.order, after, cmpSeq)
	if found {
		i++
	}
	var last uint64
	for ; i < len(c.order); i++ {
		e := c.order[i]
		j, ok := e.ScopeOf(filter)
		if !ok {
			continue
		}
		if len(refs) == pageSize {
			return refs, EncodeCursor(last), nil
		}
		refs = append(refs, e.As(j))
		last = e.Seq
	}
	return refs, "", nil
}

func cmpSeq(e *Entry, seq uint64) int {
	switch {
	case e.Seq < seq:
		return -1
	case e.Seq > seq:
		return 1
	}
	return 0
}

// EncodeCursor returns the List cursor that resumes after the entry with
// sequence number seq.
func EncodeCursor(seq uint64) string { return "s" + strconv.FormatUint(seq, 36) }

// DecodeCursor parses a cursor from EncodeCursor; "" is the start (0).
func DecodeCursor(cursor string) (uint64, error) {
	if cursor == "" {
		return 0, nil
	}
	if len(cursor) < 2 || cursor[0] != 's' {
		return 0, fmt.Errorf("cursor[%s]: %w", cursor, store.ErrInvalidCursor)
	}
	seq, err := strconv.ParseUint(cursor[1:], 36, 64)
	if err != nil || seq == 0 || EncodeCursor(seq) != cursor {
		return 0, fmt.Errorf("cursor[%s]: %w", cursor, store.ErrInvalidCursor)
	}
	return seq, nil
}

// Bounds resolves rng against an artifact of size bytes: the offset and the
// number of bytes to read. A nil rng is the whole artifact.
//
// # Errors
//
// store.ErrInvalidRange (wrapped) when Offset is negative or past size,
// Length is below -1, or the range ends past size.
func Bounds(rng *store.Range, size int64) (off, n int64, err error) {
	if rng == nil {
		return 0, size, nil
	}
	off, n = rng.Offset, rng.Length
	if off < 0 || off > size || n < -1 {
		return 0, 0, fmt.Errorf("range[%d,%d] of %d bytes: %w", rng.Offset, rng.Length, size, store.ErrInvalidRange)
	}
	if n == -1 {
		return off, size - off, nil
	}
	if n > size-off {
		return 0, 0, fmt.Errorf("range[%d,%d] of %d bytes: %w", rng.Offset, rng.Length, size, store.ErrInvalidRange)
	}
	return off, n, nil
}

// Package store holds the artifact store contract that every backend
// implements, the sentinel errors callers match, and the id scheme.
//
// A store keeps the bytes that mcpx removes from tool results. Ids are
// content addressed, "{namespace}_{sha256 prefix}": the same bytes put twice
// under one namespace get the same id, and two different contents never share
// one (the prefix grows on a clash). Backends live in sub-packages:
// memstore, fsstore (the embedded default) and noopstore; storetest is the
// conformance suite they all run.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"time"
)

// Sentinel errors. Backends wrap them with %w so callers can use errors.Is.
var (
	// ErrNotFound is returned when no artifact has the id.
	ErrNotFound = errors.New("store: artifact not found")
	// ErrNotStored is returned by stores that keep no bytes (noopstore) when
	// asked to read them back.
	ErrNotStored = errors.New("store: artifact bytes were not stored")
	// ErrInvalidRange is returned by Get for a range outside the artifact.
	ErrInvalidRange = errors.New("store: invalid range")
	// ErrInvalidID is returned for an id that is not of the store's form.
	ErrInvalidID = errors.New("store: invalid artifact id")
	// ErrTooLarge is returned by Put when the content exceeds PutOptions.MaxBytes.
	ErrTooLarge = errors.New("store: artifact too large")
	// ErrClosed is returned by a store after Close.
	ErrClosed = errors.New("store: closed")
)

// Scope says whom an artifact belongs to. Stores record it and filter List
// by it; enforcing access is the caller's job (docs/design.md, "The store's
// promises").
type Scope struct {
	TenantID  string `json:"tenant_id,omitempty"`
	UserID    string `json:"user_id,omitempty"`
	SessionID string `json:"session_id,omitempty"`
	TraceID   string `json:"trace_id,omitempty"`
}

// Contains reports whether every field set in s equals that field of o: an
// empty filter contains every scope.
func (s Scope) Contains(o Scope) bool {
	return (s.TenantID == "" || s.TenantID == o.TenantID) &&
		(s.UserID == "" || s.UserID == o.UserID) &&
		(s.SessionID == "" || s.SessionID == o.SessionID) &&
		(s.TraceID == "" || s.TraceID == o.TraceID)
}

// IsZero reports whether no field is set.
func (s Scope) IsZero() bool { return s == Scope{} }

// Source says where an artifact's bytes were found.
type Source struct {
	Server string `json:"server,omitempty"`
	Tool   string `json:"tool,omitempty"`
	Path   string `json:"path,omitempty"`
	Layer  string `json:"layer,omitempty"`
}

// Call names the call that produced the value, as SERVER/TOOL (SERVER
// alone when no tool is known); empty when neither is.
func (s Source) Call() string {
	if s.Tool == "" {
		return s.Server
	}
	return s.Server + "/" + s.Tool
}

// Ref describes a stored artifact. Field names follow docs/design.md's "ArtifactRef".
type Ref struct {
	ID        string `json:"id"`
	MIMEType  string `json:"mime_type,omitempty"`
	SizeBytes int64  `json:"size_bytes"`
	Filename  string `json:"filename,omitempty"`
	SHA256    string `json:"sha256"`
	Scope     Scope  `json:"scope"`
	Source    Source `json:"source"`
	// Created is when the bytes were first put under Scope: for Stat,
	// whose Scope is the artifact's first, when they were first stored.
	// Each owner sees its own time, never when another put them.
	Created time.Time `json:"created_at"`
	// Truncated is set by stores that did not keep the bytes (noopstore).
	Truncated bool `json:"truncated,omitempty"`
	// AlreadyStored is set on the ref Put returns when the namespace
	// already held an artifact of these bytes (the same id), put under
	// this scope or another: the put recorded its scope and stored no new
	// artifact, so whoever counts stored bytes counts none for it. Get,
	// Stat and List never set it.
	AlreadyStored bool `json:"-"`
	// Content is what the bytes say about themselves (an inspect.Summary
	// as JSON: kind, pages, dimensions, line count ...), as an Annotator
	// recorded it; empty when nothing did.
	Content json.RawMessage `json:"content,omitempty"`
}

// PutOptions describe the artifact being put.
type PutOptions struct {
	// Namespace prefixes the id; usually the upstream server name. Only
	// [a-z0-9-] survive; an empty namespace becomes "artifact".
	Namespace string
	MIMEType  string
	Filename  string
	Scope     Scope
	Source    Source
	// MaxBytes, when positive, aborts the put with ErrTooLarge once more
	// bytes than this have been read; nothing is left behind.
	MaxBytes int64
	// Quota, when set, refuses (ErrQuotaExceeded) a new artifact that would
	// take o.Scope's session, trace or owner past a limit, each counted
	// within o.Scope's owner (Scope.Owner); checked in the put's own
	// transaction. Stores that do not count usage ignore it.
	Quota Quota
}

// Range selects bytes [Offset, Offset+Length) of an artifact. A Length of -1
// means "to the end".
type Range struct {
	Offset int64
	Length int64
}

// Store is the artifact store every backend implements. All methods are safe
// for concurrent use.
type Store interface {
	// Put streams r into the store, hashing as it writes, and returns the
	// artifact's ref. A put that fails leaves nothing behind. Putting bytes
	// that are already stored returns the existing id and records the new
	// scope beside the old ones; the ref carries o.Scope and when the
	// bytes were first put under it.
	Put(ctx context.Context, r io.Reader, o PutOptions) (Ref, error)
	// Get returns a reader of the artifact's bytes (all of them, or rng)
	// and its ref. The caller closes the reader.
	Get(ctx context.Context, id string, rng *Range) (io.ReadCloser, Ref, error)
	// Stat returns the ref of a stored artifact.
	Stat(ctx context.Context, id string) (Ref, error)
	// InScope reports whether the artifact was put under at least one
	// scope that scope contains (see Scope.Contains): the question an
	// access check asks ("was this made in this session?"), answered
	// without paging through List. A missing id returns ErrNotFound.
	InScope(ctx context.Context, id string, scope Scope) (bool, error)
	// Owned returns the artifact as owner holds it: its ref once per
	// scope owner put it under (Owner.Holds: tenant and user equal, an
	// empty tenant matching only an empty one), first recorded first,
	// each with that scope's Created; none when owner never put it. It
	// is what an access check asks (does this caller hold the artifact,
	// whoever put it first?) and what a caller is shown of it: its own
	// scopes and times, never another owner's. A missing id returns
	// ErrNotFound.
	Owned(ctx context.Context, id string, owner Owner) ([]Ref, error)
	// Exists reports whether the artifact is stored.
	Exists(ctx context.Context, id string) (bool, error)
	// Delete removes the artifact. Deleting a missing id returns ErrNotFound.
	Delete(ctx context.Context, id string) error
	// List returns the refs whose scope is contained in scope (an empty
	// scope lists everything), oldest first, one page at a time: pass the
	// returned cursor back to get the next page; "" means the end. An
	// artifact put under several scopes is listed once, with the first
	// of them that scope contains (and its Created).
	List(ctx context.Context, scope Scope, cursor string) (refs []Ref, next string, err error)
	// Close releases the store's resources. It is idempotent.
	Close(ctx context.Context) error
}

// Order is the order List pages in.
type Order int

const (
	// OldestFirst lists in insertion order (what Store.List does).
	OldestFirst Order = iota
	// NewestFirst lists the latest put first.
	NewestFirst
)

// OrderedLister is implemented by stores that list in either order (the
// fsstore): ListOrder is List with an order. A cursor handed out for one
// order is invalid in the other.
type OrderedLister interface {
	ListOrder(ctx context.Context, scope Scope, cursor string, order Order) (refs []Ref, next string, err error)
}

// TextPart is searchable text of an artifact and where it is in it:
// "page 3", "line 120", "entry docs/a.txt".
type TextPart struct{ Place, Text string }

// Annotator keeps what an artifact's content says: its summary, returned in
// Ref.Content by Stat/List/Get, and text parts a Searcher indexes.
// Annotating again replaces both; annotating a missing id returns
// ErrNotFound.
type Annotator interface {
	Annotate(ctx context.Context, id string, content json.RawMessage, parts []TextPart) error
}

// TextReader reads the searchable text of an artifact from its bytes,
// whole, within limits of its own: a summary reads a PDF's pages only as
// far as its deadline allows, and search should find the last page too.
// A store that indexes text later than the put (fsstore's Config.Text)
// calls it then, for an artifact annotated with AnnotateLater.
type TextReader func(ctx context.Context, ref Ref, r io.ReaderAt, size int64) ([]TextPart, error)

// LateAnnotator is implemented by stores that read an artifact's search
// text from its bytes with a TextReader when they index it:
// AnnotateLater keeps content as Annotate does and leaves the text to
// that reader. A store that has no TextReader returns ErrNoTextReader
// and keeps nothing.
type LateAnnotator interface {
	AnnotateLater(ctx context.Context, id string, content json.RawMessage) error
}

// ErrNoTextReader is returned by AnnotateLater of a store without a
// TextReader: annotate with the text parts at hand instead.
var ErrNoTextReader = errors.New("store: no text reader to read the search text later")

// Hit is one place in an artifact that matches a search: the artifact's
// ref (with the first of its scopes the search's scope contains), where
// in it the match is (a TextPart's place, narrowed to a line), a short
// excerpt around the match, and its rank (higher is better).
type Hit struct {
	Ref     Ref
	Place   string
	Snippet string
	Score   float64
}

// Searcher is implemented by stores that index the text parts an
// Annotator was given (fsstore: SQLite FTS5; memstore: a term-frequency
// scorer).
type Searcher interface {
	// Search returns up to limit hits, best first, among the artifacts
	// put under a scope that scope contains (as List filters). query is
	// words (each must occur, in any order) and "quoted phrases"; every
	// other character is taken literally, so no input is a syntax error.
	// A query with no words is ErrBadQuery.
	Search(ctx context.Context, scope Scope, query string, limit int) ([]Hit, error)
}

// ErrBadQuery is returned by Search for a query with nothing to search for.
var ErrBadQuery = errors.New("store: search query has no words")

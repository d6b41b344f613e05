package web

import (
	"context"
	"net/http"
	"time"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/store"
)

// ArtifactInfo is what GET /artifacts/{id}/meta and GET /artifacts
// answer for one artifact.
type ArtifactInfo struct {
	// Artifact is the ref a tool result carries, with a fresh signed URL;
	// Artifact.Content is its content summary (kind, pages, dimensions ...).
	Artifact engine.ArtifactRef `json:"artifact"`
	Created  time.Time          `json:"created_at"`
	// LastAccess is when it was last read (lru stores); absent when the
	// store does not say.
	LastAccess *time.Time `json:"last_access,omitempty"`
	// ExpiresAt is when retention's TTL removes it; absent without a TTL.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

// ArtifactPage is the answer of GET /artifacts.
type ArtifactPage struct {
	Artifacts []ArtifactInfo `json:"artifacts"`
	// NextCursor fetches the next page (?cursor=); absent at the end.
	NextCursor string `json:"next_cursor,omitempty"`
	// Order is "newest_first", or "oldest_first" for stores that list in
	// insertion order only.
	Order string `json:"order"`
}

// AccessStater is implemented by stores that say when one artifact was
// last read; GET /artifacts/{id}/meta reports it.
type AccessStater interface {
	LastAccess(ctx context.Context, id string) (time.Time, error)
}

// serveArtifact serves the bytes: a signed URL is its own authority (a
// cookie-less fetch: an <img>, curl); without one the caller must
// authenticate and own the artifact.
func (a *API) serveArtifact(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Has(paramSig) {
		a.download.ServeHTTP(w, r)
		return
	}
	a.o.Auth.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		_, ok, err := a.visible(r.Context(), principal(r), id)
		if err != nil {
			a.storeError(w, "access check", err)
			return
		}
		if !ok {
			notFound(w)
			return
		}
		a.download.serveBytes(w, r, id)
	})).ServeHTTP(w, r)
}

func (a *API) info(ref store.Ref, last time.Time) ArtifactInfo {
	ar := engine.RefFromStore(ref)
	ar.URL = a.o.Signer.ArtifactURL(ar)
	in := ArtifactInfo{Artifact: ar, Created: ref.Created}
	if !last.IsZero() {
		in.LastAccess = &last
	}
	if exp := a.o.Retention.Expiry(ref.Created, last); !exp.IsZero() {
		in.ExpiresAt = &exp
	}
	return in
}

// serveMeta answers the artifact as the caller holds it: its own scope,
// creation and a link signed for its own session, never those of an
// owner that put the same bytes.
func (a *API) serveMeta(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	ref, ok, err := a.visible(r.Context(), principal(r), id)
	if err != nil {
		a.storeError(w, "access check", err)
		return
	}
	if !ok {
		notFound(w)
		return
	}
	var last time.Time
	if as, ok := a.o.Store.(AccessStater); ok {
		last, _ = as.LastAccess(r.Context(), id)
	}
	writeJSON(w, http.StatusOK, a.info(ref, last))
}

// serveList pages the caller's artifacts, newest first where the store
// can. ?session= and ?trace= narrow the scope further.
func (a *API) serveList(w http.ResponseWriter, r *http.Request) {
	p := principal(r)
	q := r.URL.Query()
	scope := p.Scope()
	scope.SessionID, scope.TraceID = q.Get("session"), q.Get("trace")
	cursor := q.Get("cursor")
	var (
		refs  []store.Ref
		last  []time.Time
		next  string
		err   error
		order = "newest_first"
	)
	switch st := a.o.Store.(type) {
	case store.AccessLister:
		refs, last, next, err = st.ListAccess(r.Context(), scope, cursor, store.NewestFirst)
	case store.OrderedLister:
		refs, next, err = st.ListOrder(r.Context(), scope, cursor, store.NewestFirst)
	default:
		refs, next, err = a.o.Store.List(r.Context(), scope, cursor)
		order = "oldest_first"
	}
	if err != nil {
		a.storeError(w, "list", err)
		return
	}
	page := ArtifactPage{Artifacts: []ArtifactInfo{}, NextCursor: next, Order: order}
	for i, ref := range refs {
		if !p.Owns(ref.Scope) {
			// The filter's empty tenant matched another tenant's scope
			// first: show the caller's own, when it has one.
			var ok bool
			if ref, ok, err = p.Holding(r.Context(), a.o.Store, ref.ID, scope.Contains); err != nil {
				a.storeError(w, "access check", err)
				return
			}
			if !ok {
				continue
			}
		}
		var la time.Time
		if i < len(last) {
			la = last[i]
		}
		page.Artifacts = append(page.Artifacts, a.info(ref, la))
	}
	writeJSON(w, http.StatusOK, page)
}

package artifacts

// Who may read (resources/read, list, pass as an argument, query) an
// artifact (docs/design.md, "Protocol revisions", "Scope without
// sessions"):
//
//   - an authenticated principal, in a session or statelessly: every
//     artifact made under that principal, statelessly or in any of its
//     sessions (a one-shot client, each call its own session, reads back
//     what an earlier call was told about);
//   - an unauthenticated session (stdio, or HTTP with Mcp-Session-Id and
//     no tokens configured): its own artifacts only. Nothing tells two
//     unauthenticated clients apart (a stdio gateway may serve any byte
//     stream, loopback any local user), so an id alone is no capability;
//     the signed download URL is one, bound to the session it was made
//     for, and is how such a client hands an artifact on;
//   - an unauthenticated stateless request: only artifacts made by
//     unauthenticated stateless requests, never a session's;
//   - the stdio client of `mcpx serve` and `mcpx wrap`
//     (gateway.Options.StdioReadsStore): the user who started the
//     gateway, who can read the store's folder anyway, so every artifact
//     an unauthenticated client made.
//
// A reader must hold the artifact under a scope of its own (store.Holding,
// the check of every surface): the same bytes put first by another
// principal give nothing away, and what a client is shown of an
// artifact is its own scope. An artifact another principal made is
// answered as unknown, not as forbidden: a client learns nothing of ids
// it may not read. A stateless request's artifacts are scoped to its
// principal and the trace id of the W3C traceparent in its _meta.

import (
	"context"

	"github.com/mcpx-dev/mcpx/store"
)

// Reader is whoever asks: a session, or one stateless request.
type Reader struct {
	Tenant, User string // the authenticated principal; "" unauthenticated
	Session      string // the session's id; "" for a stateless request
	// ReadsStore: the local user's stdio client
	// (gateway.Options.StdioReadsStore).
	ReadsStore bool
	// Shown are the artifacts the session was shown; never nil.
	Shown *Shown
}

// putScope is the scope of what rd stores.
func (rd Reader) putScope() store.Scope {
	return store.Scope{TenantID: rd.Tenant, SessionID: rd.Session, UserID: rd.User}
}

// listScope is the store filter of the artifacts rd lists.
func (rd Reader) listScope() store.Scope {
	if rd.User != "" || rd.Session == "" || rd.ReadsStore {
		return store.Scope{TenantID: rd.Tenant, UserID: rd.User}
	}
	return store.Scope{SessionID: rd.Session}
}

// owner is whose artifacts rd may read (see the top of this file): an
// owner, and which of that owner's scopes (nil: every one).
func (rd Reader) owner() (store.Owner, func(store.Scope) bool) {
	switch {
	case rd.User != "":
		return store.Owner{TenantID: rd.Tenant, UserID: rd.User}, nil
	case rd.ReadsStore:
		return store.Owner{}, nil
	case rd.Session != "":
		id := rd.Session
		return store.Owner{}, func(sc store.Scope) bool { return sc.SessionID == id }
	}
	return store.Owner{}, func(sc store.Scope) bool { return sc.SessionID == "" }
}

// mayList reports whether a listed ref's scope is one rd may read.
func (rd Reader) mayList(r store.Ref) bool {
	owner, match := rd.owner()
	return owner.Holds(r.Scope) && (match == nil || match(r.Scope))
}

// holding returns stored artifact id as rd may read it: store.Holding,
// the check every surface makes, whoever put the bytes first. The ref
// carries rd's own scope: a link signed for it, or an archive member
// stored from it, is rd's.
func (s *Service) holding(ctx context.Context, rd Reader, id string) (store.Ref, bool, error) {
	owner, match := rd.owner()
	return store.Holding(ctx, s.st, id, owner, match)
}

// asRead returns r as rd may read it: r itself when its scope is one rd
// may read, else rd's own scope of it, if any (a store filter's empty
// fields match any owner, so a listed ref may carry another's scope
// first).
func (s *Service) asRead(ctx context.Context, rd Reader, r store.Ref) (store.Ref, bool) {
	if rd.mayList(r) {
		return r, true
	}
	r, ok, err := s.holding(ctx, rd, r.ID)
	return r, ok && err == nil
}

// list lists one page of the artifacts rd may read.
func (s *Service) list(ctx context.Context, rd Reader, cursor string) ([]store.Ref, string, error) {
	refs, next, err := s.st.List(ctx, rd.listScope(), cursor)
	if err != nil {
		return nil, "", err
	}
	out := refs[:0:0]
	for _, r := range refs {
		if r, ok := s.asRead(ctx, rd, r); ok {
			out = append(out, r)
		}
	}
	return out, next, nil
}

package store

import (
	"context"
	"errors"
)

// Owner is who put an artifact: a tenant and a user. Owners compare
// exactly: the empty tenant is the tenant of the users that have none,
// not "any tenant" as an empty field of a Scope filter is, and the zero
// Owner is the unauthenticated user. Access (what a caller may read and
// is shown) and quotas (what a caller may hold) are per owner, so that
// no caller's ids, whatever it names them, touch another's artifacts.
type Owner struct {
	TenantID string `json:"tenant_id,omitempty"`
	UserID   string `json:"user_id,omitempty"`
}

// Owner returns whom s records as the artifact's owner: its tenant and
// user.
func (s Scope) Owner() Owner { return Owner{TenantID: s.TenantID, UserID: s.UserID} }

// Holds reports whether sc is one of o's scopes.
func (o Owner) Holds(sc Scope) bool { return sc.Owner() == o }

// Holding is the one access check of every surface that serves
// artifacts (HTTP downloads, meta and listings, MCP resources/read,
// artifacts_query, tool arguments): the artifact id as owner holds it,
// under the first of owner's scopes that match accepts (nil accepts
// any), whoever put the bytes first. The ref carries that scope and its
// Created, never another owner's. ok is false when owner holds id under
// no such scope, and when id is missing or not an id: a caller learns
// nothing of another's artifact. Other errors are the store's.
func Holding(ctx context.Context, st Store, id string, owner Owner, match func(Scope) bool) (ref Ref, ok bool, err error) {
	refs, err := st.Owned(ctx, id, owner)
	if errors.Is(err, ErrNotFound) || errors.Is(err, ErrInvalidID) {
		return Ref{}, false, nil
	}
	if err != nil {
		return Ref{}, false, err
	}
	for _, r := range refs {
		if match == nil || match(r.Scope) {
			return r, true, nil
		}
	}
	return Ref{}, false, nil
}

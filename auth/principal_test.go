package auth

import (
	"context"
	"strings"
	"testing"

	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

// Holding is decided by an owned scope, whoever put the bytes first, and
// answers with the caller's own scope.
func TestPrincipalHolding(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Config{})
	put := func(sc store.Scope) store.Ref {
		ref, err := st.Put(ctx, strings.NewReader("one artifact"), store.PutOptions{Namespace: "t", Scope: sc})
		if err != nil {
			t.Fatal(err)
		}
		return ref
	}
	first := put(store.Scope{UserID: "carol", SessionID: "c"})
	put(store.Scope{TenantID: "acme", UserID: "alice", SessionID: "a1"})
	put(store.Scope{TenantID: "acme", UserID: "alice", SessionID: "a2"})
	for _, tc := range []struct {
		name    string
		p       Principal
		match   func(store.Scope) bool
		ok      bool
		session string
	}{
		{"owner", Principal{Tenant: "acme", User: "alice"}, nil, true, "a1"},
		{"owner narrowed", Principal{Tenant: "acme", User: "alice"}, func(sc store.Scope) bool { return sc.SessionID == "a2" }, true, "a2"},
		{"same user, no tenant", Principal{User: "alice"}, nil, false, ""},
		{"same user, another tenant", Principal{Tenant: "globex", User: "alice"}, nil, false, ""},
		{"first putter", Principal{User: "carol"}, nil, true, "c"},
		{"no user", Principal{}, nil, false, ""},
		{"local", Principal{Local: true}, nil, true, "c"},
	} {
		ref, ok, err := tc.p.Holding(ctx, st, first.ID, tc.match)
		if err != nil || ok != tc.ok || ref.Scope.SessionID != tc.session {
			t.Errorf("%s: %+v, %v, %v; want ok %v, session %q", tc.name, ref.Scope, ok, err, tc.ok, tc.session)
		}
	}
	for _, id := range []string{"t_ffffffffffff", "not an id"} {
		if _, ok, err := (Principal{Local: true}).Holding(ctx, st, id, nil); ok || err != nil {
			t.Errorf("local Holding(%q) = %v, %v; want false, nil", id, ok, err)
		}
		if _, ok, err := (Principal{User: "carol"}).Holding(ctx, st, id, nil); ok || err != nil {
			t.Errorf("Holding(%q) = %v, %v; want false, nil", id, ok, err)
		}
	}
}

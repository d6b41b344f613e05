package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/store"
)

// testEachAccess: a store.AccessLister's EachAccess hands over, page by
// page and in either order, the rows, last accesses and cursors that
// ListAccess returns, and an error from its callback stops the page and
// comes back as it is.
func testEachAccess(t *testing.T, st store.Store) {
	al, ok := st.(store.AccessLister)
	if !ok {
		t.Skip("the store is no store.AccessLister")
	}
	ctx := context.Background()
	for i := range 23 {
		sc := store.Scope{SessionID: "odd"}
		if i%2 == 0 {
			sc.SessionID = "even"
		}
		put(t, st, []byte(fmt.Sprintf("access item %d", i)), store.PutOptions{Namespace: "ea", Scope: sc})
	}
	for _, order := range []store.Order{store.OldestFirst, store.NewestFirst} {
		for _, scope := range []store.Scope{{}, {SessionID: "even"}} {
			var got []string
			pages := 0
			for cursor := ""; ; {
				pages++
				refs, access, next, err := al.ListAccess(ctx, scope, cursor, order)
				if err != nil {
					t.Fatalf("ListAccess(%+v, %q, %d): %v", scope, cursor, order, err)
				}
				var each []store.Ref
				var eachAccess []time.Time
				eachNext, err := al.EachAccess(ctx, scope, cursor, order, func(r store.Ref, la time.Time) error {
					each = append(each, r)
					eachAccess = append(eachAccess, la)
					return nil
				})
				if err != nil {
					t.Fatalf("EachAccess(%+v, %q, %d): %v", scope, cursor, order, err)
				}
				if eachNext != next || !slices.Equal(ids(each), ids(refs)) || !slices.EqualFunc(eachAccess, access, time.Time.Equal) {
					t.Fatalf("EachAccess(%+v, %q, %d) = %v %v next %q, ListAccess = %v %v next %q",
						scope, cursor, order, ids(each), eachAccess, eachNext, ids(refs), access, next)
				}
				got = append(got, ids(each)...)
				if next == "" || pages > 100 {
					break
				}
				cursor = next
			}
			if pages < 2 || len(got) == 0 {
				t.Errorf("scope %+v order %d: %d rows in %d page(s); want several pages", scope, order, len(got), pages)
			}
		}
	}

	stop := errors.New("the reader went away")
	calls := 0
	next, err := al.EachAccess(ctx, store.Scope{}, "", store.OldestFirst, func(store.Ref, time.Time) error {
		calls++
		return stop
	})
	if !errors.Is(err, stop) || calls != 1 || next != "" {
		t.Errorf("EachAccess with a callback that fails: %d calls, next %q, err %v; want 1 call and %v", calls, next, err, stop)
	}
}

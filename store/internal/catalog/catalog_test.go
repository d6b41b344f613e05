package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/store"
)

func digest(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func TestBounds(t *testing.T) {
	cases := []struct {
		name    string
		rng     *store.Range
		size    int64
		off, n  int64
		wantErr bool
	}{
		{"nil", nil, 10, 0, 10, false},
		{"to end", &store.Range{Offset: 3, Length: -1}, 10, 3, 7, false},
		{"exact", &store.Range{Offset: 3, Length: 7}, 10, 3, 7, false},
		{"at end", &store.Range{Offset: 10, Length: -1}, 10, 10, 0, false},
		{"empty artifact", &store.Range{Offset: 0, Length: -1}, 0, 0, 0, false},
		{"past end", &store.Range{Offset: 3, Length: 8}, 10, 0, 0, true},
		{"offset past end", &store.Range{Offset: 11, Length: 0}, 10, 0, 0, true},
		{"negative offset", &store.Range{Offset: -1, Length: 1}, 10, 0, 0, true},
		{"length -2", &store.Range{Offset: 0, Length: -2}, 10, 0, 0, true},
		{"overflow", &store.Range{Offset: 5, Length: 1<<63 - 1}, 10, 0, 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			off, n, err := Bounds(tc.rng, tc.size)
			if tc.wantErr {
				if !errors.Is(err, store.ErrInvalidRange) {
					t.Errorf("Bounds = %d, %d, %v; want ErrInvalidRange", off, n, err)
				}
				return
			}
			if err != nil || off != tc.off || n != tc.n {
				t.Errorf("Bounds = %d, %d, %v; want %d, %d", off, n, err, tc.off, tc.n)
			}
		})
	}
}

func TestCursor(t *testing.T) {
	for _, seq := range []uint64{1, 35, 36, 1 << 40, 1<<64 - 1} {
		got, err := DecodeCursor(EncodeCursor(seq))
		if err != nil || got != seq {
			t.Errorf("round trip of %d = %d, %v", seq, got, err)
		}
	}
	if seq, err := DecodeCursor(""); seq != 0 || err != nil {
		t.Errorf(`DecodeCursor("") = %d, %v`, seq, err)
	}
	for _, c := range []string{"s", "s0", "x1", "s-1", "S1", "s01", "s1 ", "szzzzzzzzzzzzzzzz"} {
		if _, err := DecodeCursor(c); !errors.Is(err, store.ErrInvalidCursor) {
			t.Errorf("DecodeCursor(%q) error %v, want ErrInvalidCursor", c, err)
		}
	}
}

func TestCatalog(t *testing.T) {
	c := New()
	var ids []string
	for i := range 10 {
		d := digest(fmt.Sprint(i))
		id, err := c.AllocateID("ns", d, 1)
		if err != nil {
			t.Fatal(err)
		}
		// Insert out of order: replaying a journal may.
		seq := uint64(10 - i)
		if _, err := c.Insert(seq, store.Ref{ID: id, SHA256: d, Scope: store.Scope{SessionID: fmt.Sprint(i % 2)}}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	slices.Reverse(ids) // order by seq
	var got []string
	for cursor := ""; ; {
		refs, next, err := c.List(store.Scope{}, cursor, 3)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range refs {
			got = append(got, r.ID)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if !slices.Equal(got, ids) {
		t.Errorf("List = %v, want %v", got, ids)
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Errorf("id %s allocated twice", id)
		}
		seen[id] = true
	}
	// A last page that is full says there is nothing after it.
	refs, next, err := c.List(store.Scope{SessionID: "0"}, "", 5)
	if err != nil || len(refs) != 5 || next != "" {
		t.Errorf("List of exactly one page = %d refs, next %q, %v; want 5 and no cursor", len(refs), next, err)
	}

	e, _ := c.Get(ids[0])
	if _, err := c.Insert(99, store.Ref{ID: ids[0], SHA256: e.Ref.SHA256}); err == nil {
		t.Error("Insert of a present id succeeded")
	}
	if _, err := c.Insert(99, store.Ref{ID: "ns_ffff", SHA256: e.Ref.SHA256}); err == nil {
		t.Error("Insert of present content under a new id succeeded")
	}
	if !c.AddScope(ids[0], store.Scope{TenantID: "t"}, time.Now()) || c.AddScope(ids[0], store.Scope{TenantID: "t"}, time.Now()) {
		t.Error("AddScope: want true once, then false")
	}
	if _, free, ok := c.Remove(ids[0]); !ok || !free {
		t.Errorf("Remove = free %v ok %v; want both", free, ok)
	}
	if _, _, ok := c.Remove(ids[0]); ok {
		t.Error("second Remove succeeded")
	}
	if c.Len() != 9 {
		t.Errorf("Len = %d, want 9", c.Len())
	}
}

func TestSharedBlob(t *testing.T) {
	c := New()
	d := digest("shared")
	for _, ns := range []string{"a", "b"} {
		id, _ := c.AllocateID(ns, d, 12)
		if _, err := c.Insert(c.NextSeq(), store.Ref{ID: id, SHA256: d}); err != nil {
			t.Fatal(err)
		}
	}
	if c.BlobRefs(d) != 2 {
		t.Fatalf("BlobRefs = %d, want 2", c.BlobRefs(d))
	}
	if _, free, _ := c.Remove("a_" + d[:12]); free {
		t.Error("blob freed while another id holds it")
	}
	if _, free, _ := c.Remove("b_" + d[:12]); !free {
		t.Error("blob not freed by its last id")
	}
}

// Package storetest is the conformance suite every artifact store backend
// runs (as testing/fstest.TestFS is for fs.FS implementations):
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store {
//			return memstore.New(memstore.Config{PageSize: 7})
//		})
//	}
//
// The suite needs no test hooks in the backend. The id clash test uses two
// fixed contents whose sha256 digests share their first 48 bits (12 hex
// characters, the default id prefix; found once with a Pollard rho search),
// so every backend really walks its prefix-lengthening path with its default
// configuration.
package storetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/store"
)

// ClashPair returns two contents whose sha256 digests share their first 12
// hex characters (d96f6049fc1c) and differ in the 13th: under the default
// prefix length, the second one put in a namespace needs a 16 character id.
func ClashPair() (a, b []byte) {
	return []byte("mcpx-clash-6d808ac54251"), []byte("mcpx-clash-397013b6cb89")
}

// Run runs the conformance suite, one subtest per property. open must return
// a new, empty store on each call, configured with the default id prefix
// length (store.DefaultIDPrefixLen) and a List page size of at most 10, so
// that 25 artifacts span at least three pages. The suite closes every store
// it opens (Close is idempotent, so open may register its own cleanup too).
// Run the suite with -race: one subtest is about concurrency.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, st store.Store)
	}{
		{"PutGet", testPutGet},
		{"SameBytesSameID", testSameBytesSameID},
		{"AlreadyStored", testAlreadyStored},
		{"DifferentBytesDifferentIDs", testDifferentBytes},
		{"Namespaces", testNamespaces},
		{"IDClash", testIDClash},
		{"Range", testRange},
		{"StatExists", testStatExists},
		{"InvalidID", testInvalidID},
		{"Delete", testDelete},
		{"ListScope", testListScope},
		{"ListPages", testListPages},
		{"ListInvalidCursor", testListInvalidCursor},
		{"TwoScopes", testTwoScopes},
		{"InScope", testInScope},
		{"Owned", testOwned},
		{"MaxBytes", testMaxBytes},
		{"FailingReader", testFailingReader},
		{"ContextCancelled", testContextCancelled},
		{"Concurrent", testConcurrent},
		{"Close", testClose},
		{"Annotate", testAnnotate},
		{"EachAccess", testEachAccess},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := open(t)
			if st == nil {
				t.Fatal("open returned a nil store")
			}
			t.Cleanup(func() {
				if err := st.Close(context.Background()); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			tc.fn(t, st)
		})
	}
}

// SHA256Hex returns the lower-case hex sha256 of b.
func SHA256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// RandomBytes returns n pseudo-random bytes, the same for the same seed.
func RandomBytes(seed uint64, n int) []byte {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	b := make([]byte, n)
	_, _ = rand.NewChaCha8(key).Read(b)
	return b
}

// ListAll pages through st.List(scope) and returns every ref and the number
// of pages it took.
func ListAll(t testing.TB, st store.Store, scope store.Scope) (refs []store.Ref, pages int) {
	t.Helper()
	cursor := ""
	for {
		page, next, err := st.List(context.Background(), scope, cursor)
		if err != nil {
			t.Fatalf("List(%+v, %q): %v", scope, cursor, err)
		}
		pages++
		refs = append(refs, page...)
		if next == "" {
			return refs, pages
		}
		if len(page) == 0 {
			t.Fatalf("List(%+v, %q): empty page with next cursor %q", scope, cursor, next)
		}
		if pages > 10000 {
			t.Fatalf("List(%+v): more than 10000 pages", scope)
		}
		cursor = next
	}
}

// ReadAll gets the artifact (or rng of it) and returns its bytes and ref.
func ReadAll(t testing.TB, st store.Store, id string, rng *store.Range) ([]byte, store.Ref) {
	t.Helper()
	rc, ref, err := st.Get(context.Background(), id, rng)
	if err != nil {
		t.Fatalf("Get(%s, %+v): %v", id, rng, err)
	}
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("Get(%s): read: %v", id, err)
	}
	if err := rc.Close(); err != nil {
		t.Fatalf("Get(%s): close: %v", id, err)
	}
	return b, ref
}

func put(t *testing.T, st store.Store, data []byte, o store.PutOptions) store.Ref {
	t.Helper()
	ref, err := st.Put(context.Background(), bytes.NewReader(data), o)
	if err != nil {
		t.Fatalf("Put(%d bytes, %q): %v", len(data), o.Namespace, err)
	}
	return ref
}

// diffRef describes how got differs from want ("" when equal); Created is
// compared with time.Time.Equal.
func diffRef(got, want store.Ref) string {
	gc, wc := got.Created, want.Created
	got.Created, want.Created = time.Time{}, time.Time{}
	var d string
	if !reflect.DeepEqual(got, want) {
		d = fmt.Sprintf("got %+v, want %+v", got, want)
	}
	if !gc.Equal(wc) {
		d += fmt.Sprintf(" created %v, want %v", gc, wc)
	}
	return d
}

func ids(refs []store.Ref) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.ID
	}
	return out
}

func wantEmpty(t *testing.T, st store.Store, data []byte, ns string) {
	t.Helper()
	if refs, _ := ListAll(t, st, store.Scope{}); len(refs) != 0 {
		t.Errorf("List after failed put = %v, want nothing", ids(refs))
	}
	id := store.NewID(ns, SHA256Hex(data), store.DefaultIDPrefixLen)
	ok, err := st.Exists(context.Background(), id)
	if err != nil || ok {
		t.Errorf("Exists(%s) after failed put = %v, %v; want false, nil", id, ok, err)
	}
}

func testPutGet(t *testing.T, st store.Store) {
	cases := []struct {
		name string
		data []byte
	}{
		{"empty", []byte{}},
		{"one-byte", []byte{0}},
		{"3MiB-random", RandomBytes(1, 3<<20)},
	}
	scope := store.Scope{TenantID: "t1", UserID: "u1", SessionID: "s1", TraceID: "tr1"}
	src := store.Source{Server: "Tableau", Tool: "download", Path: "data.pdf", Layer: "magicbytes"}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := time.Now()
			o := store.PutOptions{Namespace: "Tableau", MIMEType: "application/pdf", Filename: tc.name + ".pdf", Scope: scope, Source: src}
			ref := put(t, st, tc.data, o)
			after := time.Now()
			sum := SHA256Hex(tc.data)
			want := store.Ref{
				ID: "tableau_" + sum[:store.DefaultIDPrefixLen], MIMEType: o.MIMEType, SizeBytes: int64(len(tc.data)),
				Filename: o.Filename, SHA256: sum, Scope: scope, Source: src, Created: ref.Created,
			}
			if d := diffRef(ref, want); d != "" {
				t.Errorf("Put ref: %s", d)
			}
			if !store.ValidID(ref.ID) {
				t.Errorf("Put id %q is not valid", ref.ID)
			}
			if ref.Created.Before(before.Add(-time.Second)) || ref.Created.After(after.Add(time.Second)) {
				t.Errorf("Created = %v, want between %v and %v", ref.Created, before, after)
			}
			got, gref := ReadAll(t, st, ref.ID, nil)
			if !bytes.Equal(got, tc.data) {
				t.Errorf("Get returned %d bytes (sha256 %s), want %d bytes (sha256 %s)", len(got), SHA256Hex(got), len(tc.data), sum)
			}
			if d := diffRef(gref, ref); d != "" {
				t.Errorf("Get ref: %s", d)
			}
			sref, err := st.Stat(context.Background(), ref.ID)
			if err != nil {
				t.Fatalf("Stat: %v", err)
			}
			if d := diffRef(sref, ref); d != "" {
				t.Errorf("Stat ref: %s", d)
			}
			whole, _ := ReadAll(t, st, ref.ID, &store.Range{Offset: 0, Length: -1})
			if !bytes.Equal(whole, tc.data) {
				t.Errorf("Get with range {0,-1} returned %d bytes, want %d", len(whole), len(tc.data))
			}
		})
	}
}

func testSameBytesSameID(t *testing.T, st store.Store) {
	data := []byte("the same bytes, twice")
	a := put(t, st, data, store.PutOptions{Namespace: "srv"})
	b := put(t, st, data, store.PutOptions{Namespace: "srv"})
	if a.ID != b.ID {
		t.Errorf("ids %q and %q, want the same", a.ID, b.ID)
	}
	if want := SHA256Hex(data); a.SHA256 != want || b.SHA256 != want {
		t.Errorf("sha256 %s and %s, want %s", a.SHA256, b.SHA256, want)
	}
	if want := "srv_" + a.SHA256[:store.DefaultIDPrefixLen]; a.ID != want {
		t.Errorf("id %q, want %q", a.ID, want)
	}
	if refs, _ := ListAll(t, st, store.Scope{}); len(refs) != 1 {
		t.Errorf("List = %v, want one artifact", ids(refs))
	}
}

// testAlreadyStored checks that Put says when the namespace held the
// bytes already (metrics count a re-store's bytes once): a put of the
// same bytes again, under the same scope or another, is a re-store; the
// same bytes in another namespace, or after Delete, are new.
func testAlreadyStored(t *testing.T, st store.Store) {
	data := []byte("stored once, counted once")
	a := store.Scope{TenantID: "t", UserID: "u", SessionID: "A"}
	b := store.Scope{TenantID: "t", UserID: "v", SessionID: "B"}
	steps := []struct {
		what string
		ns   string
		sc   store.Scope
		want bool
	}{
		{"first put", "srv", a, false},
		{"same bytes, same scope", "srv", a, true},
		{"same bytes, another owner", "srv", b, true},
		{"same bytes, another namespace", "other", a, false},
	}
	var id string
	for _, s := range steps {
		ref := put(t, st, data, store.PutOptions{Namespace: s.ns, Scope: s.sc})
		if ref.AlreadyStored != s.want {
			t.Errorf("%s: AlreadyStored = %v, want %v", s.what, ref.AlreadyStored, s.want)
		}
		if s.ns == "srv" {
			id = ref.ID
		}
	}
	for _, read := range []func() (store.Ref, error){
		func() (store.Ref, error) { return st.Stat(context.Background(), id) },
		func() (store.Ref, error) { _, r := ReadAll(t, st, id, nil); return r, nil },
	} {
		if r, err := read(); err != nil || r.AlreadyStored {
			t.Errorf("a read's ref says AlreadyStored (%v): only Put's does", err)
		}
	}
	if err := st.Delete(context.Background(), id); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if ref := put(t, st, data, store.PutOptions{Namespace: "srv", Scope: a}); ref.AlreadyStored {
		t.Errorf("put after Delete: AlreadyStored = true, want false (the bytes are stored anew)")
	}
}

func testDifferentBytes(t *testing.T, st store.Store) {
	seen := map[string]string{}
	for i := range 50 {
		data := []byte(fmt.Sprintf("content %d", i))
		ref := put(t, st, data, store.PutOptions{Namespace: "srv"})
		if prev, dup := seen[ref.ID]; dup {
			t.Fatalf("id %q given to %q and %q", ref.ID, prev, data)
		}
		seen[ref.ID] = string(data)
		if ref.SHA256 != SHA256Hex(data) {
			t.Errorf("sha256 of %q = %s, want %s", data, ref.SHA256, SHA256Hex(data))
		}
	}
	for id, data := range seen {
		if got, _ := ReadAll(t, st, id, nil); string(got) != data {
			t.Errorf("Get(%s) = %q, want %q", id, got, data)
		}
	}
	if refs, _ := ListAll(t, st, store.Scope{}); len(refs) != 50 {
		t.Errorf("List has %d artifacts, want 50", len(refs))
	}
}

func testNamespaces(t *testing.T, st store.Store) {
	data := []byte("shared by two servers")
	sum := SHA256Hex(data)
	a := put(t, st, data, store.PutOptions{Namespace: "Tableau Server!"})
	b := put(t, st, data, store.PutOptions{Namespace: "github"})
	c := put(t, st, data, store.PutOptions{})
	for _, tc := range []struct{ got, want string }{
		{a.ID, "tableau-server_" + sum[:12]},
		{b.ID, "github_" + sum[:12]},
		{c.ID, store.DefaultNamespace + "_" + sum[:12]},
	} {
		if tc.got != tc.want {
			t.Errorf("id %q, want %q", tc.got, tc.want)
		}
	}
	// Deleting one id must not take the bytes the others share.
	if err := st.Delete(context.Background(), a.ID); err != nil {
		t.Fatalf("Delete(%s): %v", a.ID, err)
	}
	for _, id := range []string{b.ID, c.ID} {
		if got, _ := ReadAll(t, st, id, nil); !bytes.Equal(got, data) {
			t.Errorf("Get(%s) after deleting %s = %q, want %q", id, a.ID, got, data)
		}
	}
	if err := st.Delete(context.Background(), b.ID); err != nil {
		t.Fatalf("Delete(%s): %v", b.ID, err)
	}
	if got, _ := ReadAll(t, st, c.ID, nil); !bytes.Equal(got, data) {
		t.Errorf("Get(%s) after deleting two = %q, want %q", c.ID, got, data)
	}
	again := put(t, st, data, store.PutOptions{Namespace: "Tableau Server!"})
	if again.ID != a.ID {
		t.Errorf("re-put id %q, want %q", again.ID, a.ID)
	}
	if got, _ := ReadAll(t, st, again.ID, nil); !bytes.Equal(got, data) {
		t.Errorf("Get(%s) after re-put = %q, want %q", again.ID, got, data)
	}
}

func testIDClash(t *testing.T, st store.Store) {
	clashA, clashB := ClashPair()
	sa, sb := SHA256Hex(clashA), SHA256Hex(clashB)
	if sa[:12] != sb[:12] || sa[12:16] == sb[12:16] {
		t.Fatalf("fixture broken: sha256 %s and %s", sa, sb)
	}
	const ns = "clash"
	a := put(t, st, clashA, store.PutOptions{Namespace: ns})
	b := put(t, st, clashB, store.PutOptions{Namespace: ns})
	if want := ns + "_" + sa[:12]; a.ID != want {
		t.Errorf("first id %q, want %q", a.ID, want)
	}
	if want := ns + "_" + sb[:16]; b.ID != want {
		t.Errorf("clashing id %q, want %q (prefix lengthened by %d)", b.ID, want, store.IDPrefixStep)
	}
	// Same bytes keep their ids, whichever order they come back in.
	if r := put(t, st, clashB, store.PutOptions{Namespace: ns}); r.ID != b.ID {
		t.Errorf("re-put of B: id %q, want %q", r.ID, b.ID)
	}
	if r := put(t, st, clashA, store.PutOptions{Namespace: ns}); r.ID != a.ID {
		t.Errorf("re-put of A: id %q, want %q", r.ID, a.ID)
	}
	for _, tc := range []struct {
		id   string
		data []byte
	}{{a.ID, clashA}, {b.ID, clashB}} {
		if got, _ := ReadAll(t, st, tc.id, nil); !bytes.Equal(got, tc.data) {
			t.Errorf("Get(%s) = %q, want %q", tc.id, got, tc.data)
		}
	}
	// Once A is gone, B keeps its longer id; A put again gets the short one.
	if err := st.Delete(context.Background(), a.ID); err != nil {
		t.Fatalf("Delete(%s): %v", a.ID, err)
	}
	if r := put(t, st, clashB, store.PutOptions{Namespace: ns}); r.ID != b.ID {
		t.Errorf("re-put of B after deleting A: id %q, want %q", r.ID, b.ID)
	}
	if r := put(t, st, clashA, store.PutOptions{Namespace: ns}); r.ID != a.ID {
		t.Errorf("re-put of A after deleting it: id %q, want %q", r.ID, a.ID)
	}
	// Other namespaces do not clash with these.
	if r := put(t, st, clashB, store.PutOptions{Namespace: "other"}); r.ID != "other_"+sb[:12] {
		t.Errorf("B in another namespace: id %q, want %q", r.ID, "other_"+sb[:12])
	}
	if refs, _ := ListAll(t, st, store.Scope{}); len(refs) != 3 {
		t.Errorf("List = %v, want 3 artifacts", ids(refs))
	}
}

func testRange(t *testing.T, st store.Store) {
	data := RandomBytes(2, 1000)
	ref := put(t, st, data, store.PutOptions{Namespace: "rng"})
	empty := put(t, st, nil, store.PutOptions{Namespace: "rng"})
	ok := []struct {
		name     string
		id       string
		rng      store.Range
		from, to int
	}{
		{"whole", ref.ID, store.Range{Offset: 0, Length: -1}, 0, 1000},
		{"head", ref.ID, store.Range{Offset: 0, Length: 10}, 0, 10},
		{"middle", ref.ID, store.Range{Offset: 100, Length: 250}, 100, 350},
		{"tail to end", ref.ID, store.Range{Offset: 990, Length: -1}, 990, 1000},
		{"last byte", ref.ID, store.Range{Offset: 999, Length: 1}, 999, 1000},
		{"exact end", ref.ID, store.Range{Offset: 0, Length: 1000}, 0, 1000},
		{"zero length", ref.ID, store.Range{Offset: 500, Length: 0}, 500, 500},
		{"at end", ref.ID, store.Range{Offset: 1000, Length: -1}, 1000, 1000},
		{"empty artifact", empty.ID, store.Range{Offset: 0, Length: -1}, 0, 0},
		{"empty artifact zero", empty.ID, store.Range{Offset: 0, Length: 0}, 0, 0},
	}
	for _, tc := range ok {
		t.Run(tc.name, func(t *testing.T) {
			rng := tc.rng
			got, gref := ReadAll(t, st, tc.id, &rng)
			want := data[tc.from:tc.to]
			if !bytes.Equal(got, want) {
				t.Errorf("Get(%+v) returned %d bytes, want bytes [%d,%d)", tc.rng, len(got), tc.from, tc.to)
			}
			if gref.ID != tc.id {
				t.Errorf("Get ref id %q, want %q", gref.ID, tc.id)
			}
		})
	}
	bad := []struct {
		name string
		id   string
		rng  store.Range
	}{
		{"negative offset", ref.ID, store.Range{Offset: -1, Length: 1}},
		{"offset past end", ref.ID, store.Range{Offset: 1001, Length: -1}},
		{"length past end", ref.ID, store.Range{Offset: 0, Length: 1001}},
		{"tail past end", ref.ID, store.Range{Offset: 999, Length: 2}},
		{"length below -1", ref.ID, store.Range{Offset: 0, Length: -2}},
		{"empty artifact offset 1", empty.ID, store.Range{Offset: 1, Length: -1}},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			rng := tc.rng
			rc, _, err := st.Get(context.Background(), tc.id, &rng)
			if rc != nil {
				rc.Close()
			}
			if !errors.Is(err, store.ErrInvalidRange) {
				t.Errorf("Get(%+v) error = %v, want ErrInvalidRange", tc.rng, err)
			}
		})
	}
}

func testStatExists(t *testing.T, st store.Store) {
	ctx := context.Background()
	ref := put(t, st, []byte("stat me"), store.PutOptions{Namespace: "s", MIMEType: "text/plain"})
	got, err := st.Stat(ctx, ref.ID)
	if err != nil {
		t.Fatalf("Stat: %v", err)
	}
	if d := diffRef(got, ref); d != "" {
		t.Errorf("Stat: %s", d)
	}
	if ok, err := st.Exists(ctx, ref.ID); err != nil || !ok {
		t.Errorf("Exists(%s) = %v, %v; want true, nil", ref.ID, ok, err)
	}
	missing := "s_0123456789ab"
	if ok, err := st.Exists(ctx, missing); err != nil || ok {
		t.Errorf("Exists(%s) = %v, %v; want false, nil", missing, ok, err)
	}
	if _, err := st.Stat(ctx, missing); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Stat(%s) error = %v, want ErrNotFound", missing, err)
	}
	if _, _, err := st.Get(ctx, missing, nil); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get(%s) error = %v, want ErrNotFound", missing, err)
	}
}

func testInvalidID(t *testing.T, st store.Store) {
	ctx := context.Background()
	put(t, st, []byte("x"), store.PutOptions{Namespace: "ns"})
	for _, id := range []string{
		"", "x", "ns_", "_abc", "ns_XYZ", "NS_abc", "ns_abcg", "ns__abc", "-ns_abc", "ns-_abc",
		"../ns_abc", "ns_abc/..", "ns/x_abc", "ns_abc\x00", "ns_abc ", "ns_" + string(bytes.Repeat([]byte("a"), 65)),
		"abcdefghijabcdefghijabcdefghijabc_abc",
	} {
		if _, _, err := st.Get(ctx, id, nil); !errors.Is(err, store.ErrInvalidID) {
			t.Errorf("Get(%q) error = %v, want ErrInvalidID", id, err)
		}
		if _, err := st.Stat(ctx, id); !errors.Is(err, store.ErrInvalidID) {
			t.Errorf("Stat(%q) error = %v, want ErrInvalidID", id, err)
		}
		if ok, err := st.Exists(ctx, id); ok || !errors.Is(err, store.ErrInvalidID) {
			t.Errorf("Exists(%q) = %v, %v; want false, ErrInvalidID", id, ok, err)
		}
		if err := st.Delete(ctx, id); !errors.Is(err, store.ErrInvalidID) {
			t.Errorf("Delete(%q) error = %v, want ErrInvalidID", id, err)
		}
		if in, err := st.InScope(ctx, id, store.Scope{}); in || !errors.Is(err, store.ErrInvalidID) {
			t.Errorf("InScope(%q) = %v, %v; want false, ErrInvalidID", id, in, err)
		}
	}
	// An error names a long invalid id without repeating all of it.
	long := string(bytes.Repeat([]byte("A"), 100_000))
	if _, err := st.Stat(ctx, long); err == nil || len(err.Error()) > 300 {
		t.Errorf("Stat(100 KB id): error of %d bytes, want a short one", len(fmt.Sprint(err)))
	}
}

func testDelete(t *testing.T, st store.Store) {
	ctx := context.Background()
	data := RandomBytes(3, 70000)
	ref := put(t, st, data, store.PutOptions{Namespace: "del", Scope: store.Scope{SessionID: "s"}})
	keep := put(t, st, []byte("keep me"), store.PutOptions{Namespace: "del"})
	if err := st.Delete(ctx, ref.ID); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, _, err := st.Get(ctx, ref.ID, nil); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get after Delete: error = %v, want ErrNotFound", err)
	}
	if _, _, err := st.Get(ctx, ref.ID, &store.Range{Offset: 0, Length: 1}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ranged Get after Delete: error = %v, want ErrNotFound", err)
	}
	if _, err := st.Stat(ctx, ref.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Stat after Delete: error = %v, want ErrNotFound", err)
	}
	if ok, err := st.Exists(ctx, ref.ID); ok || err != nil {
		t.Errorf("Exists after Delete = %v, %v; want false, nil", ok, err)
	}
	if err := st.Delete(ctx, ref.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second Delete: error = %v, want ErrNotFound", err)
	}
	for _, scope := range []store.Scope{{}, {SessionID: "s"}} {
		if refs, _ := ListAll(t, st, scope); slices.Contains(ids(refs), ref.ID) {
			t.Errorf("List(%+v) after Delete still has %s", scope, ref.ID)
		}
	}
	if refs, _ := ListAll(t, st, store.Scope{}); !slices.Equal(ids(refs), []string{keep.ID}) {
		t.Errorf("List after Delete = %v, want [%s]", ids(refs), keep.ID)
	}
	// The same bytes can come back.
	again := put(t, st, data, store.PutOptions{Namespace: "del"})
	if again.ID != ref.ID {
		t.Errorf("re-put id %q, want %q", again.ID, ref.ID)
	}
	if got, _ := ReadAll(t, st, again.ID, nil); !bytes.Equal(got, data) {
		t.Errorf("Get after re-put returned %d bytes, want %d", len(got), len(data))
	}
}

func testListScope(t *testing.T, st store.Store) {
	scopes := []store.Scope{
		{TenantID: "t1", UserID: "u1", SessionID: "s1", TraceID: "a"},
		{TenantID: "t1", UserID: "u1", SessionID: "s2", TraceID: "b"},
		{TenantID: "t2", UserID: "u2", SessionID: "s1", TraceID: "c"},
		{},
	}
	var all []string
	for i, sc := range scopes {
		ref := put(t, st, []byte(fmt.Sprintf("scoped %d", i)), store.PutOptions{Namespace: "ls", Scope: sc})
		all = append(all, ref.ID)
	}
	cases := []struct {
		name   string
		filter store.Scope
		want   []string
	}{
		{"empty filter lists everything", store.Scope{}, all},
		{"session", store.Scope{SessionID: "s1"}, []string{all[0], all[2]}},
		{"tenant", store.Scope{TenantID: "t1"}, []string{all[0], all[1]}},
		{"tenant and session", store.Scope{TenantID: "t1", SessionID: "s2"}, []string{all[1]}},
		{"trace", store.Scope{TraceID: "c"}, []string{all[2]}},
		{"no match", store.Scope{TenantID: "t2", SessionID: "s2"}, nil},
		{"unknown user", store.Scope{UserID: "nobody"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			refs, _ := ListAll(t, st, tc.filter)
			if !slices.Equal(ids(refs), tc.want) {
				t.Errorf("List(%+v) = %v, want %v", tc.filter, ids(refs), tc.want)
			}
			for _, r := range refs {
				if !tc.filter.Contains(r.Scope) {
					t.Errorf("List(%+v) gave %s with scope %+v", tc.filter, r.ID, r.Scope)
				}
			}
		})
	}
}

func testListPages(t *testing.T, st store.Store) {
	ctx := context.Background()
	var all, even []string
	for i := range 25 {
		sc := store.Scope{SessionID: "odd"}
		if i%2 == 0 {
			sc.SessionID = "even"
		}
		ref := put(t, st, []byte(fmt.Sprintf("page item %d", i)), store.PutOptions{Namespace: "pg", Scope: sc})
		all = append(all, ref.ID)
		if i%2 == 0 {
			even = append(even, ref.ID)
		}
	}
	refs, pages := ListAll(t, st, store.Scope{})
	if !slices.Equal(ids(refs), all) {
		t.Errorf("List over pages = %v, want %v (oldest first)", ids(refs), all)
	}
	if pages < 3 {
		t.Errorf("25 artifacts took %d page(s); open must configure a page size of at most 10", pages)
	}
	refs, _ = ListAll(t, st, store.Scope{SessionID: "even"})
	if !slices.Equal(ids(refs), even) {
		t.Errorf("filtered List over pages = %v, want %v", ids(refs), even)
	}

	// A cursor survives deletes on both sides of it.
	first, next, err := st.List(ctx, store.Scope{}, "")
	if err != nil || next == "" || len(first) == 0 {
		t.Fatalf("first page: %d refs, next %q, err %v", len(first), next, err)
	}
	n := len(first)
	if err := st.Delete(ctx, first[n-1].ID); err != nil {
		t.Fatalf("Delete(%s): %v", first[n-1].ID, err)
	}
	if err := st.Delete(ctx, all[n]); err != nil {
		t.Fatalf("Delete(%s): %v", all[n], err)
	}
	var rest []store.Ref
	for cursor := next; cursor != ""; {
		page, nx, err := st.List(ctx, store.Scope{}, cursor)
		if err != nil {
			t.Fatalf("List(%q): %v", cursor, err)
		}
		rest = append(rest, page...)
		cursor = nx
	}
	if want := all[n+1:]; !slices.Equal(ids(rest), want) {
		t.Errorf("pages after deletes = %v, want %v", ids(rest), want)
	}
}

func testListInvalidCursor(t *testing.T, st store.Store) {
	put(t, st, []byte("x"), store.PutOptions{})
	for _, c := range []string{"not a cursor", "\x00", "-1"} {
		if _, _, err := st.List(context.Background(), store.Scope{}, c); !errors.Is(err, store.ErrInvalidCursor) {
			t.Errorf("List(cursor %q) error = %v, want ErrInvalidCursor", c, err)
		}
	}
}

func testTwoScopes(t *testing.T, st store.Store) {
	a := store.Scope{TenantID: "t", SessionID: "A"}
	b := store.Scope{TenantID: "t", SessionID: "B"}
	data := []byte("one blob, two sessions")
	ra := put(t, st, data, store.PutOptions{Namespace: "sc", Scope: a, MIMEType: "text/plain"})
	time.Sleep(2 * time.Millisecond)
	rb := put(t, st, data, store.PutOptions{Namespace: "sc", Scope: b, MIMEType: "text/other"})
	ra2 := put(t, st, data, store.PutOptions{Namespace: "sc", Scope: a})
	if ra.ID != rb.ID || ra.ID != ra2.ID {
		t.Fatalf("ids %q, %q, %q; want one", ra.ID, rb.ID, ra2.ID)
	}
	if ra.Scope != a || rb.Scope != b || ra2.Scope != a {
		t.Errorf("Put scopes %+v, %+v, %+v; want each put's own", ra.Scope, rb.Scope, ra2.Scope)
	}
	// Each scope has its own creation: when the bytes were first put
	// under it, not when another scope put them.
	if rb.MIMEType != "text/plain" || !rb.Created.After(ra.Created) || !ra2.Created.Equal(ra.Created) {
		t.Errorf("puts created %v, %v, %v (MIME type %q): want the first put's MIME type, b's own later creation, a's first kept",
			ra.Created, rb.Created, ra2.Created, rb.MIMEType)
	}
	for _, tc := range []struct {
		filter store.Scope
		want   []store.Scope
	}{
		{store.Scope{}, []store.Scope{a}},
		{store.Scope{TenantID: "t"}, []store.Scope{a}},
		{store.Scope{SessionID: "A"}, []store.Scope{a}},
		{store.Scope{SessionID: "B"}, []store.Scope{b}},
		{store.Scope{SessionID: "C"}, nil},
	} {
		refs, _ := ListAll(t, st, tc.filter)
		var got []store.Scope
		for _, r := range refs {
			if r.ID != ra.ID {
				t.Errorf("List(%+v) gave %s, want %s", tc.filter, r.ID, ra.ID)
			}
			if want := map[store.Scope]time.Time{a: ra.Created, b: rb.Created}[r.Scope]; !r.Created.Equal(want) {
				t.Errorf("List(%+v) created %v, want %v (its scope's)", tc.filter, r.Created, want)
			}
			got = append(got, r.Scope)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("List(%+v) scopes = %+v, want %+v", tc.filter, got, tc.want)
		}
	}
	if ref, err := st.Stat(context.Background(), ra.ID); err != nil || ref.Scope != a {
		t.Errorf("Stat = %+v, %v; want the first scope %+v", ref, err, a)
	}
}

// testInScope checks the scope-membership query access checks use: true
// when any scope the artifact was put under is contained in the filter,
// whichever of its scopes came first, across namespaces, and until Delete.
func testInScope(t *testing.T, st store.Store) {
	ctx := context.Background()
	a := store.Scope{TenantID: "t", UserID: "u", SessionID: "A", TraceID: "1"}
	b := store.Scope{TenantID: "t", SessionID: "B"}
	data := []byte("one artifact, two sessions")
	ref := put(t, st, data, store.PutOptions{Namespace: "in", Scope: a})
	put(t, st, data, store.PutOptions{Namespace: "in", Scope: b})
	other := put(t, st, data, store.PutOptions{Namespace: "elsewhere", Scope: store.Scope{SessionID: "C"}})
	// Many artifacts of session B, so a List-based answer would page.
	for i := range 25 {
		put(t, st, RandomBytes(uint64(900+i), 10), store.PutOptions{Namespace: "in", Scope: b})
	}
	for _, tc := range []struct {
		id     string
		filter store.Scope
		want   bool
	}{
		{ref.ID, store.Scope{}, true},
		{ref.ID, store.Scope{SessionID: "A"}, true},
		{ref.ID, store.Scope{SessionID: "B"}, true},
		{ref.ID, store.Scope{TenantID: "t", SessionID: "B"}, true},
		{ref.ID, store.Scope{SessionID: "A", TraceID: "1"}, true},
		{ref.ID, store.Scope{SessionID: "A", TraceID: "2"}, false},
		{ref.ID, store.Scope{SessionID: "B", UserID: "u"}, false},
		{ref.ID, store.Scope{SessionID: "C"}, false},
		{ref.ID, store.Scope{TenantID: "other"}, false},
		{other.ID, store.Scope{SessionID: "C"}, true},
		{other.ID, store.Scope{SessionID: "A"}, false},
	} {
		in, err := st.InScope(ctx, tc.id, tc.filter)
		if err != nil || in != tc.want {
			t.Errorf("InScope(%s, %+v) = %v, %v; want %v", tc.id, tc.filter, in, err, tc.want)
		}
	}
	if err := st.Delete(ctx, ref.ID); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if in, err := st.InScope(ctx, ref.ID, store.Scope{SessionID: "A"}); in || !errors.Is(err, store.ErrNotFound) {
		t.Errorf("InScope after Delete = %v, %v; want false, ErrNotFound", in, err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := st.InScope(cancelled, other.ID, store.Scope{}); !errors.Is(err, context.Canceled) {
		t.Errorf("InScope with a cancelled context: %v, want context.Canceled", err)
	}
}

// testOwned checks the access question of a caller that is an owner: an
// artifact is its when one of the artifact's scopes has its tenant and
// user (an empty tenant matching only an empty one), whoever put the
// bytes first, and it is shown its own scopes with their own creation.
func testOwned(t *testing.T, st store.Store) {
	ctx := context.Background()
	data := []byte("the same bytes, three owners")
	tenantA := store.Scope{TenantID: "a", UserID: "u", SessionID: "s1", TraceID: "t1"}
	noTenant := store.Scope{UserID: "u", SessionID: "s2"}
	noTenant2 := store.Scope{UserID: "u", SessionID: "s3"}
	first := put(t, st, data, store.PutOptions{Namespace: "own", Scope: tenantA, Filename: "a.txt", Source: store.Source{Server: "a"}})
	time.Sleep(2 * time.Millisecond)
	second := put(t, st, data, store.PutOptions{Namespace: "own", Scope: noTenant, Filename: "n.txt", Source: store.Source{Server: "n"}})
	third := put(t, st, data, store.PutOptions{Namespace: "own", Scope: noTenant2})
	lone := put(t, st, []byte("only tenant a's"), store.PutOptions{Namespace: "own", Scope: tenantA})
	for _, tc := range []struct {
		id      string
		owner   store.Owner
		want    []store.Scope
		created []time.Time
	}{
		{first.ID, store.Owner{TenantID: "a", UserID: "u"}, []store.Scope{tenantA}, []time.Time{first.Created}},
		{first.ID, store.Owner{UserID: "u"}, []store.Scope{noTenant, noTenant2}, []time.Time{second.Created, third.Created}},
		{first.ID, store.Owner{TenantID: "b", UserID: "u"}, nil, nil},
		{first.ID, store.Owner{}, nil, nil},
		{lone.ID, store.Owner{UserID: "u"}, nil, nil},
		{lone.ID, store.Owner{TenantID: "a", UserID: "u"}, []store.Scope{tenantA}, []time.Time{lone.Created}},
	} {
		refs, err := st.Owned(ctx, tc.id, tc.owner)
		if err != nil {
			t.Errorf("Owned(%s, %+v): %v", tc.id, tc.owner, err)
			continue
		}
		var got []store.Scope
		for i, r := range refs {
			got = append(got, r.Scope)
			if r.ID != tc.id || r.SHA256 == "" || i >= len(tc.created) || !r.Created.Equal(tc.created[i]) {
				t.Errorf("Owned(%s, %+v)[%d] = %+v; want created %v", tc.id, tc.owner, i, r, tc.created)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("Owned(%s, %+v) scopes = %+v, want %+v", tc.id, tc.owner, got, tc.want)
		}
	}
	if !second.Created.After(first.Created) {
		t.Errorf("a later owner's put created %v, the first %v: want its own, later time", second.Created, first.Created)
	}
	// Each scope is shown the name and source its own puts gave, never
	// another owner's.
	var names []string
	for _, o := range []store.Owner{tenantA.Owner(), noTenant.Owner()} {
		refs, _ := st.Owned(ctx, first.ID, o)
		for _, r := range refs {
			names = append(names, r.Filename+"/"+r.Source.Server)
		}
	}
	if ref, err := st.Stat(ctx, first.ID); err == nil {
		names = append(names, ref.Filename+"/"+ref.Source.Server)
	}
	if want := []string{"a.txt/a", "n.txt/n", "/", "a.txt/a"}; !slices.Equal(names, want) {
		t.Errorf("names and sources as each scope sees them (then Stat) = %q, want %q", names, want)
	}
	if _, err := st.Owned(ctx, store.NewID("own", SHA256Hex([]byte("never put")), store.DefaultIDPrefixLen), store.Owner{}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Owned of a missing id: %v, want ErrNotFound", err)
	}
	if _, err := st.Owned(ctx, "not an id", store.Owner{}); !errors.Is(err, store.ErrInvalidID) {
		t.Errorf("Owned of an invalid id: %v, want ErrInvalidID", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := st.Owned(cancelled, first.ID, store.Owner{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Owned with a cancelled context: %v, want context.Canceled", err)
	}
}

func testMaxBytes(t *testing.T, st store.Store) {
	ctx := context.Background()
	eleven := []byte("eleven byte")
	_, err := st.Put(ctx, bytes.NewReader(eleven), store.PutOptions{Namespace: "mx", MaxBytes: 10})
	if !errors.Is(err, store.ErrTooLarge) {
		t.Fatalf("Put of 11 bytes with MaxBytes 10: error = %v, want ErrTooLarge", err)
	}
	wantEmpty(t, st, eleven, "mx")
	big := RandomBytes(4, 1<<20)
	_, err = st.Put(ctx, bytes.NewReader(big), store.PutOptions{Namespace: "mx", MaxBytes: 1000})
	if !errors.Is(err, store.ErrTooLarge) {
		t.Fatalf("Put of 1 MiB with MaxBytes 1000: error = %v, want ErrTooLarge", err)
	}
	wantEmpty(t, st, big, "mx")
	ten := eleven[:10]
	ref, err := st.Put(ctx, bytes.NewReader(ten), store.PutOptions{Namespace: "mx", MaxBytes: 10})
	if err != nil {
		t.Fatalf("Put of 10 bytes with MaxBytes 10: %v", err)
	}
	if got, _ := ReadAll(t, st, ref.ID, nil); !bytes.Equal(got, ten) {
		t.Errorf("Get = %q, want %q", got, ten)
	}
	// An oversized put of bytes already stored fails and leaves them alone.
	if _, err := st.Put(ctx, bytes.NewReader(ten), store.PutOptions{Namespace: "mx", MaxBytes: 9, Scope: store.Scope{SessionID: "x"}}); !errors.Is(err, store.ErrTooLarge) {
		t.Errorf("Put of stored 10 bytes with MaxBytes 9: error = %v, want ErrTooLarge", err)
	}
	if refs, _ := ListAll(t, st, store.Scope{SessionID: "x"}); len(refs) != 0 {
		t.Errorf("failed put recorded its scope: %v", ids(refs))
	}
	if got, _ := ReadAll(t, st, ref.ID, nil); !bytes.Equal(got, ten) {
		t.Errorf("Get after failed put = %q, want %q", got, ten)
	}
}

// failingReader returns data, then err.
type failingReader struct {
	data []byte
	err  error
}

// Read returns the data, then the error.
func (r *failingReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func testFailingReader(t *testing.T, st store.Store) {
	errBoom := errors.New("upstream connection reset")
	for _, n := range []int{0, 1, 100 << 10, 2 << 20} {
		data := RandomBytes(uint64(5+n), n)
		_, err := st.Put(context.Background(), &failingReader{data: data, err: errBoom}, store.PutOptions{Namespace: "fail"})
		if !errors.Is(err, errBoom) {
			t.Errorf("Put failing after %d bytes: error = %v, want it to wrap the reader's error", n, err)
		}
		wantEmpty(t, st, data, "fail")
	}
}

// cancelReader cancels its context after the first read.
type cancelReader struct {
	r      io.Reader
	cancel context.CancelFunc
}

// Read reads, then cancels the context.
func (c *cancelReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.cancel()
	return n, err
}

func testContextCancelled(t *testing.T, st store.Store) {
	data := RandomBytes(6, 1<<20)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := st.Put(ctx, bytes.NewReader(data), store.PutOptions{Namespace: "cx"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Put with a cancelled context: error = %v, want context.Canceled", err)
	}
	wantEmpty(t, st, data, "cx")

	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	r := &cancelReader{r: bytes.NewReader(data), cancel: cancel2}
	if _, err := st.Put(ctx2, r, store.PutOptions{Namespace: "cx"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Put cancelled mid-stream: error = %v, want context.Canceled", err)
	}
	wantEmpty(t, st, data, "cx")

	ref := put(t, st, data, store.PutOptions{Namespace: "cx"})
	if _, _, err := st.Get(ctx, ref.ID, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Get with a cancelled context: error = %v, want context.Canceled", err)
	}
	if _, err := st.Stat(ctx, ref.ID); !errors.Is(err, context.Canceled) {
		t.Errorf("Stat with a cancelled context: error = %v, want context.Canceled", err)
	}
	if _, err := st.Exists(ctx, ref.ID); !errors.Is(err, context.Canceled) {
		t.Errorf("Exists with a cancelled context: error = %v, want context.Canceled", err)
	}
	if _, _, err := st.List(ctx, store.Scope{}, ""); !errors.Is(err, context.Canceled) {
		t.Errorf("List with a cancelled context: error = %v, want context.Canceled", err)
	}
	if err := st.Delete(ctx, ref.ID); !errors.Is(err, context.Canceled) {
		t.Errorf("Delete with a cancelled context: error = %v, want context.Canceled", err)
	}
	if got, _ := ReadAll(t, st, ref.ID, nil); !bytes.Equal(got, data) {
		t.Errorf("artifact changed by cancelled calls")
	}
}

func testConcurrent(t *testing.T, st store.Store) {
	const workers = 16
	ctx := context.Background()
	shared := RandomBytes(7, 300<<10)
	var wg sync.WaitGroup
	sharedIDs := make([]string, workers)
	ownIDs := make([]string, workers)
	errs := make(chan error, workers*4)
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := store.Scope{SessionID: fmt.Sprintf("s%02d", i)}
			own := RandomBytes(uint64(100+i), 50<<10+i)
			for round := range 2 {
				ref, err := st.Put(ctx, bytes.NewReader(shared), store.PutOptions{Namespace: "cc", Scope: sc})
				if err != nil {
					errs <- fmt.Errorf("worker %d: put shared: %w", i, err)
					return
				}
				sharedIDs[i] = ref.ID
				ref, err = st.Put(ctx, bytes.NewReader(own), store.PutOptions{Namespace: "cc", Scope: sc})
				if err != nil {
					errs <- fmt.Errorf("worker %d: put own: %w", i, err)
					return
				}
				if round == 1 && ref.ID != ownIDs[i] {
					errs <- fmt.Errorf("worker %d: own content got ids %s and %s", i, ownIDs[i], ref.ID)
				}
				ownIDs[i] = ref.ID
				rc, _, err := st.Get(ctx, ref.ID, nil)
				if err != nil {
					errs <- fmt.Errorf("worker %d: get: %w", i, err)
					return
				}
				got, err := io.ReadAll(rc)
				rc.Close()
				if err != nil {
					errs <- fmt.Errorf("worker %d: read back %d bytes: %w", i, len(got), err)
				} else if !bytes.Equal(got, own) {
					errs <- fmt.Errorf("worker %d: read back %d bytes, want %d", i, len(got), len(own))
				}
				if _, _, err := st.List(ctx, sc, ""); err != nil {
					errs <- fmt.Errorf("worker %d: list: %w", i, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	for i := range workers {
		if sharedIDs[i] != sharedIDs[0] {
			t.Errorf("shared content got ids %s and %s", sharedIDs[0], sharedIDs[i])
		}
	}
	uniq := map[string]bool{sharedIDs[0]: true}
	for _, id := range ownIDs {
		uniq[id] = true
	}
	if len(uniq) != workers+1 {
		t.Errorf("%d distinct ids, want %d", len(uniq), workers+1)
	}
	refs, _ := ListAll(t, st, store.Scope{})
	if len(refs) != workers+1 {
		t.Errorf("List has %d artifacts, want %d", len(refs), workers+1)
	}
	for i := range workers {
		sc := store.Scope{SessionID: fmt.Sprintf("s%02d", i)}
		refs, _ := ListAll(t, st, sc)
		got := ids(refs)
		slices.Sort(got)
		want := []string{sharedIDs[0], ownIDs[i]}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("List(%+v) = %v, want %v", sc, got, want)
		}
	}
	if got, _ := ReadAll(t, st, sharedIDs[0], nil); !bytes.Equal(got, shared) {
		t.Errorf("shared content read back as %d bytes, want %d", len(got), len(shared))
	}
}

func testClose(t *testing.T, st store.Store) {
	ref := put(t, st, []byte("before close"), store.PutOptions{Namespace: "cl"})
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if err := st.Close(cancelled); err != nil {
		t.Fatalf("Close with a done context: %v", err)
	}
	if err := st.Close(context.Background()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	ctx := context.Background()
	if _, err := st.Put(ctx, bytes.NewReader([]byte("after")), store.PutOptions{}); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Put after Close: error = %v, want ErrClosed", err)
	}
	if _, _, err := st.Get(ctx, ref.ID, nil); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Get after Close: error = %v, want ErrClosed", err)
	}
	if _, err := st.Stat(ctx, ref.ID); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Stat after Close: error = %v, want ErrClosed", err)
	}
	if _, err := st.Exists(ctx, ref.ID); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Exists after Close: error = %v, want ErrClosed", err)
	}
	if err := st.Delete(ctx, ref.ID); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Delete after Close: error = %v, want ErrClosed", err)
	}
	if _, err := st.InScope(ctx, ref.ID, store.Scope{}); !errors.Is(err, store.ErrClosed) {
		t.Errorf("InScope after Close: error = %v, want ErrClosed", err)
	}
	if _, _, err := st.List(ctx, store.Scope{}, ""); !errors.Is(err, store.ErrClosed) {
		t.Errorf("List after Close: error = %v, want ErrClosed", err)
	}
}

package memstore_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/memstore"
	"github.com/mcpx-dev/mcpx/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return memstore.New(memstore.Config{PageSize: 7})
	})
}

func TestShortPrefixesLengthen(t *testing.T) {
	ctx := context.Background()
	s := memstore.New(memstore.Config{IDPrefixLen: 1})
	seen := map[string][]byte{}
	for i := range 100 {
		data := []byte(fmt.Sprint("content ", i))
		ref, err := s.Put(ctx, bytes.NewReader(data), store.PutOptions{Namespace: "n"})
		if err != nil {
			t.Fatal(err)
		}
		if _, dup := seen[ref.ID]; dup {
			t.Fatalf("id %s given twice", ref.ID)
		}
		if _, p, _ := store.SplitID(ref.ID); (len(p)-1)%store.IDPrefixStep != 0 || p != ref.SHA256[:len(p)] {
			t.Errorf("id %s: prefix not 1+4k characters of %s", ref.ID, ref.SHA256)
		}
		seen[ref.ID] = data
	}
	long := 0
	for id, data := range seen {
		if len(id) > len("n_")+1 {
			long++
		}
		if got, _ := storetest.ReadAll(t, s, id, nil); !bytes.Equal(got, data) {
			t.Errorf("Get(%s) = %q, want %q", id, got, data)
		}
	}
	// 100 contents cannot fit in 16 one-character ids.
	if long < 100-16 {
		t.Errorf("%d lengthened ids, want at least %d", long, 100-16)
	}
}

func BenchmarkPut(b *testing.B) {
	ctx := context.Background()
	s := memstore.New(memstore.Config{})
	data := storetest.RandomBytes(13, 10<<20)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		copy(data, fmt.Sprintf("%016d", i)) // new content each time
		ref, err := s.Put(ctx, bytes.NewReader(data), store.PutOptions{Namespace: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := s.Delete(ctx, ref.ID); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// The same bytes seen again kept the first put's name and
// source ("content.png" for a later "thumbnail.png"). A put returns its
// own name and source; Stat and List show the latest put's under each
// scope, and one scope never sees the name another scope gave.
func TestRePutNamesLatest(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Config{})
	a := store.Scope{UserID: "alice", SessionID: "A"}
	b := store.Scope{UserID: "bob", SessionID: "B"}
	png := []byte("\x89PNG\r\n\x1a\n same bytes")
	put := func(name, layer string, sc store.Scope) store.Ref {
		t.Helper()
		ref, err := st.Put(ctx, bytes.NewReader(png), store.PutOptions{Namespace: "srv", MIMEType: "image/png", Filename: name, Scope: sc, Source: store.Source{Server: "srv", Tool: "t", Layer: layer}})
		if err != nil {
			t.Fatal(err)
		}
		return ref
	}
	first := put("content.png", "typedcontent", a)
	later := put("thumbnail.png", "fields", a)
	if later.ID != first.ID {
		t.Fatalf("ids %s and %s: want one", first.ID, later.ID)
	}
	if later.Filename != "thumbnail.png" || later.Source.Layer != "fields" || later.MIMEType != "image/png" {
		t.Errorf("the later put returned %+v, want its own name and layer", later)
	}
	if ref, _ := st.Stat(ctx, first.ID); ref.Filename != "thumbnail.png" || ref.Source.Layer != "fields" {
		t.Errorf("Stat = %+v, want the latest name and layer", ref)
	}
	other := put("bobs-secret-name.png", "magicbytes", b)
	if other.Filename != "bobs-secret-name.png" {
		t.Errorf("bob's put returned %+v", other)
	}
	for _, tc := range []struct {
		scope store.Scope
		want  string
	}{{store.Scope{SessionID: "A"}, "thumbnail.png"}, {store.Scope{UserID: "bob"}, "bobs-secret-name.png"}} {
		refs, _, err := st.List(ctx, tc.scope, "")
		if err != nil || len(refs) != 1 || refs[0].Filename != tc.want {
			t.Errorf("List(%+v) = %+v, %v; want one ref named %s", tc.scope, refs, err, tc.want)
		}
	}
	if ref, _ := st.Stat(ctx, first.ID); ref.Filename != "thumbnail.png" {
		t.Errorf("Stat after bob's put = %+v: another scope's name leaked", ref)
	}
	// a put without a name keeps the scope's latest name
	if ref := put("", "sizenet", a); ref.Filename != "thumbnail.png" {
		t.Errorf("an unnamed re-put returned %q", ref.Filename)
	}
}

func TestRetention(t *testing.T) {
	storetest.RunRetention(t, func(t *testing.T) store.Store { return memstore.New(memstore.Config{}) })
}

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

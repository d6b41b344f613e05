package noopstore_test

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/noopstore"
	"github.com/mcpx-dev/mcpx/store/storetest"
)

func TestPutHashesAndKeepsNothing(t *testing.T) {
	ctx := context.Background()
	s := noopstore.New(nil)
	for _, data := range [][]byte{{}, []byte("x"), storetest.RandomBytes(1, 3<<20)} {
		o := store.PutOptions{Namespace: "Tableau", MIMEType: "application/pdf", Filename: "f.pdf",
			Scope: store.Scope{SessionID: "s"}, Source: store.Source{Server: "tableau"}}
		ref, err := s.Put(ctx, bytes.NewReader(data), o)
		if err != nil {
			t.Fatalf("Put: %v", err)
		}
		sum := storetest.SHA256Hex(data)
		want := store.Ref{ID: "truncated_" + sum[:12], MIMEType: o.MIMEType, SizeBytes: int64(len(data)), Filename: o.Filename,
			SHA256: sum, Scope: o.Scope, Source: o.Source, Created: ref.Created, Truncated: true}
		if !reflect.DeepEqual(ref, want) || ref.Created.IsZero() {
			t.Errorf("Put = %+v, want %+v", ref, want)
		}
		if !store.ValidID(ref.ID) {
			t.Errorf("id %q not valid", ref.ID)
		}
		if _, _, err := s.Get(ctx, ref.ID, nil); !errors.Is(err, store.ErrNotStored) {
			t.Errorf("Get: %v, want ErrNotStored", err)
		}
		if _, err := s.Stat(ctx, ref.ID); !errors.Is(err, store.ErrNotStored) {
			t.Errorf("Stat: %v, want ErrNotStored", err)
		}
		if ok, err := s.Exists(ctx, ref.ID); ok || err != nil {
			t.Errorf("Exists = %v, %v; want false, nil", ok, err)
		}
		if err := s.Delete(ctx, ref.ID); !errors.Is(err, store.ErrNotStored) {
			t.Errorf("Delete: %v, want ErrNotStored", err)
		}
	}
	if refs, next, err := s.List(ctx, store.Scope{}, ""); len(refs) != 0 || next != "" || err != nil {
		t.Errorf("List = %v, %q, %v; want nothing", refs, next, err)
	}
	if _, _, err := s.List(ctx, store.Scope{}, "s1"); !errors.Is(err, store.ErrInvalidCursor) {
		t.Errorf("List with a cursor: %v, want ErrInvalidCursor", err)
	}
}

func TestWarnsOnce(t *testing.T) {
	var out bytes.Buffer
	s := noopstore.New(hclog.New(&hclog.LoggerOptions{Output: &out, Level: hclog.Warn}))
	if out.Len() != 0 {
		t.Fatalf("New logged %q before any use", out.String())
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.Put(context.Background(), strings.NewReader("x"), store.PutOptions{}); err != nil {
				t.Errorf("Put: %v", err)
			}
		}()
	}
	wg.Wait()
	if n := strings.Count(out.String(), "artifact store disabled"); n != 1 {
		t.Errorf("warning logged %d times, want once:\n%s", n, out.String())
	}
	if !strings.Contains(out.String(), "[WARN]") {
		t.Errorf("warning not at warn level: %q", out.String())
	}
}

func TestErrors(t *testing.T) {
	ctx := context.Background()
	s := noopstore.New(nil)
	if _, err := s.Put(ctx, strings.NewReader("eleven byte"), store.PutOptions{MaxBytes: 10}); !errors.Is(err, store.ErrTooLarge) {
		t.Errorf("Put over MaxBytes: %v, want ErrTooLarge", err)
	}
	errBoom := errors.New("boom")
	if _, err := s.Put(ctx, &failing{err: errBoom}, store.PutOptions{}); !errors.Is(err, errBoom) {
		t.Errorf("Put from a failing reader: %v, want it wrapped", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Put(cancelled, strings.NewReader("x"), store.PutOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Put with a cancelled context: %v", err)
	}
	if _, err := s.Stat(cancelled, "truncated_0123456789ab"); !errors.Is(err, context.Canceled) {
		t.Errorf("Stat with a cancelled context: %v", err)
	}
	for _, id := range []string{"", "../x", "truncated_XYZ"} {
		if _, _, err := s.Get(ctx, id, nil); !errors.Is(err, store.ErrInvalidID) {
			t.Errorf("Get(%q): %v, want ErrInvalidID", id, err)
		}
		if ok, err := s.Exists(ctx, id); ok || !errors.Is(err, store.ErrInvalidID) {
			t.Errorf("Exists(%q) = %v, %v; want false, ErrInvalidID", id, ok, err)
		}
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := s.Put(ctx, strings.NewReader("x"), store.PutOptions{}); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Put after Close: %v, want ErrClosed", err)
	}
	if _, _, err := s.List(ctx, store.Scope{}, ""); !errors.Is(err, store.ErrClosed) {
		t.Errorf("List after Close: %v, want ErrClosed", err)
	}
	if _, err := s.Exists(ctx, "truncated_0123456789ab"); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Exists after Close: %v, want ErrClosed", err)
	}
}

type failing struct{ err error }

func (f *failing) Read([]byte) (int, error) { return 0, f.err }

func TestInScopeAndOwnedNotStored(t *testing.T) {
	ctx := context.Background()
	s := noopstore.New(hclog.NewNullLogger())
	ref, err := s.Put(ctx, strings.NewReader("x"), store.PutOptions{Scope: store.Scope{SessionID: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	if in, err := s.InScope(ctx, ref.ID, store.Scope{SessionID: "a"}); in || !errors.Is(err, store.ErrNotStored) {
		t.Errorf("InScope = %v, %v; want false, ErrNotStored", in, err)
	}
	if _, err := s.InScope(ctx, "not an id", store.Scope{}); !errors.Is(err, store.ErrInvalidID) {
		t.Errorf("InScope(invalid) = %v, want ErrInvalidID", err)
	}
	if refs, err := s.Owned(ctx, ref.ID, store.Owner{}); refs != nil || !errors.Is(err, store.ErrNotStored) {
		t.Errorf("Owned = %v, %v; want nil, ErrNotStored", refs, err)
	}
}

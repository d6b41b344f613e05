//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package fsstore

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/storetest"
)

// fillIndex adds n artifacts to the store in dir as rows only (no blob
// files), in one transaction: the index of a big store in seconds. The
// rows spread over 100 sessions.
func fillIndex(tb testing.TB, dir string, n int) {
	tb.Helper()
	ctx := context.Background()
	s, err := Open(ctx, dir, Config{})
	if err != nil {
		tb.Fatal(err)
	}
	defer s.Close(ctx)
	db, err := s.idx.db(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		tb.Fatal(err)
	}
	defer tx.Rollback()
	now := time.Now().UTC()
	for i := range n {
		sum := storetest.SHA256Hex([]byte("fill " + strconv.Itoa(i)))
		ref := store.Ref{ID: store.NewID("fill", sum, store.DefaultIDPrefixLen), SHA256: sum, SizeBytes: 1000 + int64(i%5000),
			MIMEType: "application/pdf", Filename: "f.pdf", Created: now,
			Scope: store.Scope{TenantID: "t", SessionID: "s" + strconv.Itoa(i%100), TraceID: strconv.Itoa(i)}}
		if _, err := insertArtifact(ctx, tx, "fill", ref); err != nil {
			tb.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		tb.Fatal(err)
	}
}

// TestFillStore fills the store in $FSSTORE_FILL_DIR with $FSSTORE_FILL_N
// index rows (scripts/bench.sh, BENCH=store); skipped otherwise.
func TestFillStore(t *testing.T) {
	t.Parallel()
	dir := os.Getenv("FSSTORE_FILL_DIR")
	if dir == "" {
		t.Skip("FSSTORE_FILL_DIR not set")
	}
	n, err := strconv.Atoi(os.Getenv("FSSTORE_FILL_N"))
	if err != nil {
		t.Fatal(err)
	}
	fillIndex(t, dir, n)
	s := openT(t, dir, Config{})
	putT(t, s, []byte("a real artifact"), store.PutOptions{Namespace: "real"})
}

var benchStores sync.Map // n → dir

// benchStore returns a store folder holding n filled rows and one real
// artifact, made once per test binary.
func benchStore(b *testing.B, n int) (string, store.Ref) {
	type made struct {
		dir string
		ref store.Ref
	}
	if m, ok := benchStores.Load(n); ok {
		return m.(made).dir, m.(made).ref
	}
	dir, err := os.MkdirTemp("", "fsstore-bench-")
	if err != nil {
		b.Fatal(err)
	}
	fillIndex(b, dir, n)
	s, err := Open(context.Background(), dir, Config{})
	if err != nil {
		b.Fatal(err)
	}
	ref, err := s.Put(context.Background(), bytes.NewReader([]byte("a real artifact")),
		store.PutOptions{Namespace: "real", Scope: store.Scope{SessionID: "s7"}})
	if err != nil {
		b.Fatal(err)
	}
	s.Close(context.Background())
	benchStores.Store(n, made{dir, ref})
	return dir, ref
}

// BenchmarkIndex: each operation on stores of 0, 10,000 and 100,000
// artifacts; the figures should not grow with the store.
func BenchmarkIndex(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{0, 10_000, 100_000} {
		b.Run(fmt.Sprintf("Open+Stat/n=%d", n), func(b *testing.B) {
			dir, ref := benchStore(b, n)
			b.ReportAllocs()
			for b.Loop() {
				s, err := Open(ctx, dir, Config{})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := s.Stat(ctx, ref.ID); err != nil {
					b.Fatal(err)
				}
				s.Close(ctx)
			}
		})
		b.Run(fmt.Sprintf("OpenNoIndex/n=%d", n), func(b *testing.B) {
			dir, _ := benchStore(b, n)
			b.ReportAllocs()
			for b.Loop() {
				s, err := Open(ctx, dir, Config{})
				if err != nil {
					b.Fatal(err)
				}
				s.Close(ctx)
			}
		})
		for _, op := range []string{"Put", "Get", "Stat", "InScope", "ListFirst", "ListFirstSession", "ListNewest"} {
			b.Run(fmt.Sprintf("%s/n=%d", op, n), func(b *testing.B) {
				dir, ref := benchStore(b, n)
				s := openT(b, dir, Config{})
				data := storetest.RandomBytes(uint64(n), 1024)
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					var err error
					switch op {
					case "Put":
						i++
						copy(data, fmt.Sprintf("%d-%016d", n, i))
						_, err = s.Put(ctx, bytes.NewReader(data), store.PutOptions{Namespace: "bench"})
					case "Get":
						var rc interface{ Close() error }
						rc, _, err = s.Get(ctx, ref.ID, nil)
						if err == nil {
							rc.Close()
						}
					case "Stat":
						_, err = s.Stat(ctx, ref.ID)
					case "InScope":
						_, err = s.InScope(ctx, ref.ID, store.Scope{SessionID: "s7"})
					case "ListFirst":
						_, _, err = s.List(ctx, store.Scope{}, "")
					case "ListFirstSession":
						_, _, err = s.List(ctx, store.Scope{SessionID: "s7"}, "")
					case "ListNewest":
						_, _, err = s.ListOrder(ctx, store.Scope{}, "", store.NewestFirst)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkPutParallel: small (1 KiB) puts from 16 goroutines on one
// handle.
func BenchmarkPutParallel(b *testing.B) {
	ctx := context.Background()
	s := openT(b, b.TempDir(), Config{})
	var seq atomic.Int64
	b.SetParallelism(16) // × GOMAXPROCS goroutines; at least 16
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		data := storetest.RandomBytes(1, 1024)
		for pb.Next() {
			copy(data, fmt.Sprintf("%016d", seq.Add(1)))
			if _, err := s.Put(ctx, bytes.NewReader(data), store.PutOptions{Namespace: "par"}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkPutProcesses: 4 processes putting 20 KB artifacts into one
// folder at once; one op is one put (of the 4×N).
func BenchmarkPutProcesses(b *testing.B) {
	dir := b.TempDir()
	openT(b, dir, Config{}).Close(context.Background())
	const procs = 4
	per := max(1, b.N/procs)
	b.ResetTimer()
	var wg sync.WaitGroup
	for p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := helperCmd(dir, "writer", "FSSTORE_TAG=p"+strconv.Itoa(p), "FSSTORE_N="+strconv.Itoa(per))
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Errorf("writer: %v: %s", err, out)
			}
		}()
	}
	wg.Wait()
}

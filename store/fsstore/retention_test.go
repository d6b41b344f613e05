//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package fsstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/storetest"
)

func TestRetention(t *testing.T) {
	t.Parallel()
	storetest.RunRetention(t, func(t *testing.T) store.Store {
		return openT(t, t.TempDir(), Config{PageSize: 7})
	})
}

// gcPolicy is what the gc helper and the tests beside it collect: each
// session keeps its 20 newest artifacts.
var gcPolicy = store.Retention{MaxArtifactsPerSession: 20, Strategy: store.StrategyFIFO}

// gcHelper collects gcPolicy, killed at FSSTORE_POINT when set, and
// prints the ids it removed.
func gcHelper(ctx context.Context, s *Store) error {
	if n, err := strconv.Atoi(os.Getenv("FSSTORE_BATCH")); err == nil {
		collectBatch = n
	}
	if point := os.Getenv("FSSTORE_POINT"); point != "" {
		s.hook.fn = func(p string) {
			if p == point {
				killSelf(p)
			}
		}
	}
	rep, err := s.Collect(ctx, gcPolicy, store.CollectOptions{})
	if err != nil {
		return err
	}
	for _, r := range rep.Removed {
		fmt.Println(r.ID)
	}
	return s.Close(ctx)
}

// fillSessions puts n small artifacts in session "big" and 3 in "small"
// and returns the ids gcPolicy keeps and those it removes.
func fillSessions(t *testing.T, s *Store, n int) (keep, gone []string) {
	t.Helper()
	for i := range n {
		ref := putT(t, s, []byte(fmt.Sprintf("big-%d", i)), store.PutOptions{Scope: store.Scope{SessionID: "big"}})
		if i < n-int(gcPolicy.MaxArtifactsPerSession) {
			gone = append(gone, ref.ID)
		} else {
			keep = append(keep, ref.ID)
		}
	}
	for i := range 3 {
		keep = append(keep, putT(t, s, []byte(fmt.Sprintf("small-%d", i)), store.PutOptions{Scope: store.Scope{SessionID: "small"}}).ID)
	}
	return keep, gone
}

func sortedIDs(refs []store.Ref) []string {
	var out []string
	for _, r := range refs {
		out = append(out, r.ID)
	}
	slices.Sort(out)
	return out
}

// TestCollectCrash kills a gc at each of its steps: the store stays
// consistent, nothing gc did not choose is lost, and a second gc
// finishes the work.
func TestCollectCrash(t *testing.T) {
	for _, tc := range []struct {
		point     string
		committed bool // the first batch is gone after the kill
	}{{"gc:parked", false}, {"gc:committed", true}} {
		t.Run(tc.point, func(t *testing.T) {
			defer func(n int) { collectBatch = n }(collectBatch)
			collectBatch = 50
			dir := t.TempDir()
			s := openT(t, dir, Config{})
			keep, gone := fillSessions(t, s, collectBatch+40)
			s.Close(context.Background())
			wantKilled(t, helper(t, "gc", dir, "FSSTORE_POINT="+tc.point, "FSSTORE_BATCH=50").Run())

			left := sortedIDs(checkConsistent(t, dir))
			for _, id := range keep {
				if _, ok := slices.BinarySearch(left, id); !ok {
					t.Errorf("%s lost by a killed gc", id)
				}
			}
			wantLeft := len(keep) + len(gone)
			if tc.committed {
				wantLeft -= collectBatch
			}
			if len(left) != wantLeft {
				t.Errorf("%d artifacts after the kill, want %d", len(left), wantLeft)
			}
			s = openT(t, dir, Config{})
			if _, err := s.Collect(context.Background(), gcPolicy, store.CollectOptions{}); err != nil {
				t.Fatal(err)
			}
			s.Close(context.Background())
			slices.Sort(keep)
			if got := sortedIDs(checkConsistent(t, dir)); !slices.Equal(got, keep) {
				t.Errorf("after a second gc: %d artifacts, want the %d kept", len(got), len(keep))
			}
			if left := readDirNames(t, filepath.Join(dir, tmpName)); len(left) != 0 {
				t.Errorf("tmp/ holds %v", left)
			}
		})
	}
}

// TestCollectTwoProcesses runs two gc processes on one store at once:
// each artifact is removed once, by one of them, and none that is kept.
func TestCollectTwoProcesses(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Config{})
	defer func(n int) { collectBatch = n }(collectBatch)
	collectBatch = 50
	keep, gone := fillSessions(t, s, 200)
	var outs [2]bytes.Buffer
	var cmds [2]interface{ Wait() error }
	for i := range 2 {
		cmd := helper(t, "gc", dir, "FSSTORE_BATCH=50")
		cmd.Stdout = &outs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
	}
	// This process collects too, through its own handle.
	rep, err := s.Collect(context.Background(), gcPolicy, store.CollectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var removed []string
	for _, r := range rep.Removed {
		removed = append(removed, r.ID)
	}
	for i := range 2 {
		if err := cmds[i].Wait(); err != nil {
			t.Fatalf("gc process %d: %v", i, err)
		}
		removed = append(removed, strings.Fields(outs[i].String())...)
	}
	s.Close(context.Background())
	slices.Sort(removed)
	slices.Sort(gone)
	if !slices.Equal(removed, gone) {
		t.Errorf("the collectors removed %d artifacts together (%d distinct), want each of the %d once", len(removed), len(slices.Compact(slices.Clone(removed))), len(gone))
	}
	slices.Sort(keep)
	if got := sortedIDs(checkConsistent(t, dir)); !slices.Equal(got, keep) {
		t.Errorf("%d artifacts left, want the %d kept", len(got), len(keep))
	}
}

// TestCollectWhileStreaming removes an artifact while a reader streams
// it: the reader still reads every byte exactly.
func TestCollectWhileStreaming(t *testing.T) {
	t.Parallel()
	s := openT(t, t.TempDir(), Config{})
	data := storetest.RandomBytes(7, 8<<20)
	ref := putT(t, s, data, store.PutOptions{})
	ctx := context.Background()
	rc, _, err := s.Get(ctx, ref.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	head := make([]byte, 4096)
	if _, err := io.ReadFull(rc, head); err != nil {
		t.Fatal(err)
	}
	rep, err := s.Collect(ctx, store.Retention{TTL: store.Duration(time.Minute)}, store.CollectOptions{Now: time.Now().Add(time.Hour)})
	if err != nil || rep.Count != 1 {
		t.Fatalf("gc: %+v, %v", rep, err)
	}
	if ok, _ := s.Exists(ctx, ref.ID); ok {
		t.Fatal("the artifact is still stored after gc")
	}
	rest, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	if got := append(head, rest...); !bytes.Equal(got, data) {
		t.Fatalf("the reader got %d bytes, not the artifact's %d", len(got), len(data))
	}
}

// TestReadsUpdateLastAccess: a Get is recorded in memory, written in one
// batch on Close (or by the timer), and seen by another handle.
func TestReadsUpdateLastAccess(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := openT(t, dir, Config{})
	ref := putT(t, s, []byte("read me"), store.PutOptions{})
	other := openT(t, dir, Config{})
	access := func() time.Time {
		_, la, _, err := other.ListAccess(context.Background(), store.Scope{}, "", store.OldestFirst)
		if err != nil || len(la) != 1 {
			t.Fatalf("ListAccess: %v %v", la, err)
		}
		return la[0]
	}
	before := access()
	time.Sleep(5 * time.Millisecond)
	rc, _, err := s.Get(context.Background(), ref.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	rc.Close()
	if got := access(); !got.Equal(before) {
		t.Errorf("last access written at once (%v), want it batched", got)
	}
	s.Close(context.Background())
	if got := access(); !got.After(before) {
		t.Errorf("last access %v after Close, want later than %v", got, before)
	}
}

// fillSessionIndex writes n artifacts (blob files and rows, one transaction) as
// a gateway's sessions would leave them: users of 1000, sessions of 100,
// traces of 10, the older half past a 1 h TTL.
func fillSessionIndex(b *testing.B, s *Store, n int) {
	ctx := context.Background()
	db, err := s.idx.db(ctx)
	if err != nil {
		b.Fatal(err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	for i := range n {
		content := []byte("artifact " + strconv.Itoa(i))
		h := sha256.Sum256(content)
		sum := hex.EncodeToString(h[:])
		os.MkdirAll(filepath.Join(s.dir, blobsName, sum[:2]), 0o700)
		if err := os.WriteFile(filepath.Join(s.dir, blobsName, sum[:2], sum), content, 0o600); err != nil {
			b.Fatal(err)
		}
		ref := store.Ref{ID: "bench_" + sum[:16], SHA256: sum, SizeBytes: int64(len(content)),
			Scope: store.Scope{UserID: "u" + strconv.Itoa(i/1000), SessionID: "s" + strconv.Itoa(i/100),
				TraceID: "t" + strconv.Itoa(i/10)},
			Created: now.Add(time.Duration(i-n/2) * 100 * time.Millisecond * 3600 / time.Duration(n))}
		if i < n/2 {
			ref.Created = now.Add(-2*time.Hour + time.Duration(i)*time.Millisecond)
		}
		if _, err := insertArtifact(ctx, tx, "bench", ref); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkCollect100k collects the default policy over 100,000
// artifacts, half of them expired: time per gc, bytes allocated, and the
// peak Go heap seen while it runs (memory must not follow the store).
func BenchmarkCollect100k(b *testing.B) {
	for _, dry := range []bool{true, false} {
		b.Run(map[bool]string{true: "dry-run", false: "remove"}[dry], func(b *testing.B) {
			b.ReportAllocs()
			var peak atomic.Uint64
			for range b.N {
				b.StopTimer()
				dir := b.TempDir()
				s, err := Open(context.Background(), dir, Config{})
				if err != nil {
					b.Fatal(err)
				}
				fillSessionIndex(b, s, 100000)
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				base := ms.HeapInuse
				stop := make(chan struct{})
				var wg sync.WaitGroup
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						var ms runtime.MemStats
						runtime.ReadMemStats(&ms)
						if ms.HeapInuse > base && ms.HeapInuse-base > peak.Load() {
							peak.Store(ms.HeapInuse - base)
						}
						select {
						case <-stop:
							return
						case <-time.After(5 * time.Millisecond):
						}
					}
				}()
				b.StartTimer()
				rep, err := s.Collect(context.Background(), store.DefaultRetention(), store.CollectOptions{DryRun: dry, Each: func(store.Removal) {}})
				b.StopTimer()
				close(stop)
				wg.Wait()
				if err != nil || rep.Count < 50000 {
					b.Fatalf("gc: %d removed, %v", rep.Count, err)
				}
				b.ReportMetric(float64(rep.Count), "removed")
				s.Close(context.Background())
			}
			b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MB")
		})
	}
}

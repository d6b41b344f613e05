//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package fsstore

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/storetest"
)

func openT(t testing.TB, dir string, cfg Config) *Store {
	t.Helper()
	s, err := Open(context.Background(), dir, cfg)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

func putT(t testing.TB, s store.Store, data []byte, o store.PutOptions) store.Ref {
	t.Helper()
	ref, err := s.Put(context.Background(), bytes.NewReader(data), o)
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	return ref
}

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Store {
		return openT(t, t.TempDir(), Config{PageSize: 7})
	})
}

// splitStore writes through one handle and reads through another handle on
// the same folder, as two processes sharing it would.
type splitStore struct{ w, r *Store }

func (s splitStore) Put(ctx context.Context, r io.Reader, o store.PutOptions) (store.Ref, error) {
	return s.w.Put(ctx, r, o)
}

func (s splitStore) Get(ctx context.Context, id string, rng *store.Range) (io.ReadCloser, store.Ref, error) {
	return s.r.Get(ctx, id, rng)
}
func (s splitStore) Stat(ctx context.Context, id string) (store.Ref, error) { return s.r.Stat(ctx, id) }
func (s splitStore) Exists(ctx context.Context, id string) (bool, error)    { return s.r.Exists(ctx, id) }
func (s splitStore) InScope(ctx context.Context, id string, sc store.Scope) (bool, error) {
	return s.r.InScope(ctx, id, sc)
}
func (s splitStore) Owned(ctx context.Context, id string, o store.Owner) ([]store.Ref, error) {
	return s.r.Owned(ctx, id, o)
}
func (s splitStore) Delete(ctx context.Context, id string) error { return s.w.Delete(ctx, id) }
func (s splitStore) List(ctx context.Context, sc store.Scope, c string) ([]store.Ref, string, error) {
	return s.r.List(ctx, sc, c)
}

func (s splitStore) Close(ctx context.Context) error {
	return errors.Join(s.w.Close(ctx), s.r.Close(ctx))
}

func TestConformanceTwoHandles(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Store {
		dir := t.TempDir()
		return splitStore{w: openT(t, dir, Config{PageSize: 7}), r: openT(t, dir, Config{PageSize: 7})}
	})
}

// TestConformanceReadOnlyReader reads through a handle opened with
// Config.ReadOnly while another handle writes.
func TestConformanceReadOnlyReader(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Store {
		dir := t.TempDir()
		w := openT(t, dir, Config{PageSize: 7})
		return splitStore{w: w, r: openT(t, dir, Config{PageSize: 7, ReadOnly: true})}
	})
}

// checkConsistent opens dir (recovering it) and checks that every listed
// artifact reads back with its size and sha256, that tmp/ is empty and that
// every blob file belongs to a listed artifact. It returns the refs.
func checkConsistent(t *testing.T, dir string) []store.Ref {
	t.Helper()
	waitAlone(t, dir)
	s, err := Open(context.Background(), dir, Config{})
	if err != nil {
		t.Fatalf("reopen %s: %v", dir, err)
	}
	defer s.Close(context.Background())
	refs, _ := storetest.ListAll(t, s, store.Scope{})
	want := map[string]bool{}
	for _, r := range refs {
		got, _ := storetest.ReadAll(t, s, r.ID, nil)
		if int64(len(got)) != r.SizeBytes || storetest.SHA256Hex(got) != r.SHA256 {
			t.Errorf("artifact %s reads back %d bytes with sha256 %s, want %d bytes with %s",
				r.ID, len(got), storetest.SHA256Hex(got), r.SizeBytes, r.SHA256)
		}
		want[r.SHA256] = true
	}
	if left := readDirNames(t, filepath.Join(dir, tmpName)); len(left) != 0 {
		t.Errorf("tmp/ holds %v after reopen, want nothing", left)
	}
	blobs := blobFiles(t, dir)
	for _, b := range blobs {
		if !want[b] {
			t.Errorf("blob %s is held by no artifact", b)
		}
	}
	if len(blobs) != len(want) {
		t.Errorf("%d blob files for %d distinct contents", len(blobs), len(want))
	}
	return refs
}

// waitAlone waits until no one holds dir's open.lock, so that the next
// Open is alone and recovers. A helper process that a parallel test
// starts holds a copy of each of this process's descriptors from its
// fork until its exec, open.lock's among them: a handle closed just
// before then keeps its lock for that moment, and an Open in it finds
// the folder shared and leaves the recovery to a later one.
func waitAlone(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, openLockName))
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		ok, err := tryFlock(f, true)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			return // closing f releases it
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: open.lock still held by another process after 10 s", dir)
		}
	}
}

func readDirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("read %s: %v", dir, err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func blobFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, sh := range readDirNames(t, filepath.Join(dir, blobsName)) {
		out = append(out, readDirNames(t, filepath.Join(dir, blobsName, sh))...)
	}
	slices.Sort(out)
	return out
}

func TestReopen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := openT(t, dir, Config{PageSize: 3})
	clashA, clashB := storetest.ClashPair()
	a := putT(t, s, clashA, store.PutOptions{Namespace: "clash", MIMEType: "text/plain", Filename: "a.txt",
		Source: store.Source{Server: "srv", Tool: "t", Path: "x", Layer: "l"}})
	b := putT(t, s, clashB, store.PutOptions{Namespace: "clash", Scope: store.Scope{SessionID: "s1"}})
	putT(t, s, clashB, store.PutOptions{Namespace: "clash", Scope: store.Scope{SessionID: "s2"}})
	big := storetest.RandomBytes(9, 1<<20)
	c := putT(t, s, big, store.PutOptions{Namespace: "big"})
	gone := putT(t, s, []byte("deleted before reopen"), store.PutOptions{})
	if err := s.Delete(context.Background(), gone.ID); err != nil {
		t.Fatal(err)
	}
	before, _ := storetest.ListAll(t, s, store.Scope{})
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	s2 := openT(t, dir, Config{PageSize: 3})
	after, _ := storetest.ListAll(t, s2, store.Scope{})
	if len(after) != 3 || len(before) != 3 {
		t.Fatalf("listed %d before and %d after reopen, want 3", len(before), len(after))
	}
	for i := range after {
		if after[i].ID != before[i].ID || after[i].SHA256 != before[i].SHA256 || after[i].Source != before[i].Source ||
			after[i].MIMEType != before[i].MIMEType || !after[i].Created.Equal(before[i].Created) {
			t.Errorf("ref %d after reopen %+v, before %+v", i, after[i], before[i])
		}
	}
	if got, _ := storetest.ListAll(t, s2, store.Scope{SessionID: "s2"}); len(got) != 1 || got[0].ID != b.ID {
		t.Errorf("second scope lost on reopen: %+v", got)
	}
	// The clashing content keeps its lengthened id, and is found again.
	if r := putT(t, s2, clashB, store.PutOptions{Namespace: "clash"}); r.ID != b.ID || len(b.ID) != len("clash_")+16 {
		t.Errorf("clashing content after reopen: id %q, first given %q", r.ID, b.ID)
	}
	if r := putT(t, s2, clashA, store.PutOptions{Namespace: "clash"}); r.ID != a.ID {
		t.Errorf("content after reopen: id %q, first given %q", r.ID, a.ID)
	}
	if got, _ := storetest.ReadAll(t, s2, c.ID, &store.Range{Offset: 1000, Length: 5000}); !bytes.Equal(got, big[1000:6000]) {
		t.Errorf("ranged read after reopen differs")
	}
	// New artifacts sort after the old ones.
	d := putT(t, s2, []byte("after reopen"), store.PutOptions{})
	all, _ := storetest.ListAll(t, s2, store.Scope{})
	if len(all) != 4 || all[3].ID != d.ID {
		t.Errorf("List after reopen and put = %v, want %s last", all, d.ID)
	}
}

func TestDeleteSharedBlob(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := openT(t, dir, Config{})
	data := []byte("one blob for two namespaces")
	a := putT(t, s, data, store.PutOptions{Namespace: "a"})
	b := putT(t, s, data, store.PutOptions{Namespace: "b"})
	sum := storetest.SHA256Hex(data)
	if got := blobFiles(t, dir); !slices.Equal(got, []string{sum}) {
		t.Fatalf("blobs = %v, want one", got)
	}
	if err := s.Delete(context.Background(), a.ID); err != nil {
		t.Fatal(err)
	}
	if got := blobFiles(t, dir); !slices.Equal(got, []string{sum}) {
		t.Errorf("blobs after deleting one of two ids = %v, want the shared blob kept", got)
	}
	if err := s.Delete(context.Background(), b.ID); err != nil {
		t.Fatal(err)
	}
	if got := blobFiles(t, dir); len(got) != 0 {
		t.Errorf("blobs after deleting both ids = %v, want none", got)
	}
}

func TestGetAfterDeleteKeepsOpenReader(t *testing.T) {
	t.Parallel()
	s := openT(t, t.TempDir(), Config{})
	data := storetest.RandomBytes(10, 100000)
	ref := putT(t, s, data, store.PutOptions{})
	rc, _, err := s.Get(context.Background(), ref.ID, &store.Range{Offset: 10, Length: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if _, ok := rc.(*blobReader); !ok {
		t.Errorf("Get returned %T, want a section reader over the blob file", rc)
	}
	if err := s.Delete(context.Background(), ref.ID); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	if err != nil || !bytes.Equal(got, data[10:]) {
		t.Errorf("reader opened before Delete read %d bytes (err %v), want %d", len(got), err, len(data)-10)
	}
}

func TestSecondHandle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	a := openT(t, dir, Config{})
	b := openT(t, dir, Config{})
	clashA, clashB := storetest.ClashPair()
	ra := putT(t, a, clashA, store.PutOptions{Namespace: "x"})
	rb := putT(t, b, clashB, store.PutOptions{Namespace: "x"})
	if len(rb.ID) != len(ra.ID)+store.IDPrefixStep {
		t.Errorf("second handle gave the clashing content id %q next to %q: it did not see the first", rb.ID, ra.ID)
	}
	if ref, err := a.Stat(ctx, rb.ID); err != nil || ref.SHA256 != rb.SHA256 {
		t.Errorf("first handle Stat(%s) = %+v, %v", rb.ID, ref, err)
	}
	// The same new content from both handles gets one id and one line each
	// scope.
	var wg sync.WaitGroup
	ids := make([]string, 8)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := a
			if i%2 == 1 {
				h = b
			}
			r, err := h.Put(ctx, strings.NewReader("from both handles"), store.PutOptions{Scope: store.Scope{SessionID: fmt.Sprint(i)}})
			if err != nil {
				t.Errorf("Put: %v", err)
			}
			ids[i] = r.ID
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Errorf("ids %v, want one", ids)
			break
		}
	}
	if err := b.Delete(ctx, ra.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Get(ctx, ra.ID, nil); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get through the other handle after Delete: %v, want ErrNotFound", err)
	}
	for _, h := range []*Store{a, b} {
		refs, _ := storetest.ListAll(t, h, store.Scope{})
		if len(refs) != 2 {
			t.Errorf("handle lists %d artifacts, want 2", len(refs))
		}
		for i := range ids {
			if got, _ := storetest.ListAll(t, h, store.Scope{SessionID: fmt.Sprint(i)}); len(got) != 1 {
				t.Errorf("scope %d: %d artifacts, want 1", i, len(got))
			}
		}
	}
	a.Close(ctx)
	b.Close(ctx)
	checkConsistent(t, dir)
}

// TestLeftovers: an Open alone settles tmp/ (a put killed while
// streaming, one killed after its link, a version 1 compaction temp);
// what only a full scan finds (a blob no row holds, a row whose blob is
// gone) is reported by Check and mended by Repair, never by deleting a blob.
func TestLeftovers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	s := openT(t, dir, Config{})
	keep := putT(t, s, []byte("keep"), store.PutOptions{})
	lost := putT(t, s, storetest.RandomBytes(11, 5000), store.PutOptions{})
	s.Close(ctx)

	mustWrite(t, filepath.Join(dir, tmpName, "put-123456"), []byte("half of something"))
	mustWrite(t, filepath.Join(dir, tmpName, "index-99.jsonl"), []byte("00000000 {"))
	linked := storetest.RandomBytes(13, 4000)
	lsum := storetest.SHA256Hex(linked)
	mustWrite(t, filepath.Join(dir, tmpName, "put-777"), linked)
	mustWrite(t, filepath.Join(dir, blobsName, lsum[:2], "x"), nil)
	if err := os.Link(filepath.Join(dir, tmpName, "put-777"), filepath.Join(dir, blobsName, lsum[:2], lsum)); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, blobsName, lsum[:2], "x"))
	orphan := storetest.RandomBytes(12, 3000)
	sum := storetest.SHA256Hex(orphan)
	mustWrite(t, filepath.Join(dir, blobsName, sum[:2], sum), orphan)
	if err := os.Remove(filepath.Join(dir, blobsName, lost.SHA256[:2], lost.SHA256)); err != nil {
		t.Fatal(err)
	}

	var logs bytes.Buffer
	s2, err := Open(ctx, dir, Config{Logger: hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info})})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s2.Get(ctx, lost.ID, nil); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get of an artifact whose blob is gone: %v, want ErrNotFound", err)
	}
	s2.Close(ctx)
	for _, want := range []string{"unfinished_puts_removed=2", "re-indexed the blob of a put a kill interrupted", "blobs_reindexed=1"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("recovery log lacks %q:\n%s", want, logs.String())
		}
	}
	if left := readDirNames(t, filepath.Join(dir, tmpName)); len(left) != 0 {
		t.Errorf("tmp/ holds %v after recovery", left)
	}
	rep, err := Check(ctx, dir, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Missing, []string{lost.ID}) || !slices.Equal(rep.Unindexed, []string{sum}) || rep.Artifacts != 3 {
		t.Errorf("Check = %+v, want %s missing and %s unindexed", rep, lost.ID, sum)
	}
	if _, err := Repair(ctx, dir, Config{}); err != nil {
		t.Fatal(err)
	}
	refs := checkConsistent(t, dir)
	want := []string{keep.ID, store.NewID(recoveredNamespace, lsum, store.DefaultIDPrefixLen), store.NewID(recoveredNamespace, sum, store.DefaultIDPrefixLen)}
	if got := ids(refs); !slices.Equal(got, want) {
		t.Errorf("after repair lists %v, want %v", got, want)
	}
}

func ids(refs []store.Ref) []string {
	var out []string
	for _, r := range refs {
		out = append(out, r.ID)
	}
	return out
}
func mustWrite(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestOpenErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	parent := filepath.Join(t.TempDir(), "a-file")
	mustWrite(t, parent, []byte("not a folder"))
	dir := filepath.Join(parent, "artifacts")
	_, err := Open(ctx, dir, Config{})
	t.Logf("under a regular file: %v", err)
	if err == nil || !errors.Is(err, syscall.ENOTDIR) || !strings.Contains(err.Error(), "fsstore: dir["+dir+"]") {
		t.Errorf("Open under a regular file: error %v, want one naming %s and wrapping ENOTDIR", err, dir)
	}

	ro := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(ro, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(ro, 0o700) })
	_, err = Open(ctx, ro, Config{})
	t.Logf("on a 0500 folder: %v", err)
	if os.Geteuid() == 0 {
		// Permission bits do not stop root; the case above covers the
		// error path.
		if err != nil {
			t.Errorf("Open as root on a 0500 folder: %v", err)
		}
		return
	}
	if !errors.Is(err, fs.ErrPermission) || !strings.Contains(err.Error(), ro) {
		t.Errorf("Open on a read-only folder: error %v, want a permission error naming %s", err, ro)
	}
}

// TestDefaultDirRelativeHome: a relative MCPX_HOME is an error, not taken
// silently relative to the working folder.
func TestDefaultDirRelativeHome(t *testing.T) {
	for _, h := range []string{"relative/home", ".", "../x"} {
		t.Setenv("MCPX_HOME", h)
		dir, _, err := DefaultDir()
		if !errors.Is(err, ErrRelativePath) || !strings.Contains(err.Error(), "MCPX_HOME") || !strings.Contains(err.Error(), h) {
			t.Errorf("DefaultDir with MCPX_HOME=%q: %q, %v; want ErrRelativePath naming it", h, dir, err)
		}
	}
}

func TestDefaultDir(t *testing.T) {
	uid := os.Getuid()
	cases := []struct {
		name    string
		env     map[string]string // "" unsets
		want    func(tmp string) string
		wantWhy string
	}{
		{"MCPX_HOME", map[string]string{"MCPX_HOME": "/srv/mcpx", "XDG_DATA_HOME": "/x", "HOME": "/home/u"},
			func(string) string { return "/srv/mcpx/artifacts" }, ""},
		{"XDG_DATA_HOME", map[string]string{"MCPX_HOME": "", "XDG_DATA_HOME": "/x/data", "HOME": "/home/u"},
			func(string) string { return "/x/data/mcpx/artifacts" }, ""},
		{"HOME", map[string]string{"MCPX_HOME": "", "XDG_DATA_HOME": "", "HOME": "/home/u"},
			func(string) string { return "/home/u/.local/share/mcpx/artifacts" }, ""},
		{"relative XDG_DATA_HOME", map[string]string{"MCPX_HOME": "", "XDG_DATA_HOME": "rel", "HOME": "/home/u"},
			func(string) string { return "/home/u/.local/share/mcpx/artifacts" }, "XDG_DATA_HOME"},
		{"no HOME", map[string]string{"MCPX_HOME": "", "XDG_DATA_HOME": "", "HOME": ""},
			func(tmp string) string { return filepath.Join(tmp, fmt.Sprintf("mcpx-%d", uid), "artifacts") }, "HOME is not set"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			for k, v := range tc.env {
				t.Setenv(k, v)
				if v == "" {
					os.Unsetenv(k)
				}
			}
			dir, why, err := DefaultDir()
			if err != nil {
				t.Fatalf("DefaultDir: %v", err)
			}
			if want := tc.want(tmp); dir != want {
				t.Errorf("dir = %q, want %q", dir, want)
			}
			if (tc.wantWhy == "") != (why == "") || !strings.Contains(why, tc.wantWhy) {
				t.Errorf("why = %q, want it to mention %q", why, tc.wantWhy)
			}
			if tc.name == "no HOME" {
				fi, err := os.Stat(filepath.Dir(dir))
				if err != nil || fi.Mode().Perm() != 0o700 {
					t.Errorf("fallback parent: %v, %v; want a 0700 folder", fi, err)
				}
				s := openT(t, dir, Config{})
				if s.Dir() != dir {
					t.Errorf("store dir %q, want %q", s.Dir(), dir)
				}
			}
		})
	}

	t.Run("unsafe fallback", func(t *testing.T) {
		for _, setup := range []struct {
			name string
			make func(t *testing.T, base string)
		}{
			{"open to others", func(t *testing.T, base string) {
				if err := os.Mkdir(base, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(base, 0o777); err != nil {
					t.Fatal(err)
				}
			}},
			{"symlink", func(t *testing.T, base string) {
				target := t.TempDir()
				if err := os.Symlink(target, base); err != nil {
					t.Fatal(err)
				}
			}},
		} {
			t.Run(setup.name, func(t *testing.T) {
				tmp := t.TempDir()
				t.Setenv("TMPDIR", tmp)
				for _, k := range []string{"MCPX_HOME", "XDG_DATA_HOME", "HOME"} {
					t.Setenv(k, "")
					os.Unsetenv(k)
				}
				base := filepath.Join(tmp, fmt.Sprintf("mcpx-%d", uid))
				setup.make(t, base)
				if dir, _, err := DefaultDir(); err == nil || !strings.Contains(err.Error(), base) {
					t.Errorf("DefaultDir with an unsafe %s = %q, %v; want an error naming it", base, dir, err)
				}
			})
		}
	})
}

func BenchmarkPut(b *testing.B) {
	ctx := context.Background()
	s := openT(b, b.TempDir(), Config{})
	data := storetest.RandomBytes(13, 10<<20)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
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

// BenchmarkFloorWriteFsync is the floor under BenchmarkPut: write 10 MiB to
// a new file in the same kind of folder, fsync, close.
func BenchmarkFloorWriteFsync(b *testing.B) {
	dir := b.TempDir()
	data := storetest.RandomBytes(13, 10<<20)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		f, err := os.CreateTemp(dir, "floor-*")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.Write(data); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		os.Remove(f.Name())
		b.StartTimer()
	}
}

func BenchmarkGetRange(b *testing.B) {
	ctx := context.Background()
	s := openT(b, b.TempDir(), Config{})
	ref := putT(b, s, storetest.RandomBytes(14, 10<<20), store.PutOptions{})
	buf := make([]byte, 64<<10)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		rc, _, err := s.Get(ctx, ref.ID, &store.Range{Offset: 5 << 20, Length: int64(len(buf))})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(rc, buf); err != nil {
			b.Fatal(err)
		}
		rc.Close()
	}
}

func TestShortPrefixesAcrossReopen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := openT(t, dir, Config{IDPrefixLen: 1})
	ids := map[string]string{}
	for i := range 40 {
		data := fmt.Sprint("content ", i)
		ref := putT(t, s, []byte(data), store.PutOptions{Namespace: "n"})
		if _, dup := ids[ref.ID]; dup {
			t.Fatalf("id %s given twice", ref.ID)
		}
		ids[ref.ID] = data
	}
	s.Close(context.Background())
	s2 := openT(t, dir, Config{IDPrefixLen: 1})
	for id, data := range ids {
		if got, _ := storetest.ReadAll(t, s2, id, nil); string(got) != data {
			t.Errorf("Get(%s) = %q, want %q", id, got, data)
		}
		if r := putT(t, s2, []byte(data), store.PutOptions{Namespace: "n"}); r.ID != id {
			t.Errorf("re-put after reopen: id %s, want %s", r.ID, id)
		}
	}
}

func TestFailedPutsLeaveNoFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	s := openT(t, dir, Config{})
	data := storetest.RandomBytes(30, 1<<20)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	failures := []struct {
		name string
		put  func() error
	}{
		{"too large", func() error {
			_, err := s.Put(ctx, bytes.NewReader(data), store.PutOptions{MaxBytes: 1000})
			return err
		}},
		{"reader fails", func() error {
			_, err := s.Put(ctx, io.MultiReader(bytes.NewReader(data), iotestErrReader{}), store.PutOptions{})
			return err
		}},
		{"cancelled", func() error {
			_, err := s.Put(cancelled, bytes.NewReader(data), store.PutOptions{})
			return err
		}},
	}
	for _, f := range failures {
		if err := f.put(); err == nil {
			t.Errorf("%s: Put succeeded", f.name)
		}
		if left := readDirNames(t, filepath.Join(dir, tmpName)); len(left) != 0 {
			t.Errorf("%s: tmp/ holds %v", f.name, left)
		}
		if left := blobFiles(t, dir); len(left) != 0 {
			t.Errorf("%s: blobs/ holds %v", f.name, left)
		}
	}
}

type iotestErrReader struct{}

func (iotestErrReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }

// patternReader yields n bytes without holding them.
type patternReader struct{ n int64 }

func (p *patternReader) Read(b []byte) (int, error) {
	if p.n == 0 {
		return 0, io.EOF
	}
	k := int(min(int64(len(b)), p.n))
	for i := range b[:k] {
		b[i] = byte(p.n - int64(i))
	}
	p.n -= int64(k)
	return k, nil
}

func TestPutStreams(t *testing.T) {
	s := openT(t, t.TempDir(), Config{})
	const size = 64 << 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ref, err := s.Put(context.Background(), &patternReader{n: size}, store.PutOptions{})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if ref.SizeBytes != size {
		t.Errorf("size %d, want %d", ref.SizeBytes, size)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
		t.Errorf("a %d MiB put allocated %d KiB: it does not stream", size>>20, alloc>>10)
	}
	// A ranged read of the middle allocates no more than its buffers.
	runtime.ReadMemStats(&before)
	rc, _, err := s.Get(context.Background(), ref.ID, &store.Range{Offset: size / 2, Length: 1000})
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, rc)
	rc.Close()
	runtime.ReadMemStats(&after)
	if err != nil || n != 1000 {
		t.Errorf("ranged read = %d, %v", n, err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
		t.Errorf("a 1000 byte ranged read allocated %d KiB", alloc>>10)
	}
}

// BenchmarkAccessCheck compares the session check the gateway and the
// web handler make per read: InScope against paging List until the id
// shows up (what they did before InScope), for the last of 5000 artifacts
// in one session.
func BenchmarkAccessCheck(b *testing.B) {
	ctx := context.Background()
	s := openT(b, b.TempDir(), Config{})
	scope := store.Scope{SessionID: "s"}
	var last store.Ref
	for i := range 5000 {
		last = putT(b, s, []byte(fmt.Sprint("artifact ", i)), store.PutOptions{Scope: scope})
	}
	b.Run("InScope", func(b *testing.B) {
		for b.Loop() {
			if in, err := s.InScope(ctx, last.ID, scope); !in || err != nil {
				b.Fatal(in, err)
			}
		}
	})
	b.Run("ListPaging", func(b *testing.B) {
		for b.Loop() {
			found := false
			for cursor := ""; !found; {
				refs, next, err := s.List(ctx, scope, cursor)
				if err != nil {
					b.Fatal(err)
				}
				found = slices.ContainsFunc(refs, func(r store.Ref) bool { return r.ID == last.ID })
				if next == "" {
					break
				}
				cursor = next
			}
			if !found {
				b.Fatal("not found")
			}
		}
	})
}

// execIndex runs one statement on dir's index, as a person with the
// sqlite3 shell would.
func execIndex(t testing.TB, dir, query string, args ...any) {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(dir, indexName))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

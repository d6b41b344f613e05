//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package fsstore

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/storetest"
)

// TestFTS5Compiled: the driver has FTS5, which artifact search
// (search.go) queries.
func TestFTS5Compiled(t *testing.T) {
	t.Parallel()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "fts.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE VIRTUAL TABLE docs USING fts5(body)`); err != nil {
		t.Fatalf("fts5: %v", err)
	}
	if _, err := db.Exec(`INSERT INTO docs (body) VALUES ('quarterly revenue report'), ('cat pictures')`); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM docs WHERE docs MATCH 'revenue'`).Scan(&n); err != nil || n != 1 {
		t.Errorf("MATCH = %d, %v; want 1", n, err)
	}
}

// TestBlobsSwappedForLink: blobs/ (or tmp/) replaced by a link to another
// folder while the store is open is not followed: puts and gets go on in
// the folders opened at Open, and nothing is written behind the link.
func TestBlobsSwappedForLink(t *testing.T) {
	t.Parallel()
	for _, name := range []string{blobsName, tmpName} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			s := openT(t, dir, Config{})
			before := putT(t, s, []byte("put before the swap"), store.PutOptions{})
			user := t.TempDir()
			if err := os.Rename(filepath.Join(dir, name), filepath.Join(dir, name+".real")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(user, filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
			after := putT(t, s, []byte("put after the swap"), store.PutOptions{})
			for _, r := range []store.Ref{before, after} {
				if got, _ := storetest.ReadAll(t, s, r.ID, nil); int64(len(got)) != r.SizeBytes {
					t.Errorf("Get(%s) read %d bytes", r.ID, len(got))
				}
			}
			if err := s.Delete(ctx, before.ID); err != nil {
				t.Fatal(err)
			}
			if names := readDirNames(t, user); len(names) != 0 {
				t.Errorf("the store wrote %v behind the link", names)
			}
			real := filepath.Join(dir, name+".real")
			if name == blobsName {
				if _, err := os.Stat(filepath.Join(real, after.SHA256[:2], after.SHA256)); err != nil {
					t.Errorf("blob not in the folder opened at Open: %v", err)
				}
			}
		})
	}
}

// TestSameBytesNewName: the same bytes put again under another file name
// and source keep their id; the ref and the index take the latest name.
func TestSameBytesNewName(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	s := openT(t, dir, Config{})
	data := []byte("one report, two names")
	a := putT(t, s, data, store.PutOptions{Namespace: "n", Filename: "draft.pdf", MIMEType: "application/pdf", Source: store.Source{Tool: "a"}})
	b := putT(t, s, data, store.PutOptions{Namespace: "n", Filename: "final.pdf", Source: store.Source{Tool: "b"}})
	if b.ID != a.ID || b.Filename != "final.pdf" || b.Source.Tool != "b" || b.MIMEType != "application/pdf" || !b.Created.Equal(a.Created) {
		t.Errorf("second put = %+v, want id %s named final.pdf from b with the first MIME type and time", b, a.ID)
	}
	c := putT(t, s, data, store.PutOptions{Namespace: "n"})
	if c.Filename != "final.pdf" {
		t.Errorf("a put without a name = %+v, want the latest name kept", c)
	}
	s.Close(ctx)
	s2 := openT(t, dir, Config{})
	if r, err := s2.Stat(ctx, a.ID); err != nil || r.Filename != "final.pdf" || r.Source.Tool != "b" {
		t.Errorf("Stat after reopen = %+v, %v; want the latest name", r, err)
	}
}

// TestListNewestFirst pages newest first, filtered, and refuses the other
// order's cursor.
func TestListNewestFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openT(t, t.TempDir(), Config{PageSize: 3})
	var all, even []string
	for i := range 10 {
		sc := store.Scope{SessionID: "odd"}
		if i%2 == 0 {
			sc.SessionID = "even"
		}
		r := putT(t, s, storetest.RandomBytes(uint64(i), 10), store.PutOptions{Scope: sc})
		all = append([]string{r.ID}, all...)
		if i%2 == 0 {
			even = append([]string{r.ID}, even...)
		}
	}
	list := func(sc store.Scope) []string {
		var got []string
		for c := ""; ; {
			page, next, err := s.ListOrder(ctx, sc, c, store.NewestFirst)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, ids(page)...)
			if next == "" {
				return got
			}
			c = next
		}
	}
	if got := list(store.Scope{}); !equal(got, all) {
		t.Errorf("newest first = %v, want %v", got, all)
	}
	if got := list(store.Scope{SessionID: "even"}); !equal(got, even) {
		t.Errorf("newest first, even = %v, want %v", got, even)
	}
	_, next, _ := s.List(ctx, store.Scope{}, "")
	if _, _, err := s.ListOrder(ctx, store.Scope{}, next, store.NewestFirst); err == nil {
		t.Errorf("an oldest-first cursor was accepted newest first")
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestIndexHeaderSettles: an index shorter than its header says is
// damaged, unless its WAL holds frames and it grows to that size while
// checkIndexHeader waits (another process's checkpoint writes the header
// before the pages that grow the file); without a WAL it is damaged at
// once.
func TestIndexHeaderSettles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := t.TempDir()
	s, err := Open(ctx, src, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, strings.NewReader("some bytes"), store.PutOptions{Namespace: "ns"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	whole, err := os.ReadFile(filepath.Join(src, indexName))
	if err != nil {
		t.Fatal(err)
	}
	short := whole[:len(whole)/2]
	check := func(t *testing.T, withWAL bool, grow bool) error {
		t.Helper()
		path := filepath.Join(t.TempDir(), indexName)
		if err := os.WriteFile(path, short, 0o600); err != nil {
			t.Fatal(err)
		}
		if withWAL {
			if err := os.WriteFile(path+"-wal", []byte("frames"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		done := make(chan struct{})
		if grow {
			go func() {
				defer close(done)
				time.Sleep(50 * time.Millisecond)
				w, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
				if err == nil {
					w.Write(whole[len(short):])
					w.Close()
				}
			}()
		} else {
			close(done)
		}
		ok, err := checkIndexHeader(f)
		<-done
		if !ok {
			t.Errorf("a SQLite file reads as missing")
		}
		return err
	}
	if err := check(t, true, true); err != nil {
		t.Errorf("a checkpoint that grows the file: %v", err)
	}
	for _, withWAL := range []bool{true, false} {
		if err := check(t, withWAL, false); !errors.Is(err, errIndexDamaged) {
			t.Errorf("a file that stays short (WAL %v): %v, want errIndexDamaged", withWAL, err)
		}
	}
}

// TestWholeIndexNotSetAside: an index seen shorter than its header (as
// during another process's checkpoint) is looked at again once the store
// is alone, and kept when it is whole: its artifacts keep their ids. A
// repair's set-aside still moves it.
func TestWholeIndexNotSetAside(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, dir, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	ref, err := s.Put(ctx, strings.NewReader("some bytes"), store.PutOptions{Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	seen := fmt.Errorf("%w: 55296 bytes, %w (27 pages of 4096)", errIndexDamaged, errIndexShort)
	if err := s.idx.setAside(ctx, seen); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, lostFoundName)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a whole index was set aside: %v", err)
	}
	if _, err := s.Stat(ctx, ref.ID); err != nil {
		t.Errorf("%s after the look: %v", ref.ID, err)
	}
	if err := s.idx.setAside(ctx, errIndexDamaged); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, indexName)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a repair's set-aside left the index: %v", err)
	}
}

// TestInterruptedCheckpoint: a kill in the middle of a checkpoint leaves
// index.db shorter than its header says (SQLite copies page 1, with the
// grown page count, before the pages that grow the file) beside a WAL
// that still holds every page. SQLite reads that database whole, so the
// store opens it with every id, read-write and read-only, and sets
// nothing aside. A short file whose WAL lacks pages is still damaged.
func TestInterruptedCheckpoint(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := t.TempDir()
	s, err := Open(ctx, src, Config{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 300 {
		ref, err := s.Put(ctx, strings.NewReader(fmt.Sprintf("blob %d", i)), store.PutOptions{Namespace: "ns", Filename: fmt.Sprintf("file-%d.bin", i)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ref.ID)
	}
	// What a SIGKILL leaves: the WAL as the last commit left it. Nothing
	// writes now (binary puts queue no text, and no commit has reached
	// the autocheckpoint), so the copies agree.
	index, err := os.ReadFile(filepath.Join(src, indexName))
	if err != nil {
		t.Fatal(err)
	}
	wal, err := os.ReadFile(filepath.Join(src, indexName+"-wal"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	page1 := lastWALFrame(t, wal, 1)
	killed := func(t *testing.T, wal []byte) string {
		dir := t.TempDir()
		if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
		os.Remove(filepath.Join(dir, indexName+"-shm"))
		os.Remove(filepath.Join(dir, openLockName))
		// The checkpoint the kill interrupted had copied page 1 only.
		db := append([]byte(nil), index...)
		if len(db) < len(page1) {
			db = make([]byte, len(page1))
		}
		copy(db, page1)
		if err := os.WriteFile(filepath.Join(dir, indexName), db, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, indexName+"-wal"), wal, 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(filepath.Join(dir, indexName))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, short, _ := readIndexHeader(f); !short {
			t.Fatalf("the index file is not shorter than its header (%d bytes, WAL %d bytes): the test made no interrupted checkpoint", len(db), len(wal))
		}
		return dir
	}
	for _, ro := range []bool{true, false} {
		t.Run(fmt.Sprintf("read-only=%v", ro), func(t *testing.T) {
			dir := killed(t, wal)
			s, err := Open(ctx, dir, Config{ReadOnly: ro})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close(ctx)
			for i, id := range ids {
				ref, err := s.Stat(ctx, id)
				if err != nil {
					t.Fatalf("%s after the interrupted checkpoint: %v", id, err)
				}
				if want := fmt.Sprintf("file-%d.bin", i); ref.Filename != want {
					t.Fatalf("%s is named %q, want %q", id, ref.Filename, want)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, lostFoundName)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the index was set aside: %v", err)
			}
		})
	}
	t.Run("opened at once", func(t *testing.T) {
		// Several opens race over the same killed store, readers beside
		// writers: one finishes the checkpoint while others check it.
		dir := killed(t, wal)
		var wg sync.WaitGroup
		errs := make(chan error, 6)
		for i := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s, err := Open(ctx, dir, Config{ReadOnly: i%2 == 0})
				if err != nil {
					errs <- err
					return
				}
				defer s.Close(ctx)
				for _, id := range ids {
					if _, err := s.Stat(ctx, id); err != nil {
						errs <- fmt.Errorf("open %d: %w", i, err)
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if _, err := os.Stat(filepath.Join(dir, lostFoundName)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the index was set aside: %v", err)
		}
	})
	t.Run("WAL without the pages", func(t *testing.T) {
		// The WAL's first frames only: the pages the file lacks are not
		// in it, and the store sets the index aside.
		dir := killed(t, wal[:walHeaderSize+2*(walFrameHeaderSize+len(page1))])
		s, err := Open(ctx, dir, Config{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close(ctx)
		if _, err := s.Stat(ctx, ids[0]); err == nil {
			t.Fatalf("%s read from an index that lacks pages", ids[0])
		}
		if _, err := os.Stat(filepath.Join(dir, lostFoundName)); err != nil {
			t.Errorf("the damaged index was not set aside: %v", err)
		}
	})
}

// walFrameHeaderSize is the size of the header before each page in a WAL.
const walFrameHeaderSize = 24

// lastWALFrame returns the page of page's last frame in wal, among the
// frames of the WAL's current salt (a frame left from before the WAL
// restarted has another).
func lastWALFrame(t *testing.T, wal []byte, page uint32) []byte {
	t.Helper()
	if len(wal) < walHeaderSize {
		t.Fatalf("WAL of %d bytes", len(wal))
	}
	size := int(binary.BigEndian.Uint32(wal[8:12]))
	salt := wal[16:24]
	var last []byte
	for off := walHeaderSize; off+walFrameHeaderSize+size <= len(wal); off += walFrameHeaderSize + size {
		h := wal[off : off+walFrameHeaderSize]
		if !bytes.Equal(h[8:16], salt) {
			break
		}
		if binary.BigEndian.Uint32(h[0:4]) == page {
			last = wal[off+walFrameHeaderSize : off+walFrameHeaderSize+size]
		}
	}
	if last == nil {
		t.Fatalf("no frame of page %d in the WAL", page)
	}
	return last
}

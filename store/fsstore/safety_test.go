//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package fsstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/storetest"
)

// The tests in this file hold the store to losing no data: opening a
// store must never destroy what the store did not make, and a damaged
// journal must lose no blob.

type keptFile struct{ name, text string }

// lostFound returns the files in dir's lost+found folder.
func lostFound(t *testing.T, dir string) []keptFile {
	t.Helper()
	es, err := os.ReadDir(filepath.Join(dir, lostFoundName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []keptFile
	for _, e := range es {
		b, err := os.ReadFile(filepath.Join(dir, lostFoundName, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, keptFile{e.Name(), string(b)})
	}
	return out
}

// TestOpenRefusesForeignFolder: {"store":{"dir":"."}} in a project folder,
// or --store ~, must fail before touching anything, tmp/ included.
func TestOpenRefusesForeignFolder(t *testing.T) {
	t.Parallel()
	layouts := map[string]map[string]string{
		"project folder": {
			"go.mod":          "module example.com/p\n",
			"main.go":         "package main\n",
			"tmp/scratch.txt": "the user's own notes",
			"tmp/put-1234":    "a user file that happens to look like a temp name",
		},
		"home folder": {
			".bashrc":          "export PATH=$PATH:~/bin\n",
			"tmp/download.iso": "big",
			"blobs/ab/readme":  "not ours",
		},
		// Only the store's names, but a journal that is not one.
		"lookalike": {
			"index.jsonl":  "this is a plain text file\n",
			"tmp/keep.txt": "keep",
		},
	}
	for name, files := range layouts {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			for p, text := range files {
				mustWrite(t, filepath.Join(dir, p), []byte(text))
			}
			before := storetest.Tree(t, dir)
			for _, cfg := range []Config{Config{}, Config{ReadOnly: true}} {
				s, err := Open(context.Background(), dir, cfg)
				if err == nil {
					s.Close(context.Background())
				}
				if !errors.Is(err, ErrNotAStore) || !strings.Contains(err.Error(), dir) {
					t.Errorf("Open(read-only %v): %v, want ErrNotAStore naming %s", cfg.ReadOnly, err, dir)
				}
				if _, err := Check(context.Background(), dir, cfg); !errors.Is(err, ErrNotAStore) {
					t.Errorf("Check: %v, want ErrNotAStore", err)
				}
				storetest.WantSameTree(t, "a refused Open", before, storetest.Tree(t, dir))
			}
		})
	}
}

// TestOpenMarksNewStore: an empty or missing folder becomes a store and
// gets the marker; a marker of a newer version is refused.
func TestOpenMarksNewStore(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{t.TempDir(), filepath.Join(t.TempDir(), "new", "artifacts")} {
		s := openT(t, dir, Config{})
		s.Close(context.Background())
		b, err := os.ReadFile(filepath.Join(dir, markerName))
		if err != nil || string(b) != `{"format":"mcpx-fsstore","version":2}`+"\n" {
			t.Errorf("marker %q, %v", b, err)
		}
	}
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, markerName), []byte(`{"format":"mcpx-fsstore","version":3}`))
	if _, err := Open(context.Background(), dir, Config{}); !errors.Is(err, ErrNotAStore) || !strings.Contains(err.Error(), "version 3") {
		t.Errorf("Open on a version 3 store: %v, want ErrNotAStore naming the version", err)
	}
}

// TestOpenAdoptsUnmarkedStore: a store made before markers existed opens
// with its artifacts and is marked.
func TestOpenAdoptsUnmarkedStore(t *testing.T) {
	t.Parallel()
	dir := copyJournalStore(t)
	if err := os.Remove(filepath.Join(dir, markerName)); err != nil {
		t.Fatal(err)
	}
	const id = "github_c88478fc0cd0"
	ro := openT(t, dir, Config{ReadOnly: true})
	if ok, err := ro.Exists(context.Background(), id); !ok || err != nil {
		t.Errorf("read-only Exists(%s) = %v, %v", id, ok, err)
	}
	ro.Close(context.Background())
	if _, err := os.Stat(filepath.Join(dir, markerName)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a read-only open wrote the marker (%v)", err)
	}
	refs := checkConsistent(t, dir)
	if len(refs) != 4 || refs[0].ID != id {
		t.Errorf("adopted store lists %v, want 4 starting with %s", refs, id)
	}
	if ok, err := checkMarker(dir); !ok || err != nil {
		t.Errorf("adopted store not marked: %v, %v", ok, err)
	}
}

// TestSymlinkedTmpNotFollowed: a tmp/ (or blobs/) that is a link to the
// user's folder is refused; nothing behind it is removed.
func TestSymlinkedTmpNotFollowed(t *testing.T) {
	t.Parallel()
	for _, name := range []string{tmpName, blobsName, lostFoundName} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			s := openT(t, dir, Config{})
			putT(t, s, []byte("x"), store.PutOptions{})
			s.Close(context.Background())
			user := t.TempDir()
			mustWrite(t, filepath.Join(user, "put-123"), []byte("the user's file, named like a temp file"))
			mustWrite(t, filepath.Join(user, "notes.txt"), []byte("notes"))
			if err := os.RemoveAll(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				t.Fatal(err)
			}
			if err := os.Symlink(user, filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
			before := storetest.Tree(t, user)
			_, err := Open(context.Background(), dir, Config{})
			if !errors.Is(err, ErrNotAStore) || !strings.Contains(err.Error(), "symbolic link") {
				t.Errorf("Open with %s/ a link: %v, want ErrNotAStore saying so", name, err)
			}
			storetest.WantSameTree(t, "Open", before, storetest.Tree(t, user))
		})
	}
}

// TestTmpKeepsForeignFiles: recovery removes only the temp files whose
// names the store minted.
func TestTmpKeepsForeignFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := openT(t, dir, Config{})
	s.Close(context.Background())
	for _, p := range []string{"put-123456", "index-77.jsonl"} {
		mustWrite(t, filepath.Join(dir, tmpName, p), []byte("unfinished"))
	}
	kept := []string{"notes.txt", "put-abc", "index-1.json", "sub/put-1"}
	for _, p := range kept {
		mustWrite(t, filepath.Join(dir, tmpName, p), []byte("not the store's"))
	}
	var logs bytes.Buffer
	s2, err := Open(context.Background(), dir, Config{Logger: hclog.New(&hclog.LoggerOptions{Output: &logs})})
	if err != nil {
		t.Fatal(err)
	}
	s2.Close(context.Background())
	left := readDirNames(t, filepath.Join(dir, tmpName))
	if want := []string{"index-1.json", "notes.txt", "put-abc", "sub"}; !slices.Equal(left, want) {
		t.Errorf("tmp/ holds %v after recovery, want %v", left, want)
	}
	if !strings.Contains(logs.String(), "left a file the store did not make") {
		t.Errorf("foreign files not logged:\n%s", logs.String())
	}
}

// putMany fills a store with n artifacts in two namespaces and returns them.
func putMany(t *testing.T, dir string, n int) []store.Ref {
	t.Helper()
	s := openT(t, dir, Config{})
	defer s.Close(context.Background())
	var refs []store.Ref
	for i := range n {
		refs = append(refs, putT(t, s, storetest.RandomBytes(uint64(i), 1000+i), store.PutOptions{
			Namespace: fmt.Sprint("ns", i%2), MIMEType: "application/pdf", Filename: fmt.Sprint(i, ".pdf"),
			Scope: store.Scope{SessionID: "s"},
		}))
	}
	return refs
}

// TestDamagedIndexLosesNoBlob: the index truncated to half its size,
// overwritten with garbage, or removed: reopening keeps every blob,
// re-indexed, and warns with counts; a read-only open changes nothing and
// points at fsck.
func TestDamagedIndexLosesNoBlob(t *testing.T) {
	t.Parallel()
	index := func(dir string) string { return filepath.Join(dir, indexName) }
	cases := []struct {
		name   string
		damage func(t *testing.T, dir string)
	}{
		{"truncated to half", func(t *testing.T, dir string) {
			fi, err := os.Stat(index(dir))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(index(dir), fi.Size()/2); err != nil {
				t.Fatal(err)
			}
		}},
		{"garbage", func(t *testing.T, dir string) {
			b, err := os.ReadFile(index(dir))
			if err != nil {
				t.Fatal(err)
			}
			for i := range b {
				b[i] ^= 0x5a
			}
			if err := os.WriteFile(index(dir), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"removed", func(t *testing.T, dir string) {
			if err := os.Remove(index(dir)); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			refs := putMany(t, dir, 20)
			tc.damage(t, dir)
			var roLogs bytes.Buffer
			before := storetest.Tree(t, dir)
			ro := openT(t, dir, Config{ReadOnly: true, Logger: hclog.New(&hclog.LoggerOptions{Output: &roLogs})})
			ro.Close(context.Background())
			storetest.WantSameTree(t, "a read-only open", before, storetest.Tree(t, dir))
			if !strings.Contains(roLogs.String(), "[WARN]") || !strings.Contains(roLogs.String(), "mcpx artifacts fsck") {
				t.Errorf("read-only open of a damaged store does not warn:\n%s", roLogs.String())
			}
			var logs bytes.Buffer
			s, err := Open(context.Background(), dir, Config{Logger: hclog.New(&hclog.LoggerOptions{Output: &logs})})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Stat(context.Background(), refs[0].ID); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("Stat of a lost row: %v, want ErrNotFound", err)
			}
			s.Close(context.Background())
			got := checkConsistent(t, dir)
			bySum := map[string]store.Ref{}
			for _, r := range got {
				bySum[r.SHA256] = r
			}
			for _, r := range refs {
				g, ok := bySum[r.SHA256]
				if !ok {
					t.Errorf("artifact %s (%d bytes) lost", r.ID, r.SizeBytes)
					continue
				}
				if ns, _, _ := store.SplitID(g.ID); ns != recoveredNamespace || g.SizeBytes != r.SizeBytes || g.MIMEType != "" || !g.Scope.IsZero() {
					t.Errorf("re-indexed as %+v, want a %q artifact of %d bytes with no MIME type or scope", g, recoveredNamespace, r.SizeBytes)
				}
			}
			if len(got) != len(refs) {
				t.Errorf("lists %d artifacts, want %d", len(got), len(refs))
			}
			for _, w := range []string{"[WARN]  recovered a damaged store: no blob was deleted", "blobs_reindexed=20"} {
				if !strings.Contains(logs.String(), w) {
					t.Errorf("log lacks %q:\n%s", w, logs.String())
				}
			}
		})
	}
}

// TestCorruptPageRepaired: damage inside the index that its header does
// not show fails the queries that read it with ErrIndexDamaged; fsck
// finds it and --repair rebuilds the index, losing no blob.
func TestCorruptPageRepaired(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	refs := putMany(t, dir, 200)
	// Every page but the schema's: a damaged schema is seen at open.
	schema := map[int]bool{}
	s := openT(t, dir, Config{})
	db, err := s.idx.db(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pages, err := db.QueryContext(ctx, `SELECT pageno FROM dbstat WHERE name = 'sqlite_schema'`)
	if err != nil {
		t.Fatal(err)
	}
	for pages.Next() {
		var n int
		if err := pages.Scan(&n); err != nil {
			t.Fatal(err)
		}
		schema[n] = true
	}
	pages.Close()
	s.Close(ctx)
	b, err := os.ReadFile(filepath.Join(dir, indexName))
	if err != nil {
		t.Fatal(err)
	}
	const pageSize = 4096
	for i := pageSize; i < len(b); i++ {
		if !schema[i/pageSize+1] {
			b[i] = 0xff
		}
	}
	mustWrite(t, filepath.Join(dir, indexName), b)
	s = openT(t, dir, Config{})
	if _, _, err := s.List(ctx, store.Scope{}, ""); !errors.Is(err, ErrIndexDamaged) {
		t.Errorf("List on a corrupt index: %v, want ErrIndexDamaged", err)
	}
	s.Close(ctx)
	rep, err := Check(ctx, dir, Config{})
	if err != nil || !rep.IndexDamaged || !rep.Damaged() {
		t.Fatalf("Check = %+v, %v; want the index damaged", rep, err)
	}
	if _, err := Repair(ctx, dir, Config{}); err != nil {
		t.Fatal(err)
	}
	if got := checkConsistent(t, dir); len(got) != len(refs) {
		t.Errorf("after repair lists %d, want %d", len(got), len(refs))
	}
	if kept := lostFound(t, dir); len(kept) == 0 || !strings.HasPrefix(kept[0].name, "index-damaged-") {
		t.Errorf("lost+found holds %v, want the damaged index", kept)
	}
}

// copyJournalStore copies testdata/journal-store, a store written by the
// journal (version 1) code before the index moved to SQLite, to a temp
// folder.
func copyJournalStore(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("testdata/journal-store")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestAdoptJournalStore: a store written by the journal code opens with
// every artifact, scope, name and source it had, deleted ones staying
// deleted; its journal is kept as a backup and the marker moves on.
func TestAdoptJournalStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := copyJournalStore(t)
	journal, err := os.ReadFile(filepath.Join(dir, journalName))
	if err != nil {
		t.Fatal(err)
	}
	s := openT(t, dir, Config{PageSize: 2})
	refs, _ := storetest.ListAll(t, s, store.Scope{})
	want := []string{"github_c88478fc0cd0", "fs_60c48ddce355", "other_c88478fc0cd0", "artifact_d5dbe469fe62"}
	if got := ids(refs); !slices.Equal(got, want) {
		t.Fatalf("adopted store lists %v, want %v", got, want)
	}
	first := refs[0]
	if first.MIMEType != "image/png" || first.Filename != "a.png" || first.Source != (store.Source{Server: "github", Tool: "get_file", Path: "$.content", Layer: "extract"}) ||
		first.Scope != (store.Scope{TenantID: "t1", UserID: "u1", SessionID: "s1", TraceID: "tr1"}) || first.Created.IsZero() {
		t.Errorf("first artifact after adoption: %+v", first)
	}
	if in, err := s.InScope(ctx, first.ID, store.Scope{SessionID: "s2"}); !in || err != nil {
		t.Errorf("second scope lost: %v, %v", in, err)
	}
	if got, _ := storetest.ReadAll(t, s, first.ID, nil); string(got) != "first artifact, a png?" {
		t.Errorf("Get = %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, journalName)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("journal still in place: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, journalImportedName)); err != nil || !bytes.Equal(b, journal) {
		t.Errorf("journal backup: %v (same bytes: %v)", err, bytes.Equal(b, journal))
	}
	if v, err := markerVersionIn(dir); v != markerVersion || err != nil {
		t.Errorf("marker version %d, %v", v, err)
	}
	// New artifacts come after the journal's, deleted seqs stay used.
	n := putT(t, s, []byte("new"), store.PutOptions{})
	all, _ := storetest.ListAll(t, s, store.Scope{})
	if all[len(all)-1].ID != n.ID {
		t.Errorf("new artifact not last: %v", ids(all))
	}
	s.Close(ctx)
	if got := checkConsistent(t, dir); len(got) != 5 {
		t.Errorf("after reopen lists %d, want 5", len(got))
	}
}

// TestUnindexedCorruptBlobToLostFound: an unindexed blob whose bytes do not
// match its name is moved to lost+found, not deleted and not listed.
func TestUnindexedCorruptBlobToLostFound(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := openT(t, dir, Config{})
	s.Close(context.Background())
	sum := storetest.SHA256Hex([]byte("original"))
	mustWrite(t, filepath.Join(dir, blobsName, sum[:2], sum), []byte("bit rot"))
	refs := checkConsistent(t, dir)
	if len(refs) != 0 {
		t.Errorf("lists %v, want nothing", refs)
	}
	if kept := lostFound(t, dir); len(kept) != 1 || kept[0].name != sum || kept[0].text != "bit rot" {
		t.Errorf("lost+found holds %v, want the blob", kept)
	}
}

// TestCheckAndRepair: Check reports every kind of damage and changes
// nothing; Repair fixes it without deleting a blob; Check is clean after.
func TestCheckAndRepair(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	refs := putMany(t, dir, 6)
	// refs[1]: its blob removed (missing). refs[2]: its bytes rotted
	// (corrupt). An extra blob no row mentions (unindexed). refs[3]'s row
	// lost, which makes its blob unindexed too.
	blob := func(r store.Ref) string { return filepath.Join(dir, blobsName, r.SHA256[:2], r.SHA256) }
	if err := os.Remove(blob(refs[1])); err != nil {
		t.Fatal(err)
	}
	rot := bytes.Repeat([]byte{'x'}, int(refs[2].SizeBytes))
	if err := os.WriteFile(blob(refs[2]), rot, 0o600); err != nil {
		t.Fatal(err)
	}
	extra := []byte("the index never mentioned me")
	extraSum := storetest.SHA256Hex(extra)
	mustWrite(t, filepath.Join(dir, blobsName, extraSum[:2], extraSum), extra)
	mustWrite(t, filepath.Join(dir, tmpName, "mine.txt"), []byte("a user's file"))
	execIndex(t, dir, `DELETE FROM artifacts WHERE id = ?`, refs[3].ID)

	before := storetest.Tree(t, dir)
	rep, err := Check(ctx, dir, Config{})
	if err != nil {
		t.Fatal(err)
	}
	storetest.WantSameTree(t, "Check", before, storetest.Tree(t, dir))
	wantUnindexed := []string{extraSum, refs[3].SHA256}
	slices.Sort(wantUnindexed)
	slices.Sort(rep.Unindexed)
	if rep.IndexDamaged || rep.BadLines != 0 || rep.TornTail || !slices.Equal(rep.Missing, []string{refs[1].ID}) ||
		!slices.Equal(rep.Corrupt, []string{refs[2].SHA256}) || !slices.Equal(rep.Unindexed, wantUnindexed) ||
		!slices.Equal(rep.Unknown, []string{filepath.Join(tmpName, "mine.txt")}) || rep.Artifacts != 5 || !rep.Damaged() {
		t.Errorf("Check = %+v", rep)
	}

	// Repair needs the folder to itself.
	busy := openT(t, dir, Config{ReadOnly: true})
	if _, err := Repair(ctx, dir, Config{}); !errors.Is(err, ErrBusy) {
		t.Errorf("Repair while another handle is open: %v, want ErrBusy", err)
	}
	busy.Close(ctx)
	if _, err := Repair(ctx, dir, Config{}); err != nil {
		t.Fatal(err)
	}
	after, err := Check(ctx, dir, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if after.Damaged() || after.Artifacts != 5 {
		t.Errorf("Check after Repair = %+v, want clean with 5 artifacts (3 kept, 2 re-indexed)", after)
	}
	kept := lostFound(t, dir)
	var names []string
	for _, k := range kept {
		names = append(names, k.name)
	}
	if len(kept) != 1 || !slices.Contains(names, refs[2].SHA256) {
		t.Errorf("lost+found holds %v, want the rotted blob", names)
	}
	if _, err := os.Stat(filepath.Join(dir, tmpName, "mine.txt")); err != nil {
		t.Errorf("Repair removed a user's file: %v", err)
	}
}

// TestReadOnly: a read-only open changes nothing, reads, refuses writes,
// and reads a missing folder as an empty store.
func TestReadOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	refs := putMany(t, dir, 3)
	// Leftovers a read-write open would clean up.
	mustWrite(t, filepath.Join(dir, tmpName, "put-1"), []byte("unfinished"))
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o700) })
	before := storetest.Tree(t, dir)
	s := openT(t, dir, Config{ReadOnly: true})
	got, _ := storetest.ListAll(t, s, store.Scope{})
	if len(got) != 3 {
		t.Errorf("lists %d, want 3", len(got))
	}
	if b, _ := storetest.ReadAll(t, s, refs[0].ID, nil); storetest.SHA256Hex(b) != refs[0].SHA256 {
		t.Errorf("Get(%s) read other bytes", refs[0].ID)
	}
	if in, err := s.InScope(ctx, refs[0].ID, store.Scope{SessionID: "s"}); !in || err != nil {
		t.Errorf("InScope = %v, %v", in, err)
	}
	if _, err := s.Put(ctx, strings.NewReader("x"), store.PutOptions{}); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Put: %v, want ErrReadOnly", err)
	}
	if err := s.Delete(ctx, refs[0].ID); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Delete: %v, want ErrReadOnly", err)
	}
	s.Close(ctx)
	storetest.WantSameTree(t, "a read-only open", before, storetest.Tree(t, dir))

	// Without lock files (a store copied from elsewhere, read-only).
	os.Chmod(dir, 0o700)
	for _, l := range []string{openLockName} {
		if err := os.Remove(filepath.Join(dir, l)); err != nil {
			t.Fatal(err)
		}
	}
	s = openT(t, dir, Config{ReadOnly: true})
	if got, _ := storetest.ListAll(t, s, store.Scope{}); len(got) != 3 {
		t.Errorf("without lock files lists %d, want 3", len(got))
	}
	s.Close(ctx)

	missing := filepath.Join(t.TempDir(), "none")
	s = openT(t, missing, Config{ReadOnly: true})
	if got, _ := storetest.ListAll(t, s, store.Scope{}); len(got) != 0 {
		t.Errorf("a missing folder lists %v", got)
	}
	if _, _, err := s.Get(ctx, refs[0].ID, nil); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get on a missing folder: %v, want ErrNotFound", err)
	}
	s.Close(ctx)
	if _, err := os.Stat(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a read-only open created %s", missing)
	}
}

// TestConcurrentClaim: several opens of one new folder at once all see a
// store (one of them writes the marker first; the others must not take
// its files for someone else's).
func TestConcurrentClaim(t *testing.T) {
	t.Parallel()
	for round := range 20 {
		dir := filepath.Join(t.TempDir(), fmt.Sprint("new-", round))
		errs := make(chan error, 8)
		for range 8 {
			go func() {
				s, err := Open(context.Background(), dir, Config{})
				if err == nil {
					err = s.Close(context.Background())
				}
				errs <- err
			}()
		}
		for range 8 {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
	}
}

//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package fsstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/store"
)

// notUrgent and urgent are the indexer's urgency, fixed.
func notUrgent() bool { return false }
func urgent() bool    { return true }

// A call's write goes before the indexer: the indexer is told to yield
// while the call waits, and does not take the lock back before the call
// had it.
func TestWriteLockCallsFirst(t *testing.T) {
	t.Parallel()
	var l writeLock
	l.lockBackground(notUrgent)
	if l.yield(notUrgent) {
		t.Fatal("yield with nobody waiting")
	}
	got := make(chan string, 2)
	go func() {
		l.Lock()
		got <- "call"
		l.Unlock()
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !l.yield(notUrgent) {
		if time.Now().After(deadline) {
			t.Fatal("a waiting call does not make the indexer yield")
		}
		time.Sleep(time.Millisecond)
	}
	go func() {
		l.lockBackground(notUrgent)
		got <- "indexer"
		l.Unlock()
	}()
	time.Sleep(5 * time.Millisecond) // let the indexer queue up too
	l.Unlock()
	if first, second := <-got, <-got; first != "call" || second != "indexer" {
		t.Errorf("took the lock in order %s, %s; want call, indexer", first, second)
	}
}

// The indexer waits while a put or annotation is under way and for
// indexQuiet after it, unless urgent.
func TestWriteLockWaitsForGap(t *testing.T) {
	var l writeLock
	l.enter()
	took := make(chan struct{})
	go func() {
		l.lockBackground(notUrgent)
		close(took)
	}()
	select {
	case <-took:
		t.Fatal("the indexer took the lock while a put was under way")
	case <-time.After(30 * time.Millisecond):
	}
	if !l.yield(notUrgent) || l.yield(urgent) {
		t.Error("yield during a put: want true, and false when urgent")
	}
	left := time.Now()
	l.leave()
	<-took
	if waited := time.Since(left); waited < indexQuiet {
		t.Errorf("the indexer took the lock %v after the put, want at least %v", waited, indexQuiet)
	}
	l.Unlock()

	l.enter()
	defer l.leave()
	select {
	case <-func() chan struct{} {
		c := make(chan struct{})
		go func() { l.lockBackground(urgent); close(c) }()
		return c
	}():
		l.Unlock()
	case <-time.After(10 * time.Second):
		t.Fatal("urgent: the indexer still waits for the put")
	}
}

// snapshotLines is text of n lines "row<i> word …", 1-based.
func snapshotLines(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "- row%d word [ref=e%d]\n", i, i)
	}
	return b.String()
}

func searchRowCount(t *testing.T, s *Store) int {
	t.Helper()
	db, err := s.idx.db(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM search_parts`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO search_fts (search_fts) VALUES ('integrity-check')`); err != nil {
		t.Errorf("the search index does not match its rows: %v", err)
	}
	return n
}

// An artifact deleted while its text is being indexed, between two of
// the indexer's transactions: the indexer stops, and no row of it is
// left.
func TestIndexerStopsWhenArtifactGoes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openT(t, t.TempDir(), Config{})
	text := snapshotLines(3 * indexTxRows)
	ref := putT(t, s, []byte(text), store.PutOptions{Namespace: "t", MIMEType: "text/plain"})
	var once sync.Once
	committed := 0
	s.hook.fn = func(p string) {
		if p != "index:committed" {
			return
		}
		committed++
		once.Do(func() {
			if err := s.Delete(ctx, ref.ID); err != nil {
				t.Errorf("Delete: %v", err)
			}
		})
	}
	if err := s.Annotate(ctx, ref.ID, nil, []store.TextPart{{Text: text}}); err != nil {
		t.Fatal(err)
	}
	hits, err := s.Search(ctx, store.Scope{}, "word", 5)
	if err != nil || len(hits) != 0 {
		t.Errorf("Search after the delete = %d hits, %v; want none", len(hits), err)
	}
	if committed != 1 {
		t.Errorf("the indexer committed %d transactions, want 1 (it stops once the artifact is gone)", committed)
	}
	if n := searchRowCount(t, s); n != 0 {
		t.Errorf("%d search rows left, want 0", n)
	}
}

// The indexer copies what it wrote into index.db itself (a checkpoint in
// a gap between calls) instead of leaving it to the commit of a call.
func TestIndexerCheckpoints(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	s := openT(t, dir, Config{})
	text := snapshotLines(4000)
	ref := putT(t, s, []byte(text), store.PutOptions{Namespace: "t", MIMEType: "text/plain"})
	before, err := os.Stat(s.idx.path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Annotate(ctx, ref.ID, nil, []store.TextPart{{Text: text}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Search(ctx, store.Scope{}, "row4000", 1); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(s.idx.path)
	if err != nil {
		t.Fatal(err)
	}
	if grown := after.Size() - before.Size(); grown < int64(len(text)) {
		t.Errorf("index.db grew by %d bytes while %d bytes of text were indexed: the WAL was not checkpointed", grown, len(text))
	}
}

// indexCrashLines is the text the "index" helper indexes.
const indexCrashLines = 4 * indexTxRows

// indexHelper puts and annotates a text, and is killed (SIGKILL) after
// the indexer's second transaction.
func indexHelper(ctx context.Context, s *Store) error {
	text := snapshotLines(indexCrashLines)
	ref, err := s.Put(ctx, strings.NewReader(text), store.PutOptions{Namespace: "t", MIMEType: "text/plain"})
	if err != nil {
		return err
	}
	n := 0
	s.hook.fn = func(p string) {
		if p == "index:committed" {
			if n++; n == 2 {
				killSelf(p)
			}
		}
	}
	if err := s.Annotate(ctx, ref.ID, json.RawMessage(`{"kind":"text"}`), []store.TextPart{{Text: text}}); err != nil {
		return err
	}
	if _, err := s.Search(ctx, store.Scope{}, "word", 1); err != nil {
		return err
	}
	return fmt.Errorf("the indexer finished without being killed")
}

// A kill while the indexer writes an artifact's text: the artifact, its
// bytes and its summary are intact, its text still pending; the next
// search indexes it whole (the rows of the killed transactions replaced,
// none twice) and finds its last line.
func TestCrashWhileIndexing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	wantKilled(t, helper(t, "index", dir).Run())
	s := openT(t, dir, Config{})
	refs, _, err := s.List(ctx, store.Scope{}, "")
	if err != nil || len(refs) != 1 {
		t.Fatalf("List = %d refs, %v; want the artifact", len(refs), err)
	}
	ref := refs[0]
	text := snapshotLines(indexCrashLines)
	rc, _, err := s.Get(ctx, ref.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || !bytes.Equal(got, []byte(text)) {
		t.Errorf("the artifact reads back %d bytes (%v), want its %d bytes", len(got), err, len(text))
	}
	if string(ref.Content) != `{"kind":"text"}` {
		t.Errorf("summary %s, want the one annotated", ref.Content)
	}
	if n := searchRowCount(t, s); n != 2*indexTxRows {
		t.Errorf("%d search rows after the kill, want the %d of the two committed transactions", n, 2*indexTxRows)
	}
	if n := pendingCount(t, s); n != 1 {
		t.Errorf("%d texts pending after the kill, want the killed one", n)
	}
	last := fmt.Sprintf("row%d", indexCrashLines)
	if hits, err := s.Search(ctx, store.Scope{}, last, 1); err != nil || len(hits) != 1 {
		t.Errorf("the last line, never indexed before the kill: %d hits, %v", len(hits), err)
	}
	if hits, err := s.Search(ctx, store.Scope{}, "row7", 5); err != nil || len(hits) != 1 {
		t.Errorf("a line of the first transaction: %d hits, %v; want 1", len(hits), err)
	}
	if n := searchRowCount(t, s); n != indexCrashLines {
		t.Errorf("%d search rows, want %d", n, indexCrashLines)
	}
	if n := pendingCount(t, s); n != 0 {
		t.Errorf("%d texts pending after a search, want 0", n)
	}
}

// Close does not wait for the indexer: what it had not written stays
// pending, and a search of another open store (another process, later)
// indexes what is pending in its scope first, and only that.
func TestCloseLeavesTextPending(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openT(t, dir, Config{})
	s.hook.fn = func(p string) {
		if p == "index:committed" {
			t.Errorf("the indexer committed before Close")
		}
	}
	var refs []store.Ref
	for i, sc := range []store.Scope{{SessionID: "a"}, {SessionID: "b"}} {
		text := snapshotLines(3*indexTxRows) + fmt.Sprintf("tail of text %d\n", i)
		ref := putT(t, s, []byte(text), store.PutOptions{Namespace: "t", MIMEType: "text/plain", Scope: sc})
		// A call under way: the indexer waits for a gap that does not come.
		s.idx.wmu.enter()
		if err := s.Annotate(ctx, ref.ID, nil, []store.TextPart{{Text: text}}); err != nil {
			t.Fatal(err)
		}
		refs = append(refs, ref)
	}
	closed := make(chan struct{})
	go func() {
		s.Close(ctx)
		close(closed)
	}()
	<-closed
	s.idx.wmu.leave()
	s.idx.wmu.leave()
	s = openT(t, dir, Config{})
	if n := searchRowCount(t, s); n != 0 {
		t.Errorf("%d search rows after Close, want none (the text pending)", n)
	}
	hits, err := s.Search(ctx, store.Scope{SessionID: "b"}, `"tail of text 1"`, 5)
	if err != nil || len(hits) != 1 || hits[0].Ref.ID != refs[1].ID {
		t.Fatalf("search of session b = %+v, %v; want the line of its artifact", hits, err)
	}
	if n := pendingCount(t, s); n != 1 {
		t.Errorf("%d texts pending after a search of session b, want session a's", n)
	}
	if hits, err := s.Search(ctx, store.Scope{}, `"tail of text 0"`, 5); err != nil || len(hits) != 1 || hits[0].Ref.ID != refs[0].ID {
		t.Errorf("search of every session = %+v, %v; want session a's artifact", hits, err)
	}
	if n, want := searchRowCount(t, s), 2*(3*indexTxRows+1); n != want {
		t.Errorf("%d search rows, want %d", n, want)
	}
}

// pendingCount is how many artifacts' texts are pending in s's index.
func pendingCount(t *testing.T, s *Store) int {
	t.Helper()
	db, err := s.idx.db(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM search_pending`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// AnnotateLater leaves the text to Config.Text, which reads it from the
// blob when a search (here another open store) indexes it; a reader that
// fails leaves no text and nothing pending; a store without a reader
// refuses.
func TestAnnotateLaterReadsTheBlob(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	calls := 0
	read := func(_ context.Context, ref store.Ref, r io.ReaderAt, size int64) ([]store.TextPart, error) {
		calls++
		b := make([]byte, size)
		if _, err := r.ReadAt(b, 0); err != nil && err != io.EOF {
			return nil, err
		}
		if bytes.HasPrefix(b, []byte("broken")) {
			return nil, errors.New("not a document")
		}
		return []store.TextPart{{Place: "page 2", Text: strings.ToUpper(string(b))}}, nil
	}
	if err := openT(t, dir, Config{}).AnnotateLater(ctx, "t_000000000000", nil); !errors.Is(err, store.ErrNoTextReader) {
		t.Errorf("AnnotateLater without a reader: %v, want ErrNoTextReader", err)
	}
	s := openT(t, dir, Config{Text: read})
	good := putT(t, s, []byte("the last page of a long document"), store.PutOptions{Namespace: "t"})
	bad := putT(t, s, []byte("broken bytes"), store.PutOptions{Namespace: "t"})
	s.idx.wmu.enter() // a call under way: the indexer waits
	for _, ref := range []store.Ref{good, bad} {
		if err := s.AnnotateLater(ctx, ref.ID, json.RawMessage(`{"kind":"pdf","partial":"time"}`)); err != nil {
			t.Fatal(err)
		}
	}
	s.Close(ctx)
	s.idx.wmu.leave()
	if calls != 0 {
		t.Errorf("the reader ran %d times before any search", calls)
	}
	s = openT(t, dir, Config{Text: read})
	hits, err := s.Search(ctx, store.Scope{}, `"LAST PAGE"`, 5)
	if err != nil || len(hits) != 1 || hits[0].Ref.ID != good.ID || hits[0].Place != "page 2" || string(hits[0].Ref.Content) != `{"kind":"pdf","partial":"time"}` {
		t.Fatalf("search = %+v, %v; want the text the reader read, at its place", hits, err)
	}
	if calls != 2 || pendingCount(t, s) != 0 {
		t.Errorf("reader ran %d times, %d texts pending; want 2 and none (a failed read leaves no text)", calls, pendingCount(t, s))
	}
	if _, err := s.Search(ctx, store.Scope{}, "broken", 5); err != nil || calls != 2 {
		t.Errorf("a second search: %v, reader ran %d times; want it not to run again", err, calls)
	}
}

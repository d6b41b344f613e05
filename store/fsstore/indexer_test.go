//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package fsstore

import (
	"bytes"
	"context"
	"encoding/json"
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
// bytes and its summary are intact; the search index is consistent and
// holds the lines of the transactions that committed; annotating again
// indexes all of it.
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
	if hits, err := s.Search(ctx, store.Scope{}, "row7", 1); err != nil || len(hits) != 1 {
		t.Errorf("a line of the first transaction: %d hits, %v", len(hits), err)
	}
	last := fmt.Sprintf("row%d", indexCrashLines)
	if hits, err := s.Search(ctx, store.Scope{}, last, 1); err != nil || len(hits) != 0 {
		t.Errorf("a line never indexed: %d hits, %v", len(hits), err)
	}
	if err := s.Annotate(ctx, ref.ID, ref.Content, []store.TextPart{{Text: text}}); err != nil {
		t.Fatal(err)
	}
	if hits, err := s.Search(ctx, store.Scope{}, last, 1); err != nil || len(hits) != 1 {
		t.Errorf("annotated again, the last line: %d hits, %v", len(hits), err)
	}
	if n := searchRowCount(t, s); n != indexCrashLines {
		t.Errorf("%d search rows, want %d", n, indexCrashLines)
	}
}

//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package fsstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"github.com/mcpx-dev/mcpx/store"
)

// TestIndexMigratesToContent: an index of version 1 (no content column,
// as an mcpx before summaries wrote it) is read by a read-only store
// without content, migrated by the next read-write open (its artifacts
// kept), and keeps what Annotate records across a reopen.
func TestIndexMigratesToContent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	s := openT(t, dir, Config{})
	ref := putT(t, s, []byte("kept across the migration"), store.PutOptions{Namespace: "m", MIMEType: "text/plain"})
	s.Close(ctx)

	// Make it a version 1 index.
	db, err := sql.Open("sqlite", filepath.Join(dir, indexName))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range append(downToVersion2, `ALTER TABLE artifacts DROP COLUMN content`, `PRAGMA user_version = 1`) {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()

	ro := openT(t, dir, Config{ReadOnly: true})
	got, err := ro.Stat(ctx, ref.ID)
	if err != nil || got.SHA256 != ref.SHA256 || got.Content != nil {
		t.Fatalf("read-only Stat of a version 1 index = %+v, %v", got, err)
	}
	if refs, _, err := ro.List(ctx, store.Scope{}, ""); err != nil || len(refs) != 1 {
		t.Fatalf("read-only List = %d refs, %v", len(refs), err)
	}
	if err := ro.Annotate(ctx, ref.ID, json.RawMessage(`{}`), nil); !errors.Is(err, ErrReadOnly) {
		t.Errorf("read-only Annotate = %v, want ErrReadOnly", err)
	}
	ro.Close(ctx)

	rw := openT(t, dir, Config{})
	content := json.RawMessage(`{"kind":"text","lines":1}`)
	if err := rw.Annotate(ctx, ref.ID, content, []store.TextPart{{Place: "line 1", Text: "kept across the migration"}}); err != nil {
		t.Fatalf("Annotate after the migration: %v", err)
	}
	var v int
	idx, _ := rw.idx.db(ctx)
	if err := idx.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil || v != schemaVersion {
		t.Errorf("user_version = %d, %v; want %d", v, err, schemaVersion)
	}
	rw.Close(ctx)

	again := openT(t, dir, Config{ReadOnly: true})
	got, err = again.Stat(ctx, ref.ID)
	if err != nil || string(got.Content) != string(content) {
		t.Errorf("Stat after reopening = %s, %v; want %s", got.Content, err, content)
	}
}

// TestAnnotateLeavesPutsSynced: Annotate commits on a connection without
// fsync (synchronous=NORMAL) and hands it back to the pool set to FULL
// again, so every connection a put may take still syncs its commit; the
// summary is kept across a reopen.
func TestAnnotateLeavesPutsSynced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	s := openT(t, dir, Config{})
	ref := putT(t, s, []byte("a summary is written unsynced"), store.PutOptions{Namespace: "a", MIMEType: "text/plain"})
	content := json.RawMessage(`{"kind":"text","lines":1}`)
	for range 3 {
		if err := s.Annotate(ctx, ref.ID, content, nil); err != nil {
			t.Fatal(err)
		}
	}
	db, err := s.idx.db(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Every connection of the pool at once: the one Annotate used among them.
	var conns []*sql.Conn
	for range maxIndexConns {
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		var level int
		if err := c.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&level); err != nil || level != 2 {
			t.Errorf("connection %d: synchronous = %d, %v; want 2 (FULL)", len(conns), level, err)
		}
	}
	for _, c := range conns {
		c.Close()
	}
	putT(t, s, []byte("a put after the summary"), store.PutOptions{Namespace: "a"})
	s.Close(ctx)
	s = openT(t, dir, Config{})
	defer s.Close(ctx)
	if got, err := s.Stat(ctx, ref.ID); err != nil || string(got.Content) != string(content) {
		t.Errorf("after a reopen: content %s, %v; want %s", got.Content, err, content)
	}
}

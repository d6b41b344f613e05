//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package fsstore

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/store"
)

// downToVersion2 makes a current index one of version 2, as an mcpx before
// per-scope creation times wrote it.
var downToVersion2 = []string{
	`DROP INDEX scopes_created`,
	`ALTER TABLE scopes DROP COLUMN created_at`,
	`ALTER TABLE scopes DROP COLUMN filename`,
	`ALTER TABLE scopes DROP COLUMN source_server`,
	`ALTER TABLE scopes DROP COLUMN source_tool`,
	`ALTER TABLE scopes DROP COLUMN source_path`,
	`ALTER TABLE scopes DROP COLUMN source_layer`,
	`PRAGMA user_version = 2`,
}

// TestIndexMigratesToScopeCreation: an index of version 2 (no creation
// per scope) is read by a read-only store with the artifact's creation
// for every scope, and migrated by the next read-write open: every scope
// recorded before gets the artifact's creation, later ones their own,
// and each owner is shown its own.
func TestIndexMigratesToScopeCreation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	s := openT(t, dir, Config{})
	a := store.Scope{TenantID: "acme", UserID: "alice", SessionID: "s1"}
	b := store.Scope{UserID: "bob", SessionID: "s2"}
	data := []byte("put by two owners before the migration")
	first := putT(t, s, data, store.PutOptions{Namespace: "m", Scope: a})
	time.Sleep(2 * time.Millisecond)
	putT(t, s, data, store.PutOptions{Namespace: "m", Scope: b})
	s.Close(ctx)

	db, err := sql.Open("sqlite", filepath.Join(dir, indexName))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range downToVersion2 {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()

	ro := openT(t, dir, Config{ReadOnly: true})
	refs, err := ro.Owned(ctx, first.ID, b.Owner())
	if err != nil || len(refs) != 1 || refs[0].Scope != b || !refs[0].Created.Equal(first.Created) {
		t.Fatalf("read-only Owned of a version 2 index = %+v, %v; want bob's scope, created with the artifact", refs, err)
	}
	if rep, err := ro.Collect(ctx, store.Retention{MaxArtifactsPerUser: 1, Strategy: store.StrategyFIFO}, store.CollectOptions{DryRun: true}); err != nil || rep.Count != 0 {
		t.Errorf("read-only dry run on a version 2 index = %+v, %v", rep, err)
	}
	ro.Close(ctx)

	rw := openT(t, dir, Config{})
	var v int
	idx, _ := rw.idx.db(ctx)
	if err := idx.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil || v != schemaVersion {
		t.Fatalf("user_version = %d, %v; want %d", v, err, schemaVersion)
	}
	c := store.Scope{TenantID: "acme", UserID: "carol"}
	before := time.Now()
	late := putT(t, rw, data, store.PutOptions{Namespace: "m", Scope: c})
	if late.Created.Before(before) {
		t.Errorf("a scope added after the migration created %v, want its own (after %v)", late.Created, before)
	}
	var got []store.Scope
	for _, o := range []store.Owner{a.Owner(), b.Owner(), c.Owner()} {
		refs, err := rw.Owned(ctx, first.ID, o)
		if err != nil || len(refs) != 1 {
			t.Fatalf("Owned(%+v) after the migration = %+v, %v", o, refs, err)
		}
		want := first.Created
		if o == c.Owner() {
			want = late.Created
		}
		if !refs[0].Created.Equal(want) {
			t.Errorf("Owned(%+v) created %v, want %v", o, refs[0].Created, want)
		}
		got = append(got, refs[0].Scope)
	}
	if !slices.Equal(got, []store.Scope{a, b, c}) {
		t.Errorf("scopes after the migration = %+v", got)
	}
	// Retention runs on the migrated index: fifo's TTL per scope lets
	// the migrated scopes go and keeps carol's.
	rep, err := rw.Collect(ctx, store.Retention{TTL: store.Duration(time.Hour), Strategy: store.StrategyFIFO},
		store.CollectOptions{Now: late.Created.Add(time.Hour - time.Nanosecond)})
	if err != nil || rep.Count != 1 || len(rep.Removed) != 1 || len(rep.Removed[0].Released) != 2 {
		t.Fatalf("collect after the migration = %+v, %v; want one release of two scopes", rep, err)
	}
	if refs, err := rw.Owned(ctx, first.ID, c.Owner()); err != nil || len(refs) != 1 {
		t.Errorf("carol's scope after the release = %+v, %v", refs, err)
	}
}

package fsstore

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/mcpx-dev/mcpx/store"
)

// index is the SQLite database that indexes the blobs: its connection
// pool, opened on first use, and the write lock that orders this
// process's write transactions. Opening it may create, migrate, adopt a
// journal into or rebuild it (indexopen.go), with the blob folders, the
// open lock and the recovery it is given.
type index struct {
	path, journalPath, dir string
	busyTimeout            time.Duration
	readOnly               bool
	log                    hclog.Logger
	files                  *blobFolders
	lock                   *openLock
	rebuild                *recovery

	// wmu lets one write transaction of this process at a time ask
	// SQLite for the write lock, the search indexer's after the others
	// (see writeLock).
	wmu writeLock

	mu     sync.Mutex // guards closed, pool, prefetching, immutable
	closed bool
	pool   *sql.DB
	// prefetching is set once a put started opening the index ahead of
	// its commit (see prefetch).
	prefetching bool
	// immutable is set when pool reads the index immutable (see
	// openReadOnly).
	immutable bool
	// oldVersion is the schema version of an index older than this mcpx's
	// that a read-only store reads as it is (see refColumnsOf); 0 for a
	// current one.
	oldVersion atomic.Int32
}

// db returns the index, opening it on first use (see open). A read-only
// store of a folder without an index returns nil, nil.
func (x *index) db(ctx context.Context) (*sql.DB, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return nil, store.ErrClosed
	}
	if x.pool != nil && x.immutable {
		if wal, _ := statIfExists(x.path + "-wal"); wal != nil {
			// A writer has the index open now: read its WAL too.
			x.pool.Close()
			x.pool = nil
		}
	}
	if x.pool != nil {
		return x.pool, nil
	}
	db, err := x.open(ctx)
	if err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	x.pool = db
	return db, nil
}

// forID checks ctx and id and returns the index for a lookup of id; an
// error wrapping store.ErrNotFound when a read-only store has none.
func (x *index) forID(ctx context.Context, id string) (*sql.DB, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("fsstore: artifact[%s]: %w", store.QuoteID(id), err)
	}
	if !store.ValidID(id) {
		return nil, fmt.Errorf("fsstore: artifact[%s]: %w", store.QuoteID(id), store.ErrInvalidID)
	}
	db, err := x.db(ctx)
	if err != nil {
		return nil, fmt.Errorf("fsstore: artifact[%s]: %w", id, err)
	}
	if db == nil {
		return nil, fmt.Errorf("fsstore: artifact[%s]: %w", id, store.ErrNotFound)
	}
	return db, nil
}

// prefetch starts opening the index in the background, once: the first
// put of a process opens it beside its copy and fsync rather than after
// them, so a CLI run storing one large artifact waits for the slower of
// the two, not their sum. An error is the commit's to report, when it
// opens the index itself.
func (x *index) prefetch(ctx context.Context) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.pool == nil && !x.prefetching {
		x.prefetching = true
		go x.db(context.WithoutCancel(ctx))
	}
}

// opened returns the index when it is open, else nil (never opening it).
func (x *index) opened() *sql.DB {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.pool
}

// isClosed reports whether close ran.
func (x *index) isClosed() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.closed
}

// close closes the pool; first is false when an earlier close did.
func (x *index) close() (first bool, err error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return false, nil
	}
	x.closed = true
	if x.pool != nil {
		err = x.pool.Close()
		x.pool = nil
	}
	return true, err
}

// refColumns is the select list of scanRef for the open index.
func (x *index) refColumns() string { return refColumnsOf(x.version()) }

// version is the schema version of the open index.
func (x *index) version() int {
	if v := x.oldVersion.Load(); v != 0 {
		return int(v)
	}
	return schemaVersion
}

// queryErr adds to a query's error what to do when the index is damaged.
func (x *index) queryErr(err error) error {
	if isCorrupt(err) {
		x.log.Warn("the index is damaged: run 'mcpx artifacts fsck --repair'", "index", x.path, "error", err)
		return fmt.Errorf("%w: %w", ErrIndexDamaged, err)
	}
	return err
}

// write runs fn in a write transaction of the index, holding wmu, and
// commits when fn succeeds.
func (x *index) write(ctx context.Context, db *sql.DB, fn func(tx *sql.Tx) error) error {
	x.wmu.Lock()
	defer x.wmu.Unlock()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// writeVersioned is write that reads the index's schema version first,
// inside the transaction, where no other process can change it.
func (x *index) writeVersioned(ctx context.Context, db *sql.DB, fn func(tx *sql.Tx, version int) error) error {
	return x.write(ctx, db, func(tx *sql.Tx) error {
		var v int
		if err := tx.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil {
			return err
		}
		return fn(tx, v)
	})
}

// indexName is the SQLite database that indexes the blobs; SQLite keeps
// its write-ahead log and shared memory beside it (-wal, -shm).
const indexName = "index.db"

// schemaVersion is PRAGMA user_version of a current index; 0 is a new,
// empty database file. An index of an older version is brought up to date
// by migrations when a read-write store opens it.
const schemaVersion = 3

// migrations are the statements that take an index from the version before
// their key to their key. schema creates the current version directly.
var migrations = map[int][]string{
	// 2: each artifact's content summary (Annotate).
	2: {`ALTER TABLE artifacts ADD COLUMN content TEXT`},
	// 3: when each scope first put the bytes, and the name and source
	// its latest put gave them, so that every owner is shown its own
	// and retention runs per owner. Scopes recorded before have only the
	// artifact's to go by.
	3: {
		`ALTER TABLE scopes ADD COLUMN created_at INTEGER NOT NULL DEFAULT 0`,
		`ALTER TABLE scopes ADD COLUMN filename TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE scopes ADD COLUMN source_server TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE scopes ADD COLUMN source_tool TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE scopes ADD COLUMN source_path TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE scopes ADD COLUMN source_layer TEXT NOT NULL DEFAULT ''`,
		`UPDATE scopes SET (created_at, filename, source_server, source_tool, source_path, source_layer) =
			(SELECT a.created_at, a.filename, a.source_server, a.source_tool, a.source_path, a.source_layer
			FROM artifacts a WHERE a.seq = scopes.seq)`,
		`CREATE INDEX scopes_created ON scopes (created_at)`,
	},
}

// schema creates the index. Columns hold what a ref says (content is the
// JSON summary Annotate recorded, NULL until then) plus what
// retention needs: last_access_at (LRU), created_at (TTL, FIFO) and size
// (quotas). Times are Unix nanoseconds (UTC). seq is the insertion order
// List pages by (never reused: AUTOINCREMENT), so a cursor never points at
// a newer artifact. Every scope an artifact was put under is a row of
// scopes, ord 0 being the first, with when it was first put under it
// (its owner's created_at, and the clock of its TTL under fifo) and the
// file name and source of its latest put (what its owner is shown; the
// artifacts row keeps the first put's); List and InScope filter there,
// through an index per scope field that ends in seq, so a filtered page
// reads only the rows it returns.
var schema = []string{
	`CREATE TABLE artifacts (
		seq            INTEGER PRIMARY KEY AUTOINCREMENT,
		id             TEXT    NOT NULL UNIQUE,
		namespace      TEXT    NOT NULL,
		sha256         TEXT    NOT NULL,
		size           INTEGER NOT NULL,
		mime           TEXT    NOT NULL DEFAULT '',
		filename       TEXT    NOT NULL DEFAULT '',
		source_server  TEXT    NOT NULL DEFAULT '',
		source_tool    TEXT    NOT NULL DEFAULT '',
		source_path    TEXT    NOT NULL DEFAULT '',
		source_layer   TEXT    NOT NULL DEFAULT '',
		created_at     INTEGER NOT NULL,
		last_access_at INTEGER NOT NULL,
		content        TEXT,
		UNIQUE (namespace, sha256)
	)`,
	`CREATE INDEX artifacts_sha256 ON artifacts (sha256)`,
	`CREATE INDEX artifacts_created ON artifacts (created_at, seq)`,
	`CREATE INDEX artifacts_last_access ON artifacts (last_access_at, seq)`,
	`CREATE INDEX artifacts_size ON artifacts (size, seq)`,
	`CREATE TABLE scopes (
		seq        INTEGER NOT NULL REFERENCES artifacts (seq) ON DELETE CASCADE,
		ord        INTEGER NOT NULL,
		tenant_id  TEXT    NOT NULL DEFAULT '',
		user_id    TEXT    NOT NULL DEFAULT '',
		session_id TEXT    NOT NULL DEFAULT '',
		trace_id   TEXT    NOT NULL DEFAULT '',
		created_at INTEGER NOT NULL DEFAULT 0,
		filename      TEXT NOT NULL DEFAULT '',
		source_server TEXT NOT NULL DEFAULT '',
		source_tool   TEXT NOT NULL DEFAULT '',
		source_path   TEXT NOT NULL DEFAULT '',
		source_layer  TEXT NOT NULL DEFAULT '',
		PRIMARY KEY (seq, ord),
		UNIQUE (seq, tenant_id, user_id, session_id, trace_id)
	) WITHOUT ROWID`,
	`CREATE INDEX scopes_tenant ON scopes (tenant_id, seq)`,
	`CREATE INDEX scopes_user ON scopes (user_id, seq)`,
	`CREATE INDEX scopes_session ON scopes (session_id, seq)`,
	`CREATE INDEX scopes_trace ON scopes (trace_id, seq)`,
	`CREATE INDEX scopes_created ON scopes (created_at)`,
	// meta holds facts about the store itself: "journal_imported" once a
	// journal store has been adopted.
	`CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID`,
}

// refColumnsOf returns the columns scanRef reads, in its order, before
// the four scope columns, from an index of version v: a read-only store
// reads an older index as it is (no content column before 2, no scope
// creation or naming before 3: the artifact's stand in).
func refColumnsOf(v int) string {
	named, content := "s", "a.content"
	if v < 3 {
		named = "a"
	}
	if v < 2 {
		content = "NULL"
	}
	return `a.seq, a.id, a.sha256, a.size, a.mime, ` + named + `.filename, ` + named + `.source_server, ` + named + `.source_tool, ` +
		named + `.source_path, ` + named + `.source_layer, ` + named + `.created_at, ` + content
}

const scopeColumns = `s.tenant_id, s.user_id, s.session_id, s.trace_id`

type rowScanner interface{ Scan(dest ...any) error }

// scanRef reads refColumnsOf and scopeColumns (and extra) from row.
func scanRef(row rowScanner, extra ...any) (seq int64, ref store.Ref, err error) {
	var created int64
	var content sql.NullString
	dest := []any{&seq, &ref.ID, &ref.SHA256, &ref.SizeBytes, &ref.MIMEType, &ref.Filename,
		&ref.Source.Server, &ref.Source.Tool, &ref.Source.Path, &ref.Source.Layer, &created, &content,
		&ref.Scope.TenantID, &ref.Scope.UserID, &ref.Scope.SessionID, &ref.Scope.TraceID}
	err = row.Scan(append(dest, extra...)...)
	ref.Created = time.Unix(0, created).UTC()
	if content.Valid && content.String != "" {
		ref.Content = json.RawMessage(content.String)
	}
	return seq, ref, err
}

// scopeFilter returns the SQL conditions on scopes s that match filter
// (only its set fields), and their arguments.
func scopeFilter(filter store.Scope) (string, []any) {
	var cond []string
	var args []any
	for _, f := range []struct{ col, v string }{
		{"s.tenant_id", filter.TenantID}, {"s.user_id", filter.UserID},
		{"s.session_id", filter.SessionID}, {"s.trace_id", filter.TraceID},
	} {
		if f.v != "" {
			cond = append(cond, f.col+" = ?")
			args = append(args, f.v)
		}
	}
	if len(cond) == 0 {
		return "", nil
	}
	return " AND " + strings.Join(cond, " AND "), args
}

// indexDSN returns the database/sql name that opens the index at path:
// WAL (readers never wait for a writer), a busy timeout (writers of other
// processes wait their turn), full sync (a committed put survives a power
// loss, as the journal's fsync did), foreign keys on, and BEGIN IMMEDIATE
// (a write transaction takes the write lock up front instead of failing
// when it upgrades). A read-only index opens mode=ro, or immutable when the
// folder is not writable (no -shm can be made there).
func indexDSN(path string, busy time.Duration, readOnly, immutable bool) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
	q.Add("_pragma", "foreign_keys(1)")
	switch {
	case immutable:
		q.Set("immutable", "1")
		q.Set("mode", "ro")
	case readOnly:
		q.Set("mode", "ro")
	default:
		q.Add("_pragma", "journal_mode(wal)")
		q.Add("_pragma", "synchronous(full)")
		q.Add("_pragma", fmt.Sprintf("wal_autocheckpoint(%d)", walAutoCheckpoint))
		q.Set("_txlock", "immediate")
	}
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}

// walAutoCheckpoint is the WAL size, in pages, at which a commit copies
// the WAL into index.db itself (SQLite's default is 1000). The search
// indexer checkpoints in the gaps between calls (see indexer.go), so a
// call's commit does not pay for copying the pages the indexer wrote;
// this is the backstop for a WAL that grows without it (about 40 MB of
// 4 KiB pages). A checkpoint copies each page once, however many times
// the WAL holds it.
const walAutoCheckpoint = 10000

// errIndexDamaged marks an index file that is not a whole SQLite database;
// errIndexShort, one shorter than its header says.
var (
	errIndexDamaged = errors.New("index is damaged")
	errIndexShort   = errors.New("shorter than its header says")
)

// checkIndexHeader reads the index file's header and size: a file that is
// not a SQLite database, or is shorter than its header says (a truncated
// copy), is damaged. It is cheap (one read of 100 bytes): page-level damage
// is found by the queries that hit it and by fsck's integrity check. It
// reports false when the file is missing or empty.
//
// A checkpoint in another process writes page 1 (the header, with the new
// page count) before the pages that grow the file, so a live index can be
// shorter than its header for a moment: while its WAL holds frames, a
// short file is read again for up to headerSettle, and is damaged only if
// it stays short.
func checkIndexHeader(f *os.File) (bool, error) {
	deadline := time.Now().Add(headerSettle)
	for walGone := false; ; {
		ok, short, err := readIndexHeader(f)
		if !short || walGone || time.Now().After(deadline) {
			return ok, err
		}
		// A checkpoint that ended grew the file before it removed or
		// emptied the WAL: one more look after that decides.
		if wal, werr := os.Stat(f.Name() + "-wal"); werr != nil || wal.Size() == 0 {
			walGone = true
			continue
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// walHeaderSize is the size of a WAL's header: a longer WAL holds frames.
const walHeaderSize = 32

// checkHeader checks the header of f, the index file (checkIndexHeader).
// A file that stays shorter than its header says while its
// WAL holds frames is not an error yet: short is that finding, for
// settleShort to decide once SQLite has the index open. A checkpoint
// copies page 1, with the grown page count, before the pages that grow
// the file, so a kill in the middle of one leaves the file short; the
// WAL still holds every page it lacks, and SQLite reads them from there.
func (x *index) checkHeader(f *os.File) (short, err error) {
	_, herr := checkIndexHeader(f)
	if !errors.Is(herr, errIndexShort) {
		return nil, herr
	}
	if wal, err := statIfExists(x.path + "-wal"); err != nil || wal == nil || wal.Size() <= walHeaderSize {
		return nil, herr
	}
	return herr, nil
}

// settleShort decides about an index file that checkHeader found short
// (finding) beside a WAL with frames, once db has it open: a writer
// first copies the WAL into the file, which completes the checkpoint a
// kill interrupted; then the index is whole if its header says so, or if
// SQLite's quick_check reads every page (a read-only store cannot
// checkpoint, and another process's readers may hold frames back). Else
// it returns finding, with what SQLite found: pages are missing.
func (x *index) settleShort(ctx context.Context, db *sql.DB, finding error) error {
	if !x.readOnly {
		if _, err := db.ExecContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`); err != nil && !isCorrupt(err) {
			return err
		}
		if f, err := openIfPresent(x.path); err == nil && f != nil {
			_, short, _ := readIndexHeader(f)
			f.Close()
			if !short {
				x.log.Info("completed a checkpoint of the index that a kill interrupted", "index", x.path)
				return nil
			}
		}
	}
	var res string
	err := db.QueryRowContext(ctx, `PRAGMA quick_check(1)`).Scan(&res)
	switch {
	case err != nil && !isCorrupt(err):
		return err
	case err != nil:
		return fmt.Errorf("%w; quick_check: %w", finding, err)
	case res != "ok":
		return fmt.Errorf("%w; quick_check: %s", finding, res)
	}
	x.log.Info("the index file is shorter than its header says, and its WAL holds the pages it lacks", "index", x.path)
	return nil
}

// headerSettle bounds how long checkIndexHeader waits for a checkpoint
// under way to grow the index to what its header says: copying the most a
// WAL holds before it is checkpointed (walAutoCheckpoint pages, 40 MB)
// takes well under it.
const headerSettle = 2 * time.Second

// readIndexHeader is one look at f's header and size; short says the file
// is shorter than the header's page count.
func readIndexHeader(f *os.File) (ok, short bool, err error) {
	fi, err := f.Stat()
	if err != nil {
		return false, false, err
	}
	if fi.Size() == 0 {
		return false, false, nil
	}
	var h [100]byte
	if _, err := f.ReadAt(h[:], 0); err != nil {
		return true, false, fmt.Errorf("%w: %d bytes, shorter than a SQLite header", errIndexDamaged, fi.Size())
	}
	if string(h[:16]) != "SQLite format 3\x00" {
		return true, false, fmt.Errorf("%w: not a SQLite database", errIndexDamaged)
	}
	pageSize := int64(binary.BigEndian.Uint16(h[16:18]))
	if pageSize == 1 {
		pageSize = 65536
	}
	pages := int64(binary.BigEndian.Uint32(h[28:32]))
	// The page count is valid when the change counter matches the
	// version-valid-for number (SQLite 3.7.0 and later write both).
	if binary.BigEndian.Uint32(h[24:28]) == binary.BigEndian.Uint32(h[92:96]) && pages*pageSize > fi.Size() {
		return true, true, fmt.Errorf("%w: %d bytes, %w (%d pages of %d)", errIndexDamaged, fi.Size(), errIndexShort, pages, pageSize)
	}
	return true, false, nil
}

// isCorrupt reports whether err is SQLite saying the file is damaged.
func isCorrupt(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
			return true
		}
	}
	return errors.Is(err, errIndexDamaged)
}

// isBusy reports whether err is SQLite saying another connection holds
// the lock it needs (SQLITE_BUSY, SQLITE_LOCKED).
func isBusy(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return true
		}
	}
	return false
}

// statIfExists returns the file info of path, nil when it is missing.
func statIfExists(path string) (fs.FileInfo, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return fi, err
}

// createSchema creates the tables in a new index. The caller holds a write
// transaction and has seen user_version 0.
func createSchema(ctx context.Context, tx *sql.Tx) error {
	for _, q := range schema {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("create index schema: %w", err)
		}
	}
	_, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", schemaVersion))
	return err
}

// insertArtifact inserts ref (with its first scope, created with it) and
// returns its seq.
func insertArtifact(ctx context.Context, tx *sql.Tx, ns string, ref store.Ref) (int64, error) {
	return insertArtifactSeq(ctx, tx, 0, ns, ref)
}

// insertArtifactSeq is insertArtifact with a given seq (a journal's); 0
// lets SQLite pick the next one.
func insertArtifactSeq(ctx context.Context, tx *sql.Tx, seq int64, ns string, ref store.Ref) (int64, error) {
	created := ref.Created.UnixNano()
	var seqArg any
	if seq > 0 {
		seqArg = seq
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO artifacts
		(seq, id, namespace, sha256, size, mime, filename, source_server, source_tool, source_path, source_layer, created_at, last_access_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		seqArg, ref.ID, ns, ref.SHA256, ref.SizeBytes, ref.MIMEType, ref.Filename,
		ref.Source.Server, ref.Source.Tool, ref.Source.Path, ref.Source.Layer, created, created)
	if err != nil {
		return 0, err
	}
	if seq, err = res.LastInsertId(); err != nil {
		return 0, err
	}
	return seq, addScope(ctx, tx, seq, ref.Scope, created, ref.Filename, ref.Source)
}

// addScope records that the artifact seq was put under sc at created
// (Unix ns), called filename from src: a new scope row, or the latest
// name and source of the row sc has already (whose creation stays, and
// whose name and source stay when this put gives none).
func addScope(ctx context.Context, tx *sql.Tx, seq int64, sc store.Scope, created int64, filename string, src store.Source) error {
	named := src != store.Source{}
	_, err := tx.ExecContext(ctx, `INSERT INTO scopes (seq, ord, tenant_id, user_id, session_id, trace_id, created_at,
			filename, source_server, source_tool, source_path, source_layer)
		VALUES (?, (SELECT COALESCE(MAX(ord) + 1, 0) FROM scopes WHERE seq = ?), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (seq, tenant_id, user_id, session_id, trace_id) DO UPDATE SET
			filename = IIF(excluded.filename = '', filename, excluded.filename),
			source_server = IIF(?, excluded.source_server, source_server), source_tool = IIF(?, excluded.source_tool, source_tool),
			source_path = IIF(?, excluded.source_path, source_path), source_layer = IIF(?, excluded.source_layer, source_layer)`,
		seq, seq, sc.TenantID, sc.UserID, sc.SessionID, sc.TraceID, created,
		filename, src.Server, src.Tool, src.Path, src.Layer, named, named, named, named)
	return err
}

// allocateID returns a free id for new content in ns (see store.AllocateID).
func allocateID(ctx context.Context, tx *sql.Tx, ns, sum string, prefixLen int) (string, error) {
	var qerr error
	id, err := store.AllocateID(ns, sum, prefixLen, func(id string) (string, bool) {
		var other string
		err := tx.QueryRowContext(ctx, `SELECT sha256 FROM artifacts WHERE id = ?`, id).Scan(&other)
		if err != nil {
			if !errors.Is(err, sql.ErrNoRows) {
				qerr = err
				return sum, true // stop: the error is returned below
			}
			return "", false
		}
		return other, true
	})
	if qerr != nil {
		return "", qerr
	}
	return id, err
}

// openIndexDB opens the index at dsn with its connection pool sized and
// returns its schema version (PRAGMA user_version; 0 for a new index).
func openIndexDB(ctx context.Context, dsn string) (*sql.DB, int, error) {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, 0, err
	}
	db.SetMaxOpenConns(maxIndexConns)
	db.SetMaxIdleConns(maxIndexConns)
	var v int
	if err := db.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil {
		db.Close()
		return nil, 0, err
	}
	return db, v, nil
}

// blobHeldQuery asks whether any artifact still holds the blob ?.
const blobHeldQuery = `SELECT EXISTS (SELECT 1 FROM artifacts WHERE sha256 = ?)`

// blobHeld reports whether any artifact holds the blob sum.
func blobHeld(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, sum string) (bool, error) {
	var held bool
	err := q.QueryRowContext(ctx, blobHeldQuery, sum).Scan(&held)
	return held, err
}

// Package fsstore is the embedded default artifact store: a folder on the
// local file system.
//
// # Layout
//
//	<dir>/mcpx-store.json    the marker: {"format":"mcpx-fsstore","version":2}
//	<dir>/blobs/ab/ab12…ef   content-addressed bytes, one file per sha256
//	<dir>/index.db           the index, a SQLite database in WAL mode
//	                         (with index.db-wal and index.db-shm beside it)
//	<dir>/tmp/               puts and deletes in progress (same file system as blobs/)
//	<dir>/lost+found/        what recovery could not place (never deleted)
//	<dir>/open.lock          held shared by every open store
//	<dir>/index.jsonl.imported  the journal of a version 1 store, kept after adoption
//
// # Whose folder
//
// Open makes a folder a store only when it is missing, empty, or carries
// the marker (a folder holding only what a store made before markers
// existed is adopted and marked). Any other folder, such as a project
// folder or the home folder named by mistake, fails with ErrNotAStore
// before anything in it is touched. tmp/ and blobs/ must be real folders:
// a symbolic link there is refused, never followed. Open opens both as
// directory handles (os.Root) and the store reads, writes, links and
// renames blobs only through them, so a folder swapped for a link while
// the store is open is not followed either.
//
// # Writes
//
// Put streams the reader into a temp file under tmp/, hashing as it copies
// (the artifact is never held in memory), fsyncs it, hard-links it to
// blobs/<first two hex>/<sha256> (an existing blob of the same bytes is
// kept) and fsyncs that folder; then, in one short write transaction, it
// records the artifact (or the new scope of a known one), makes sure the
// blob is still there (a concurrent delete may have taken it; the temp file
// puts it back), and commits; then it removes the temp file. Bytes already
// stored under another id are not written twice: ids in different
// namespaces share one blob, and Delete removes a blob only when no id
// holds it any more: in its transaction it moves the blob to tmp/del-…,
// commits, then removes it.
//
// # Why SQLite
//
// The index is an embedded SQLite database (modernc.org/sqlite: pure Go, so
// the binary stays static and cgo-free; FTS5 is compiled in). Opening the
// store reads nothing in proportion to what it holds, Stat and InScope are
// index lookups, and List pages through an index by insertion order, newest
// or oldest first, filtering by scope in SQL; memory does not grow with the
// store. WAL mode lets readers go on while one writer commits, and SQLite's
// locks (with a busy timeout) order the writers of every process sharing
// the folder, so a gateway, mcpx artifacts and many mcpx transform see one
// consistent store. A process that stores and reads nothing (a transform
// whose result had no blob) never opens the index: it is opened on first
// use.
//
// # Recovery
//
// A kill leaves at most one temp file per call in tmp/: a put's temp file
// (linked into blobs/ or not), or a delete's parked blob. An Open that
// finds no other process using the folder (it gets open.lock exclusively)
// settles them: a temp file never linked is removed; one that was linked
// but not recorded is re-indexed as "recovered_<sha256 prefix>" (its blob
// is kept: nothing proves it garbage); a parked blob goes back when its
// artifact is still recorded, else it is removed. Only names the store
// mints are touched (put-<n>, del-<sha256>-<n>); anything else is left
// and logged.
//
// An index that is missing while blobs exist, or whose file is not a whole
// SQLite database (damaged or truncated), is moved to lost+found/ and
// rebuilt from the blobs by the first process that opens it alone; every
// blob whose bytes match its name is re-indexed from what it proves, its
// bytes, sha256 and size (its MIME type, file name, source and scopes are
// lost), and one whose bytes do not is moved to lost+found/. A re-indexed
// artifact has the empty scope, so only an unscoped List (mcpx artifacts
// ls) shows it. Damage a cheap check cannot see (a damaged page) surfaces
// as an error of the query that reads it; Check (mcpx artifacts fsck) runs
// SQLite's integrity check and Repair rebuilds. No blob is ever deleted by
// recovery. Damage is logged at warn level with counts.
//
// # Adopting a journal store
//
// A store written by a version of mcpx that kept its index as a journal of
// JSON lines (index.jsonl) is adopted by its first read-write open: the
// journal is imported into a new index in one transaction, blobs it does
// not mention are re-indexed, and it is renamed index.jsonl.imported and
// kept. The marker goes to version 2, which older versions refuse to open
// rather than misread. A read-only open of such a store reads the journal
// into a private in-memory index instead.
//
// # Read-only
//
// Config.ReadOnly opens a store for reading only: no marker, lock, index or
// temp file is created or changed, so a store on a read-only mount or in a
// folder this user cannot write can be listed and read. It reads a missing
// folder as an empty store. Put and Delete return ErrReadOnly. While no
// other process has the index open (no index.db-wal) it reads the index
// immutable, so SQLite makes no -wal or -shm file; once a writer appears
// it reopens it read-only through the WAL.
//
// # Platforms
//
// Locks are flock(2) locks and blobs move with linkat(2) and renameat(2):
// fsstore works on Linux, macOS and the BSDs, on local file systems (SQLite
// in WAL mode needs shared memory, which network file systems do not
// give). On other systems (Windows among them) Open fails with
// ErrUnsupportedPlatform.
package fsstore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/internal/catalog"
	"github.com/mcpx-dev/mcpx/store/internal/putio"
)

// DefaultPageSize is the number of refs List returns per page by default.
const DefaultPageSize = 100

// DefaultBusyTimeout is how long a write waits for another process's write
// transaction to end before it fails.
const DefaultBusyTimeout = 30 * time.Second

// maxIndexConns bounds the index connections one process keeps: readers
// run in parallel up to this many (writes are one at a time anyway).
const maxIndexConns = 8

// Sentinel errors, wrapped with %w: match them with errors.Is.
var (
	// ErrNotAStore is returned by Open for a folder that is neither empty
	// nor marked as a store, or whose tmp/ or blobs/ is not the store's
	// own folder. Nothing in the folder was changed.
	ErrNotAStore = errors.New("fsstore: not an artifact store folder")
	// ErrReadOnly is returned by Put and Delete on a store opened with
	// Config.ReadOnly.
	ErrReadOnly = errors.New("fsstore: store is open read-only")
	// ErrBusy is returned by Repair when another process has the store
	// open.
	ErrBusy = errors.New("fsstore: store is in use by another process")
	// ErrIndexDamaged is returned when the index is damaged and this
	// process may not rebuild it (another process has the store open, or
	// it is read-only): run 'mcpx artifacts fsck --repair'.
	ErrIndexDamaged = errors.New("fsstore: the index is damaged: run 'mcpx artifacts fsck --repair'")
	// ErrUnsupportedPlatform is returned by Open on systems without
	// flock(2); it wraps errors.ErrUnsupported.
	ErrUnsupportedPlatform = fmt.Errorf("fsstore: file locks are not supported on %s: %w", runtime.GOOS, errors.ErrUnsupported)
)

// Names inside the store's folder.
const (
	journalName         = "index.jsonl"
	journalImportedName = "index.jsonl.imported"
	blobsName           = "blobs"
	tmpName             = "tmp"
	openLockName        = "open.lock"
	writeLockName       = "write.lock" // made by version 1 stores; unused now
	lostFoundName       = "lost+found"
)

// Config configures a Store. The zero value means the defaults.
//
//	cfg := fsstore.Config{Logger: log.Named("store"), ReadOnly: true}
type Config struct {
	// PageSize is how many refs List returns per page; n < 1 means the
	// default. Defaults to DefaultPageSize.
	PageSize int
	// IDPrefixLen is how many sha256 hex characters a new id starts with;
	// n < 1 means the default. Ids already stored keep their length.
	// Defaults to store.DefaultIDPrefixLen.
	IDPrefixLen int
	// BusyTimeout is how long a write waits while another process writes
	// to the index; d <= 0 means the default. Defaults to
	// DefaultBusyTimeout.
	BusyTimeout time.Duration
	// Logger receives what recovery reports: re-indexed blobs, removed
	// temp files, a damaged index, at warn or info level. Defaults to
	// hclog.NewNullLogger().
	Logger hclog.Logger
	// ReadOnly opens the store for reading only (see the package doc):
	// nothing in the folder is created or changed, and Put and Delete
	// return ErrReadOnly. Defaults to false.
	ReadOnly bool
	// SearchCandidates bounds the matching lines Search ranks: the
	// newest this many in scope (ranking costs per line, and a common
	// word matches most). Defaults to DefaultSearchCandidates.
	SearchCandidates int
}

// Store is an artifact store on a folder. It is safe for concurrent use, by
// goroutines and by other processes that open the same folder.
type Store struct {
	candidates                  int // Config.SearchCandidates, default applied
	dir, indexPath, journalPath string
	pageSize, idPrefixLen       int
	busyTimeout                 time.Duration
	log                         hclog.Logger
	readOnly                    bool

	// repair (set by Repair) makes open fail with ErrBusy unless this
	// process has the folder to itself, and rebuild or reconcile the
	// index; corrupt lists the blobs Check found rotten.
	repair        bool
	repairRebuild bool
	corrupt       []string
	// exclusive is set while open holds open.lock exclusively.
	exclusive bool

	// hook, when set (by tests), is called at named points of Put and
	// Delete to simulate a kill there.
	hook func(point string)

	// Directory handles opened at Open (nil on a read-only store of a
	// missing folder).
	blobs, tmp       *os.Root
	blobsDir, tmpDir *os.File
	openLock         *os.File

	mu     sync.Mutex // guards closed, db, prefetching
	closed bool
	db     *sql.DB
	// prefetching is set once a put started opening the index ahead of
	// its commit (see Put).
	prefetching bool
	// dbImmutable is set when db reads the index immutable (see
	// openIndexReadOnly).
	dbImmutable bool
	// oldIndex is the schema version of an index older than this mcpx's
	// that a read-only store reads as it is (see refColumnsOf); 0 for a
	// current one.
	oldIndex atomic.Int32
	// wmu lets one write transaction of this process at a time ask
	// SQLite for the write lock, the search indexer's after the others
	// (see writeLock).
	wmu writeLock

	// Reads waiting to be written as last_access_at (see touch): tmu
	// guards touched and touchPending; fmu orders flushes (Close waits for
	// the timer's).
	// Text parts waiting for the search index (indexer.go): imu guards
	// them; idone is open while the indexer runs; iwaiters counts the
	// Search and Close calls waiting for it.
	imu           sync.Mutex
	ipending      []pendingText
	ipendingBytes int
	idone         chan struct{}
	iwaiters      int

	tmu          sync.Mutex
	touched      map[int64]int64
	touchPending bool
	fmu          sync.Mutex
}

var (
	_ store.Store     = (*Store)(nil)
	_ store.Annotator = (*Store)(nil)
)

// refColumns is the select list of scanRef for the open index.
func (s *Store) refColumns() string { return refColumnsOf(s.version()) }

// version is the schema version of the open index.
func (s *Store) version() int {
	if v := s.oldIndex.Load(); v != 0 {
		return int(v)
	}
	return schemaVersion
}

// Open opens (creating it when missing, mode 0700) the store in dir. When
// no other process has the folder open it settles what an earlier kill
// left in tmp/ first (see the package doc). The index is opened on first
// use, not here.
//
// # Errors
//
// Errors name the folder and wrap the cause: an fs.PathError for a folder
// that cannot be created or written (errors.Is(err, fs.ErrPermission),
// syscall.ENOTDIR for a path under a regular file), ctx.Err() when ctx ends
// first.
func Open(ctx context.Context, dir string, cfg Config) (*Store, error) {
	s, err := newStore(dir, cfg)
	if err != nil {
		return nil, err
	}
	if err := s.open(ctx); err != nil {
		s.closeFiles()
		return nil, fmt.Errorf("fsstore: dir[%s]: %w", s.dir, err)
	}
	return s, nil
}

// newStore returns a Store for dir, not yet opened.
func newStore(dir string, cfg Config) (*Store, error) {
	if !locksSupported {
		return nil, fmt.Errorf("fsstore: dir[%s]: %w", dir, ErrUnsupportedPlatform)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("fsstore: dir[%s]: %w", dir, err)
	}
	s := &Store{
		dir:         abs,
		indexPath:   filepath.Join(abs, indexName),
		journalPath: filepath.Join(abs, journalName),
		pageSize:    cfg.PageSize,
		idPrefixLen: cfg.IDPrefixLen,
		busyTimeout: cfg.BusyTimeout,
		log:         cfg.Logger,
		readOnly:    cfg.ReadOnly,
		candidates:  cfg.SearchCandidates,
	}
	if s.candidates < 1 {
		s.candidates = DefaultSearchCandidates
	}
	if s.pageSize < 1 {
		s.pageSize = DefaultPageSize
	}
	if s.idPrefixLen < 1 {
		s.idPrefixLen = store.DefaultIDPrefixLen
	}
	if s.busyTimeout <= 0 {
		s.busyTimeout = DefaultBusyTimeout
	}
	if s.log == nil {
		s.log = hclog.NewNullLogger()
	}
	return s, nil
}

func (s *Store) open(ctx context.Context) error {
	if s.readOnly {
		return s.openReadOnly(ctx)
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	if _, err := claimFolder(s.dir, true); err != nil {
		return err
	}
	for _, name := range []string{blobsName, tmpName, lostFoundName} {
		if err := checkOwnFolder(s.dir, name); err != nil {
			return err
		}
		if name == lostFoundName {
			continue // made when something is put there
		}
		if err := os.Mkdir(filepath.Join(s.dir, name), 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	if err := s.openDirs(); err != nil {
		return err
	}
	var err error
	if s.openLock, err = os.OpenFile(filepath.Join(s.dir, openLockName), os.O_RDWR|os.O_CREATE, 0o600); err != nil {
		return err
	}
	alone, err := tryFlock(s.openLock, true)
	if err != nil {
		return err
	}
	if s.repair && !alone {
		return ErrBusy
	}
	if alone {
		s.exclusive = true
		defer func() { s.exclusive = false }()
		if err := s.recoverTmp(ctx); err != nil {
			return err
		}
		if s.repair {
			if err := s.repairIndex(ctx); err != nil {
				return err
			}
		}
	}
	// Convert to (or wait for) a shared hold for the store's lifetime.
	if err := flock(ctx, s.openLock, false); err != nil {
		return err
	}
	if fi, err := statIfExists(s.journalPath); err != nil {
		return err
	} else if fi != nil {
		// A version 1 store: adopt its journal now (see the package doc).
		if _, err := s.index(ctx); err != nil {
			return err
		}
	}
	return nil
}

// openDirs opens blobs/ and tmp/ as directory handles; checkOwnFolder has
// made sure neither is a link.
func (s *Store) openDirs() error {
	var err error
	if s.blobs, err = os.OpenRoot(filepath.Join(s.dir, blobsName)); err != nil {
		return err
	}
	if s.blobsDir, err = s.blobs.Open("."); err != nil {
		return err
	}
	if s.readOnly {
		return nil
	}
	if s.tmp, err = os.OpenRoot(filepath.Join(s.dir, tmpName)); err != nil {
		return err
	}
	s.tmpDir, err = s.tmp.Open(".")
	return err
}

// openReadOnly opens the store without writing anything: a missing folder
// reads as an empty store, a missing lock file is done without.
func (s *Store) openReadOnly(ctx context.Context) error {
	exists, err := claimFolder(s.dir, false)
	if err != nil || !exists {
		return err
	}
	if err := checkOwnFolder(s.dir, blobsName); err != nil {
		return err
	}
	if s.openLock, err = openIfPresent(filepath.Join(s.dir, openLockName)); err != nil {
		return err
	}
	if s.openLock != nil {
		// Shared, like every open store: waits while another process
		// recovers, and keeps recovery from starting while this is open.
		if err := flock(ctx, s.openLock, false); err != nil {
			return err
		}
	}
	if err := s.openDirs(); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			s.blobs, s.blobsDir = nil, nil // a folder with a marker only
			return nil
		}
		return err
	}
	// Warn now, cheaply, about what only a read-write open or fsck mends.
	f, err := openIfPresent(s.indexPath)
	if err != nil {
		return err
	}
	if f != nil {
		_, herr := checkIndexHeader(f)
		f.Close()
		if herr != nil {
			s.log.Warn("the index is damaged; a read-only open cannot rebuild it: run 'mcpx artifacts fsck'", "index", s.indexPath, "error", herr)
		}
		return nil
	}
	if fi, _ := statIfExists(s.journalPath); fi == nil && s.hasBlobs() {
		s.log.Warn("the store has blobs but no index; a read-only open lists none of them: run 'mcpx artifacts fsck'", "dir", s.dir)
	}
	return nil
}

// hasBlobs reports whether blobs/ holds anything.
func (s *Store) hasBlobs() bool {
	if s.blobs == nil {
		return false
	}
	d, err := s.blobs.Open(".")
	if err != nil {
		return false
	}
	defer d.Close()
	names, _ := d.Readdirnames(1)
	return len(names) > 0
}

// openIfPresent opens path for reading; nil when it is missing or this
// user may not read it.
func openIfPresent(path string) (*os.File, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
		return nil, nil
	}
	return f, err
}

// Dir returns the store's folder (an absolute path).
func (s *Store) Dir() string { return s.dir }

// blobName is the blob's path relative to blobs/.
func blobName(sha256hex string) string {
	return sha256hex[:2] + "/" + sha256hex
}

func (s *Store) at(point string) {
	if s.hook != nil {
		s.hook(point)
	}
}

// index returns the index, opening it on first use (see openIndex). A
// read-only store of a folder without an index returns nil, nil.
func (s *Store) index(ctx context.Context) (*sql.DB, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, store.ErrClosed
	}
	if s.db != nil && s.dbImmutable {
		if wal, _ := statIfExists(s.indexPath + "-wal"); wal != nil {
			// A writer has the index open now: read its WAL too.
			s.db.Close()
			s.db = nil
		}
	}
	if s.db != nil {
		return s.db, nil
	}
	db, err := s.openIndex(ctx)
	if err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	s.db = db
	return db, nil
}

// tempName returns a new name for a temp file: prefix and random digits.
func tempName(prefix string) string {
	var b [8]byte
	rand.Read(b[:])
	return prefix + strconv.FormatUint(binary.LittleEndian.Uint64(b[:])>>1, 10)
}

// Put streams r into a temp file while hashing it, then commits it (see the
// package doc). The returned ref carries o.Scope and when the bytes were
// first put under it; an artifact put again keeps its id and first MIME
// type, and is listed under the name and source of the latest put under
// each scope.
func (s *Store) Put(ctx context.Context, r io.Reader, o store.PutOptions) (store.Ref, error) {
	ns := store.SanitizeNamespace(o.Namespace)
	s.wmu.enter()
	defer s.wmu.leave()
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return store.Ref{}, fmt.Errorf("fsstore: put[%s]: %w", ns, store.ErrClosed)
	}
	if s.readOnly {
		return store.Ref{}, fmt.Errorf("fsstore: put[%s]: %w", ns, ErrReadOnly)
	}
	if err := ctx.Err(); err != nil {
		return store.Ref{}, fmt.Errorf("fsstore: put[%s]: %w", ns, err)
	}
	s.mu.Lock()
	if s.db == nil && !s.prefetching {
		// The first put of a process opens the index beside the copy and
		// its fsync rather than after them: a CLI run storing one large
		// artifact waits for the slower of the two, not their sum. An
		// error is the commit's to report, when it opens the index itself.
		s.prefetching = true
		go s.index(context.WithoutCancel(ctx))
	}
	s.mu.Unlock()
	name := tempName("put-")
	tmp, err := s.tmp.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return store.Ref{}, fmt.Errorf("fsstore: put[%s]: %w", ns, err)
	}
	defer func() {
		tmp.Close()
		if err := s.tmp.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.log.Warn("could not remove temp file", "file", filepath.Join(s.dir, tmpName, name), "error", err)
		}
	}()
	n, sum, err := putio.Copy(ctx, tmp, r, o.MaxBytes)
	if err != nil {
		return store.Ref{}, fmt.Errorf("fsstore: put[%s]: %w", ns, err)
	}
	if err := tmp.Sync(); err != nil {
		return store.Ref{}, fmt.Errorf("fsstore: put[%s]: %w", ns, err)
	}
	if err := tmp.Close(); err != nil {
		return store.Ref{}, fmt.Errorf("fsstore: put[%s]: %w", ns, err)
	}
	s.at("put:synced")
	ref, err := s.commit(ctx, name, n, sum, ns, o)
	if err != nil {
		return store.Ref{}, fmt.Errorf("fsstore: put[%s] sha256[%s]: %w", ns, sum, err)
	}
	return ref, nil
}

// commit records the synced temp file tmpName as an artifact.
func (s *Store) commit(ctx context.Context, tmpName string, n int64, sum, ns string, o store.PutOptions) (store.Ref, error) {
	db, err := s.index(ctx)
	if err != nil {
		return store.Ref{}, err
	}
	linked, err := s.placeBlob(tmpName, sum)
	if err != nil {
		return store.Ref{}, err
	}
	s.at("put:linked")
	ref, err := s.record(ctx, db, tmpName, n, sum, ns, o)
	if err != nil {
		if linked {
			s.dropUnheldBlob(db, sum)
		}
		return store.Ref{}, err
	}
	s.at("put:committed")
	return ref, nil
}

// record is Put's write transaction.
func (s *Store) record(ctx context.Context, db *sql.DB, tmpName string, n int64, sum, ns string, o store.PutOptions) (store.Ref, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return store.Ref{}, err
	}
	defer tx.Rollback()
	seq, ref, err := scanRef(tx.QueryRowContext(ctx, `SELECT `+s.refColumns()+`, `+scopeColumns+`
		FROM artifacts a JOIN scopes s ON s.seq = a.seq
		WHERE a.namespace = ? AND a.sha256 = ? ORDER BY s.ord LIMIT 1`, ns, sum))
	switch {
	case err == nil:
		if !o.Quota.IsZero() {
			if err := checkQuota(ctx, tx, o.Quota, o.Scope, seq, ref.SizeBytes); err != nil {
				return store.Ref{}, err
			}
		}
		// Put again is used again (LRU).
		now := time.Now().UnixNano()
		if err := addScope(ctx, tx, seq, o.Scope, now, o.Filename, o.Source); err != nil {
			return store.Ref{}, err
		}
		var created int64
		if err := tx.QueryRowContext(ctx, `SELECT created_at, filename, source_server, source_tool, source_path, source_layer FROM scopes
			WHERE seq = ? AND tenant_id = ? AND user_id = ? AND session_id = ? AND trace_id = ?`,
			seq, o.Scope.TenantID, o.Scope.UserID, o.Scope.SessionID, o.Scope.TraceID).Scan(&created,
			&ref.Filename, &ref.Source.Server, &ref.Source.Tool, &ref.Source.Path, &ref.Source.Layer); err != nil {
			return store.Ref{}, err
		}
		ref.Created = time.Unix(0, created).UTC()
		if _, err := tx.ExecContext(ctx, `UPDATE artifacts SET last_access_at = ? WHERE seq = ? AND last_access_at < ?`,
			now, seq, now); err != nil {
			return store.Ref{}, err
		}
		ref.Scope = o.Scope
		ref.AlreadyStored = true
	case errors.Is(err, sql.ErrNoRows):
		if !o.Quota.IsZero() {
			if err := checkQuota(ctx, tx, o.Quota, o.Scope, 0, n); err != nil {
				return store.Ref{}, err
			}
		}
		id, err := allocateID(ctx, tx, ns, sum, s.idPrefixLen)
		if err != nil {
			return store.Ref{}, err
		}
		ref = store.NewRef(id, sum, n, o)
		if _, err := insertArtifact(ctx, tx, ns, ref); err != nil {
			return store.Ref{}, fmt.Errorf("artifact[%s]: %w", id, err)
		}
	default:
		return store.Ref{}, err
	}
	// A delete in another process may have taken the blob between the
	// link and this transaction; the temp file still has the bytes.
	if _, err := s.blobs.Lstat(blobName(sum)); errors.Is(err, fs.ErrNotExist) {
		if _, err := s.placeBlob(tmpName, sum); err != nil {
			return store.Ref{}, err
		}
	} else if err != nil {
		return store.Ref{}, err
	}
	if err := s.touchesIn(ctx, tx); err != nil {
		s.log.Warn("could not record artifact reads", "error", err)
	}
	if err := tx.Commit(); err != nil {
		return store.Ref{}, err
	}
	return ref, nil
}

// placeBlob links the temp file tmpName to the blob's name and makes the
// link durable. It reports false when the blob was there already.
func (s *Store) placeBlob(tmpName, sum string) (bool, error) {
	shard := sum[:2]
	created := false
	switch err := s.blobs.Mkdir(shard, 0o700); {
	case err == nil:
		created = true
	case !errors.Is(err, fs.ErrExist):
		return false, err
	}
	fi, err := s.blobs.Lstat(shard)
	if err != nil {
		return false, err
	}
	if !fi.IsDir() {
		return false, fmt.Errorf("blobs/%s is not a folder (mode %v): %w", shard, fi.Mode(), ErrNotAStore)
	}
	d, err := s.blobs.Open(shard)
	if err != nil {
		return false, err
	}
	defer d.Close()
	// A new shard's entry in blobs/ is synced after the link, not before:
	// both are durable before the put commits either way, and where the
	// file system has one journal (ext4, xfs) the shard's sync commits
	// the folder's creation too, so this one finds nothing left to write.
	syncShard := func() error {
		if !created {
			return nil
		}
		return s.blobsDir.Sync()
	}
	err = linkAt(s.tmpDir, tmpName, d, sum)
	if errors.Is(err, fs.ErrExist) {
		// Another process linked the same bytes into the shard this put
		// made: the shard is still this put's to sync.
		return false, syncShard()
	}
	if err != nil {
		return false, fmt.Errorf("link blob %s: %w", sum, err)
	}
	if err := d.Sync(); err != nil {
		return false, err
	}
	return true, syncShard()
}

// dropUnheldBlob removes the blob sum that a failed put linked, unless an
// artifact holds it (another put of the same bytes may have committed).
func (s *Store) dropUnheldBlob(db *sql.DB, sum string) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		s.log.Warn("could not remove the blob of a failed put", "sha256", sum, "error", err)
		return
	}
	defer tx.Rollback()
	if held, err := blobHeld(ctx, tx, sum); err != nil || held {
		return
	}
	if err := s.blobs.Remove(blobName(sum)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.log.Warn("could not remove the blob of a failed put", "sha256", sum, "error", err)
	}
}

// Get returns a reader of the artifact's bytes, or of rng of them, reading
// the blob file in place.
func (s *Store) Get(ctx context.Context, id string, rng *store.Range) (io.ReadCloser, store.Ref, error) {
	seq, ref, err := s.statSeq(ctx, id)
	if err != nil {
		return nil, store.Ref{}, err
	}
	off, n, err := catalog.Bounds(rng, ref.SizeBytes)
	if err != nil {
		return nil, store.Ref{}, fmt.Errorf("fsstore: artifact[%s]: %w", id, err)
	}
	f, err := s.blobs.Open(blobName(ref.SHA256))
	if errors.Is(err, fs.ErrNotExist) {
		// Deleted by another process since the lookup.
		return nil, store.Ref{}, fmt.Errorf("fsstore: artifact[%s]: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, store.Ref{}, fmt.Errorf("fsstore: artifact[%s]: %w", id, err)
	}
	fi, err := f.Stat()
	if err == nil && fi.Size() != ref.SizeBytes {
		err = fmt.Errorf("blob %s has %d bytes, the index says %d", ref.SHA256, fi.Size(), ref.SizeBytes)
	}
	if err != nil {
		f.Close()
		return nil, store.Ref{}, fmt.Errorf("fsstore: artifact[%s]: %w", id, err)
	}
	// The open file stays readable to its end even if gc removes the
	// blob now (Unix keeps an unlinked file's bytes while it is open).
	s.touch(seq)
	return &blobReader{SectionReader: io.NewSectionReader(f, off, n), f: f}, ref, nil
}

// blobReader reads a section of an open blob file.
type blobReader struct {
	*io.SectionReader
	f *os.File
}

// Close closes the blob file.
func (b *blobReader) Close() error { return b.f.Close() }

// Stat returns the artifact's ref.
func (s *Store) Stat(ctx context.Context, id string) (store.Ref, error) {
	return s.stat(ctx, id)
}

// readIndex checks ctx and id and returns the index for a lookup of id;
// nil when a read-only store has none (nothing is found).
func (s *Store) readIndex(ctx context.Context, id string) (*sql.DB, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("fsstore: artifact[%s]: %w", store.QuoteID(id), err)
	}
	if !store.ValidID(id) {
		return nil, fmt.Errorf("fsstore: artifact[%s]: %w", store.QuoteID(id), store.ErrInvalidID)
	}
	db, err := s.index(ctx)
	if err != nil {
		return nil, fmt.Errorf("fsstore: artifact[%s]: %w", id, err)
	}
	if db == nil {
		return nil, fmt.Errorf("fsstore: artifact[%s]: %w", id, store.ErrNotFound)
	}
	return db, nil
}

func (s *Store) stat(ctx context.Context, id string) (store.Ref, error) {
	_, ref, err := s.statSeq(ctx, id)
	return ref, err
}

func (s *Store) statSeq(ctx context.Context, id string) (int64, store.Ref, error) {
	db, err := s.readIndex(ctx, id)
	if err != nil {
		return 0, store.Ref{}, err
	}
	seq, ref, err := scanRef(db.QueryRowContext(ctx, `SELECT `+s.refColumns()+`, `+scopeColumns+`
		FROM artifacts a JOIN scopes s ON s.seq = a.seq WHERE a.id = ? ORDER BY s.ord LIMIT 1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return 0, store.Ref{}, fmt.Errorf("fsstore: artifact[%s]: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return 0, store.Ref{}, fmt.Errorf("fsstore: artifact[%s]: %w", id, s.queryErr(err))
	}
	return seq, ref, nil
}

// queryErr adds to a query's error what to do when the index is damaged.
func (s *Store) queryErr(err error) error {
	if isCorrupt(err) {
		s.log.Warn("the index is damaged: run 'mcpx artifacts fsck --repair'", "index", s.indexPath, "error", err)
		return fmt.Errorf("%w: %w", ErrIndexDamaged, err)
	}
	return err
}

// InScope reports whether the artifact was put under a scope that scope
// contains.
func (s *Store) InScope(ctx context.Context, id string, scope store.Scope) (bool, error) {
	db, err := s.readIndex(ctx, id)
	if err != nil {
		return false, err
	}
	cond, args := scopeFilter(scope)
	var in bool
	err = db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM scopes s WHERE s.seq = a.seq`+cond+`)
		FROM artifacts a WHERE a.id = ?`, append(args, id)...).Scan(&in)
	if errors.Is(err, sql.ErrNoRows) {
		return false, fmt.Errorf("fsstore: artifact[%s]: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return false, fmt.Errorf("fsstore: artifact[%s]: %w", id, s.queryErr(err))
	}
	return in, nil
}

// Owned returns the artifact as owner holds it (see store.Store.Owned):
// one indexed lookup of its scope rows.
func (s *Store) Owned(ctx context.Context, id string, owner store.Owner) ([]store.Ref, error) {
	db, err := s.readIndex(ctx, id)
	if err != nil {
		return nil, err
	}
	rows, err := db.QueryContext(ctx, `SELECT `+s.refColumns()+`, `+scopeColumns+`
		FROM artifacts a JOIN scopes s ON s.seq = a.seq
		WHERE a.id = ? AND s.tenant_id = ? AND s.user_id = ? ORDER BY s.ord`, id, owner.TenantID, owner.UserID)
	if err != nil {
		return nil, fmt.Errorf("fsstore: artifact[%s]: %w", id, s.queryErr(err))
	}
	defer rows.Close()
	var refs []store.Ref
	for rows.Next() {
		_, ref, err := scanRef(rows)
		if err != nil {
			return nil, fmt.Errorf("fsstore: artifact[%s]: %w", id, s.queryErr(err))
		}
		refs = append(refs, ref)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("fsstore: artifact[%s]: %w", id, s.queryErr(err))
	}
	if len(refs) == 0 {
		if ok, err := s.Exists(ctx, id); err != nil || !ok {
			if err == nil {
				err = fmt.Errorf("fsstore: artifact[%s]: %w", id, store.ErrNotFound)
			}
			return nil, err
		}
	}
	return refs, nil
}

// Exists reports whether the artifact is stored.
func (s *Store) Exists(ctx context.Context, id string) (bool, error) {
	_, err := s.stat(ctx, id)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, store.ErrNotFound):
		return false, nil
	}
	return false, err
}

// Delete removes the artifact, and its blob when no other id holds it.
func (s *Store) Delete(ctx context.Context, id string) error {
	if s.readOnly {
		return fmt.Errorf("fsstore: artifact[%s]: %w", store.QuoteID(id), ErrReadOnly)
	}
	db, err := s.readIndex(ctx, id)
	if err != nil {
		return err
	}
	if err := s.delete(ctx, db, id); err != nil {
		return fmt.Errorf("fsstore: artifact[%s]: %w", id, err)
	}
	return nil
}

func (s *Store) delete(ctx context.Context, db *sql.DB, id string) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var seq int64
	var sum string
	err = tx.QueryRowContext(ctx, `SELECT seq, sha256 FROM artifacts WHERE id = ?`, id).Scan(&seq, &sum)
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrNotFound
	}
	if err != nil {
		return s.queryErr(err)
	}
	parked, err := s.removeInTx(ctx, tx, seq, sum)
	if err != nil {
		return err
	}
	s.at("delete:parked")
	if err := tx.Commit(); err != nil {
		if parked != "" {
			if uerr := s.unparkBlob(parked, sum); uerr != nil {
				s.log.Warn("could not put back the blob of a failed delete", "file", parked, "error", uerr)
			}
		}
		return err
	}
	s.at("delete:committed")
	if parked != "" {
		if err := s.tmp.Remove(parked); err != nil && !errors.Is(err, fs.ErrNotExist) {
			// Removed by the next recovering Open; the delete is done.
			s.log.Warn("could not remove blob", "artifact", id, "error", err)
		}
	}
	return nil
}

// removeInTx deletes the artifact seq (whose blob is sum) in tx, and parks
// its blob in tmp/ when no other artifact holds it; it returns the parked
// name ("" when none). The caller commits, then removes the parked blob,
// or puts it back (unparkBlob) when the commit fails.
func (s *Store) removeInTx(ctx context.Context, tx *sql.Tx, seq int64, sum string) (string, error) {
	if _, err := tx.ExecContext(ctx, `DELETE FROM scopes WHERE seq = ?`, seq); err != nil {
		return "", err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM artifacts WHERE seq = ?`, seq); err != nil {
		return "", err
	}
	held, err := blobHeld(ctx, tx, sum)
	if err != nil || held {
		return "", err
	}
	// Parked, not removed, until the commit: a kill before it leaves the
	// artifact recorded and its blob in tmp/, put back by recovery.
	return s.parkBlob(sum, tempName("del-"+sum+"-"))
}

// parkBlob moves the blob sum to tmp/name; "" when there was no blob.
func (s *Store) parkBlob(sum, name string) (string, error) {
	d, err := s.blobs.Open(sum[:2])
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer d.Close()
	err = renameAt(d, sum, s.tmpDir, name)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	return name, err
}

// unparkBlob moves tmp/name back to the blob sum.
func (s *Store) unparkBlob(name, sum string) error {
	d, err := s.blobs.Open(sum[:2])
	if err != nil {
		return err
	}
	defer d.Close()
	if err := renameAt(s.tmpDir, name, d, sum); err != nil {
		return err
	}
	return d.Sync()
}

// List returns one page of the refs whose scope scope contains, oldest
// first. An artifact put under several scopes is listed once, with the first
// of its scopes that scope contains.
func (s *Store) List(ctx context.Context, scope store.Scope, cursor string) ([]store.Ref, string, error) {
	return s.ListOrder(ctx, scope, cursor, store.OldestFirst)
}

// ListOrder is List in the given order: a cursor of one order is invalid
// in the other. It reads one page through an index whatever the store
// holds.
func (s *Store) ListOrder(ctx context.Context, scope store.Scope, cursor string, order store.Order) ([]store.Ref, string, error) {
	refs, _, next, err := s.list(ctx, scope, cursor, order, false)
	return refs, next, err
}

// ListAccess is ListOrder with each ref's last access (its last read, or
// its creation), for mcpx artifacts ls (see store.AccessLister).
func (s *Store) ListAccess(ctx context.Context, scope store.Scope, cursor string, order store.Order) ([]store.Ref, []time.Time, string, error) {
	return s.list(ctx, scope, cursor, order, true)
}

func (s *Store) list(ctx context.Context, scope store.Scope, cursor string, order store.Order, withAccess bool) ([]store.Ref, []time.Time, string, error) {
	refs, access, next, err := s.listPage(ctx, scope, cursor, order, withAccess)
	if err != nil {
		return nil, nil, "", fmt.Errorf("fsstore: list: %w", err)
	}
	return refs, access, next, nil
}

func (s *Store) listPage(ctx context.Context, scope store.Scope, cursor string, order store.Order, withAccess bool) ([]store.Ref, []time.Time, string, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, "", err
	}
	after, err := decodeCursor(cursor, order)
	if err != nil {
		return nil, nil, "", err
	}
	db, err := s.index(ctx)
	if err != nil {
		return nil, nil, "", err
	}
	if db == nil {
		return nil, nil, "", nil
	}
	cond, args := scopeFilter(scope)
	q := `SELECT ` + s.refColumns() + `, ` + scopeColumns + `, MIN(s.ord), a.last_access_at
		FROM scopes s JOIN artifacts a ON a.seq = s.seq WHERE `
	if order == store.NewestFirst {
		if after == 0 {
			after = 1<<63 - 1
		}
		q += `s.seq < ?` + cond + ` GROUP BY s.seq ORDER BY s.seq DESC LIMIT ?`
	} else {
		q += `s.seq > ?` + cond + ` GROUP BY s.seq ORDER BY s.seq LIMIT ?`
	}
	rows, err := db.QueryContext(ctx, q, append(append([]any{after}, args...), s.pageSize+1)...)
	if err != nil {
		return nil, nil, "", s.queryErr(err)
	}
	defer rows.Close()
	var refs []store.Ref
	var access []time.Time
	var last int64
	next := ""
	for rows.Next() {
		if len(refs) == s.pageSize {
			next = encodeCursor(last, order)
			break
		}
		var ord, la int64
		seq, ref, err := scanRef(rows, &ord, &la)
		if err != nil {
			return nil, nil, "", s.queryErr(err)
		}
		refs = append(refs, ref)
		if withAccess {
			access = append(access, time.Unix(0, la).UTC())
		}
		last = seq
	}
	if err := rows.Err(); err != nil {
		return nil, nil, "", s.queryErr(err)
	}
	return refs, access, next, nil
}

// encodeCursor returns the cursor that resumes after seq: "s<base36>"
// oldest first (the cursors of the journal store), "r<base36>" newest first.
func encodeCursor(seq int64, order store.Order) string {
	if order == store.NewestFirst {
		return "r" + strconv.FormatInt(seq, 36)
	}
	return catalog.EncodeCursor(uint64(seq))
}

func decodeCursor(cursor string, order store.Order) (int64, error) {
	if order != store.NewestFirst {
		seq, err := catalog.DecodeCursor(cursor)
		if err != nil || seq > 1<<63-1 {
			return 0, fmt.Errorf("cursor[%s]: %w", cursor, store.ErrInvalidCursor)
		}
		return int64(seq), nil
	}
	if cursor == "" {
		return 0, nil
	}
	seq, err := strconv.ParseInt(cursor[min(1, len(cursor)):], 36, 64)
	if cursor[0] != 'r' || err != nil || seq <= 0 || encodeCursor(seq, order) != cursor {
		return 0, fmt.Errorf("cursor[%s]: %w", cursor, store.ErrInvalidCursor)
	}
	return seq, nil
}

// Close releases the store's index, files and locks. Readers returned by
// Get stay readable. Close is idempotent and ignores ctx.
func (s *Store) Close(context.Context) error {
	// Text still to index and reads not yet written go now, while the
	// index is open.
	s.waitIndexed(context.Background())
	s.flushTouches(context.Background(), false)
	s.fmu.Lock()
	defer s.fmu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if err := s.closeFiles(); err != nil {
		return fmt.Errorf("fsstore: dir[%s]: close: %w", s.dir, err)
	}
	return nil
}

func (s *Store) closeFiles() error {
	var errs []error
	if s.db != nil {
		errs = append(errs, s.db.Close())
		s.db = nil
	}
	for _, f := range []**os.File{&s.blobsDir, &s.tmpDir, &s.openLock} {
		if *f != nil {
			errs = append(errs, (*f).Close())
			*f = nil
		}
	}
	for _, r := range []**os.Root{&s.blobs, &s.tmp} {
		if *r != nil {
			errs = append(errs, (*r).Close())
			*r = nil
		}
	}
	return errors.Join(errs...)
}

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
// SQLite database (damaged or truncated; a file a kill left shorter in
// the middle of a checkpoint is whole when its WAL holds the pages it
// lacks, and SQLite reads them there), is moved to lost+found/ and
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
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/hashicorp/go-hclog"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/mcpx-dev/mcpx/store"
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
	// Text reads the search text of an artifact annotated with
	// AnnotateLater from its bytes, when the indexer or a search indexes
	// it (see indexer.go); it runs beside the calls, within its own
	// limits. Defaults to nil: AnnotateLater returns
	// store.ErrNoTextReader, and text left for a reader by another
	// process stays pending.
	Text store.TextReader
}

// Store is an artifact store on a folder. It is safe for concurrent use, by
// goroutines and by other processes that open the same folder.
//
// It is the front of parts that each own one concern, built by Open and
// given the siblings they use: the blob folders, open.lock, the index (its
// pool, write lock and opening), recovery, the reads not yet recorded,
// the search indexer, and the reader, writer, searcher and collector
// over them.
type Store struct {
	dir      string
	readOnly bool
	log      hclog.Logger
	lock     *openLock
	files    *blobFolders
	idx      *index
	rebuild  *recovery
	reads    *accessLog
	text     *indexer
	reader   *reader
	writer   *writer
	searcher *searcher
	gc       *collector
	// hook's fn, when a test sets it, is called at named points of Put,
	// Delete, Collect and the indexer to simulate a kill there.
	hook *hook
}

var (
	_ store.Store         = (*Store)(nil)
	_ store.OrderedLister = (*Store)(nil)
	_ store.Annotator     = (*Store)(nil)
	_ store.LateAnnotator = (*Store)(nil)
	_ store.Searcher      = (*Store)(nil)
	_ store.Collector     = (*Store)(nil)
	_ store.AccessLister  = (*Store)(nil)
)

// hook lets a test stop the process at a named point of a write (the
// crash tests kill it there). The zero value does nothing.
type hook struct{ fn func(point string) }

func (h *hook) at(point string) {
	if h.fn != nil {
		h.fn(point)
	}
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
	if err := s.open(ctx, openMode{}); err != nil {
		s.closeFiles()
		return nil, fmt.Errorf("fsstore: dir[%s]: %w", s.dir, err)
	}
	return s, nil
}

// newStore returns a Store for dir, not yet opened: its parts, each given
// the defaults of cfg and the siblings it uses.
func newStore(dir string, cfg Config) (*Store, error) {
	if !locksSupported {
		return nil, fmt.Errorf("fsstore: dir[%s]: %w", dir, ErrUnsupportedPlatform)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("fsstore: dir[%s]: %w", dir, err)
	}
	cfg = cfg.withDefaults()
	log, ro := cfg.Logger, cfg.ReadOnly
	s := &Store{dir: abs, readOnly: ro, log: log, lock: &openLock{}, hook: &hook{}}
	s.files = &blobFolders{dir: abs, readOnly: ro, log: log}
	s.rebuild = &recovery{dir: abs, journalPath: filepath.Join(abs, journalName), idPrefixLen: cfg.IDPrefixLen, files: s.files, log: log}
	s.idx = &index{path: filepath.Join(abs, indexName), journalPath: s.rebuild.journalPath, dir: abs,
		busyTimeout: cfg.BusyTimeout, readOnly: ro, log: log, files: s.files, lock: s.lock, rebuild: s.rebuild}
	s.reads = &accessLog{readOnly: ro, log: log, idx: s.idx}
	s.reader = &reader{pageSize: cfg.PageSize, idx: s.idx, files: s.files, reads: s.reads}
	s.text = &indexer{log: log, hook: s.hook, idx: s.idx, read: cfg.Text, open: s.reader.open}
	s.writer = &writer{dir: abs, readOnly: ro, idPrefixLen: cfg.IDPrefixLen, log: log, hook: s.hook,
		idx: s.idx, files: s.files, reads: s.reads, text: s.text}
	s.searcher = &searcher{candidates: cfg.SearchCandidates, idx: s.idx, text: s.text}
	s.gc = &collector{readOnly: ro, log: log, hook: s.hook, idx: s.idx, files: s.files, reads: s.reads}
	return s, nil
}

// withDefaults returns c with every unset field at its default.
func (c Config) withDefaults() Config {
	if c.SearchCandidates < 1 {
		c.SearchCandidates = DefaultSearchCandidates
	}
	if c.PageSize < 1 {
		c.PageSize = DefaultPageSize
	}
	if c.IDPrefixLen < 1 {
		c.IDPrefixLen = store.DefaultIDPrefixLen
	}
	if c.BusyTimeout <= 0 {
		c.BusyTimeout = DefaultBusyTimeout
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	return c
}

// openMode is what Repair asks of open: to fail with ErrBusy unless this
// process has the folder to itself, and to rebuild (rebuild) or reconcile
// the index, moving the blobs Check found rotten (corrupt) to lost+found/.
type openMode struct {
	repair, rebuild bool
	corrupt         []string
}

func (s *Store) open(ctx context.Context, mode openMode) error {
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
	if err := s.files.open(); err != nil {
		return err
	}
	if err := s.lock.create(filepath.Join(s.dir, openLockName)); err != nil {
		return err
	}
	alone, err := s.lock.tryExclusive()
	if err != nil {
		return err
	}
	if mode.repair && !alone {
		return ErrBusy
	}
	if alone {
		s.lock.exclusive = true
		defer func() { s.lock.exclusive = false }()
		if err := s.rebuild.recoverTmp(ctx, s.idx); err != nil {
			return err
		}
		if mode.repair {
			if err := s.idx.repair(ctx, mode.rebuild, mode.corrupt); err != nil {
				return err
			}
		}
	}
	// Convert to (or wait for) a shared hold for the store's lifetime.
	if err := s.lock.share(ctx); err != nil {
		return err
	}
	if fi, err := statIfExists(s.rebuild.journalPath); err != nil {
		return err
	} else if fi != nil {
		// A version 1 store: adopt its journal now (see the package doc).
		if _, err := s.idx.db(ctx); err != nil {
			return err
		}
	}
	return nil
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
	if err := s.lock.openIfPresent(filepath.Join(s.dir, openLockName)); err != nil {
		return err
	}
	// Shared, like every open store: waits while another process
	// recovers, and keeps recovery from starting while this is open.
	if err := s.lock.share(ctx); err != nil {
		return err
	}
	if err := s.files.open(); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			s.files.close() // a folder with a marker only
			return nil
		}
		return err
	}
	// Warn now, cheaply, about what only a read-write open or fsck mends
	// (a short index beside its WAL is SQLite's to read, see checkHeader).
	f, err := openIfPresent(s.idx.path)
	if err != nil {
		return err
	}
	if f != nil {
		_, herr := s.idx.checkHeader(f)
		f.Close()
		if herr != nil {
			s.log.Warn("the index is damaged; a read-only open cannot rebuild it: run 'mcpx artifacts fsck'", "index", s.idx.path, "error", herr)
		}
		return nil
	}
	if fi, _ := statIfExists(s.rebuild.journalPath); fi == nil && s.files.hasBlobs() {
		s.log.Warn("the store has blobs but no index; a read-only open lists none of them: run 'mcpx artifacts fsck'", "dir", s.dir)
	}
	return nil
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

// Put streams r into a temp file while hashing it, then commits it (see the
// package doc). The returned ref carries o.Scope and when the bytes were
// first put under it; an artifact put again keeps its id and first MIME
// type, and is listed under the name and source of the latest put under
// each scope.
func (s *Store) Put(ctx context.Context, r io.Reader, o store.PutOptions) (store.Ref, error) {
	return s.writer.put(ctx, r, o)
}

// Get returns a reader of the artifact's bytes, or of rng of them, reading
// the blob file in place.
func (s *Store) Get(ctx context.Context, id string, rng *store.Range) (io.ReadCloser, store.Ref, error) {
	return s.reader.get(ctx, id, rng)
}

// Stat returns the artifact's ref.
func (s *Store) Stat(ctx context.Context, id string) (store.Ref, error) {
	_, ref, err := s.reader.statSeq(ctx, id)
	return ref, err
}

// InScope reports whether the artifact was put under a scope that scope
// contains.
func (s *Store) InScope(ctx context.Context, id string, scope store.Scope) (bool, error) {
	return s.reader.inScope(ctx, id, scope)
}

// Owned returns the artifact as owner holds it (see store.Store.Owned):
// one indexed lookup of its scope rows.
func (s *Store) Owned(ctx context.Context, id string, owner store.Owner) ([]store.Ref, error) {
	return s.reader.owned(ctx, id, owner)
}

// Exists reports whether the artifact is stored.
func (s *Store) Exists(ctx context.Context, id string) (bool, error) {
	return s.reader.exists(ctx, id)
}

// Delete removes the artifact, and its blob when no other id holds it.
func (s *Store) Delete(ctx context.Context, id string) error {
	return s.writer.delete(ctx, id)
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
	refs, _, next, err := s.reader.list(ctx, scope, cursor, order, false)
	return refs, next, err
}

// ListAccess is ListOrder with each ref's last access (its last read, or
// its creation), for mcpx artifacts ls (see store.AccessLister).
func (s *Store) ListAccess(ctx context.Context, scope store.Scope, cursor string, order store.Order) ([]store.Ref, []time.Time, string, error) {
	return s.reader.list(ctx, scope, cursor, order, true)
}

// EachAccess is ListAccess handing each row to each as the index query
// yields it (see store.AccessLister).
func (s *Store) EachAccess(ctx context.Context, scope store.Scope, cursor string, order store.Order, each func(store.Ref, time.Time) error) (string, error) {
	return s.reader.each(ctx, scope, cursor, order, each)
}

// LastAccess returns when artifact id was last read (or put): the time
// lru retention counts from. The HTTP API's /artifacts/{id}/meta reports
// it (web.AccessStater).
func (s *Store) LastAccess(ctx context.Context, id string) (time.Time, error) {
	return s.reader.lastAccess(ctx, id)
}

// Annotate records the artifact's content summary in the index (returned
// in Ref.Content by Stat, Get and List) and hands its text parts to the
// search index, written beside the caller (see indexer.go): annotating
// again replaces both.
func (s *Store) Annotate(ctx context.Context, id string, content json.RawMessage, parts []store.TextPart) error {
	return s.writer.annotate(ctx, id, content, parts)
}

// AnnotateLater records the artifact's content summary as Annotate does
// and leaves its search text to Config.Text, which reads it from the
// bytes when the text is indexed: store.ErrNoTextReader without one.
func (s *Store) AnnotateLater(ctx context.Context, id string, content json.RawMessage) error {
	if s.text.read == nil {
		return fmt.Errorf("fsstore: artifact[%s]: %w", store.QuoteID(id), store.ErrNoTextReader)
	}
	return s.writer.annotateAs(ctx, id, content, nil, true)
}

// Search returns the best limit hits of query among the artifacts put
// under a scope that scope contains, ranked by FTS5's bm25() (Score is its
// negation: higher is better), each with a snippet() of its line. It ranks
// the newest Config.SearchCandidates matching lines.
func (s *Store) Search(ctx context.Context, scope store.Scope, query string, limit int) ([]store.Hit, error) {
	return s.searcher.search(ctx, scope, query, limit)
}

// Collect applies policy (see store.Collector). It chooses the scopes
// that go in a few set-based statements over the index into a temporary
// table (so memory does not grow with the store), then, artifact by
// artifact in short transactions of collectBatch, removes those scope
// rows, and the artifacts left with none as Delete does: rows deleted
// and unheld blobs parked in tmp/, commit, then the parked blobs
// removed. An artifact read (lru) or removed by another collector since
// it was chosen is skipped.
func (s *Store) Collect(ctx context.Context, policy store.Retention, o store.CollectOptions) (store.CollectReport, error) {
	return s.gc.collect(ctx, policy, o)
}

// DropScope removes scope from every artifact put under it, and removes
// the artifacts left with no scope (see store.Collector), in one
// transaction.
func (s *Store) DropScope(ctx context.Context, scope store.Scope) (store.CollectReport, error) {
	return s.gc.dropScope(ctx, scope)
}

// Close releases the store's index, files and locks. Readers returned by
// Get stay readable. Close is idempotent and ignores ctx.
func (s *Store) Close(context.Context) error {
	// Text not yet indexed stays pending in the index, for a later
	// search or process (indexer.go); reads not yet written go now,
	// while the index is open.
	s.text.stop()
	s.reads.stop(context.Background())
	if err := s.closeFiles(); err != nil {
		return fmt.Errorf("fsstore: dir[%s]: close: %w", s.dir, err)
	}
	return nil
}

// closeFiles closes the index, the blob files and the lock, once.
func (s *Store) closeFiles() error {
	first, err := s.idx.close()
	if !first {
		return nil
	}
	return errors.Join(err, s.files.close(), s.lock.close())
}

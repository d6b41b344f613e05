// Package fsstore is the embedded default artifact store: a folder on the
// local file system.
//
// # Layout
//
//	<dir>/mcpx-store.json    the marker: {"format":"mcpx-fsstore","version":1}
//	<dir>/blobs/ab/ab12…ef   content-addressed bytes, one file per sha256
//	<dir>/index.jsonl        the journal: every put, added scope and delete
//	<dir>/tmp/               puts in progress (same file system as blobs/)
//	<dir>/lost+found/        what recovery could not place (never deleted)
//	<dir>/open.lock          held shared by every open store
//	<dir>/write.lock         held exclusive by one mutation at a time
//
// # Whose folder
//
// Open makes a folder a store only when it is missing, empty, or carries
// the marker (a folder holding only what a store made before markers
// existed is adopted and marked). Any other folder, such as a project
// folder or the home folder named by mistake, fails with ErrNotAStore
// before anything in it is touched. tmp/ and blobs/ must be real folders:
// a symbolic link there is refused, never followed.
//
// # Writes
//
// Put streams the reader into a temp file under tmp/, hashing as it copies
// (the artifact is never held in memory), fsyncs the file, renames it to
// blobs/<first two hex>/<sha256>, fsyncs that folder, then appends one
// journal record and fsyncs the journal. Bytes already stored under another
// id are not written twice: ids in different namespaces share one blob, and
// Delete removes a blob only when no id holds it any more.
//
// # Why a journal
//
// The index is an append-only journal of JSON lines, each prefixed with the
// CRC-32C of its JSON and fsynced before the call returns, rather than one
// metadata file per artifact. A put then costs one appended line instead of
// a second temp file, rename and folder fsync; List reads an in-memory
// catalog in journal order (the insertion order List promises) instead of
// listing and sorting a folder of files; adding a scope to a stored
// artifact is one more line, not a rewrite; and other processes sharing the
// folder learn about changes by reading the journal's new tail. A kill can
// only tear the last line: a line without its '\n' or failing its checksum
// is skipped (and logged), so the journal always replays to a state some
// prefix of the completed calls produced. When the journal holds more than
// twice the records its live state needs, or any bad line, it is rewritten
// (temp file, fsync, rename, folder fsync) by the next Open that has the
// folder to itself.
//
// # Recovery
//
// An Open that finds no other process using the folder (it gets open.lock
// exclusively) removes the temp files of puts that never finished (only
// names the store mints: put-<n>, index-<n>.jsonl; anything else is left
// and logged), drops journal entries whose blob is missing or has the wrong
// size, and compacts the journal when needed. A blob no journal entry holds
// is never deleted unless the journal records its deletion (a kill between
// a delete's record and the blob's removal): it is hashed, and re-indexed
// as "recovered_<sha256 prefix>" when its bytes match its name (a kill
// between a put's rename and its journal record, a truncated or damaged
// journal), or moved to lost+found/ when they do not. A re-indexed artifact
// keeps only what its blob proves, its bytes, sha256 and size: its MIME
// type, file name, source and scopes were in the lost journal lines, which
// are copied to lost+found/ before compaction drops them. It has the empty
// scope, so only an unscoped List (mcpx artifacts ls) shows it. Damage is
// logged at warn level with counts; Check and Repair (mcpx artifacts fsck)
// report it without opening the store for writing.
//
// Whatever point a kill hit, the reopened store lists only artifacts that
// read back byte-exact.
//
// # Read-only
//
// Config.ReadOnly opens a store for reading only: no marker, lock, journal or
// temp file is created or changed, so a store on a read-only mount or in a
// folder this user cannot write can be listed and read. It takes the lock
// files shared when it can open them, and reads a missing folder as an
// empty store. Put and Delete return ErrReadOnly.
//
// # Several processes
//
// Two MCP clients on one machine may both start mcpx on the default folder,
// so a folder may be open in several processes at once; neither waits for
// the other nor turns read-only. Every open store holds open.lock shared (so
// recovery, which needs it exclusive, runs only when one process is alone).
// Each mutation takes write.lock exclusively, first reads what other
// processes appended to the journal, then decides (the id, whether the blob
// exists) and appends; reads take write.lock shared only when the journal
// grew since they last looked. A torn line left by a killed process is
// closed off by the next writer, so it never merges with a good record.
//
// Locks are flock(2) locks: fsstore works on Linux, macOS and the BSDs, on
// local file systems. On other systems (Windows among them) Open fails with
// ErrUnsupportedPlatform: shared and exclusive locks that convert, renaming
// over an open journal and removing a blob a reader holds open all behave
// differently there, and a store that only seemed to work would lose data.
package fsstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/internal/catalog"
	"github.com/mcpx-dev/mcpx/store/internal/putio"
)

// DefaultPageSize is the number of refs List returns per page by default.
const DefaultPageSize = 100

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
	// ErrUnsupportedPlatform is returned by Open on systems without
	// flock(2); it wraps errors.ErrUnsupported.
	ErrUnsupportedPlatform = fmt.Errorf("fsstore: file locks are not supported on %s: %w", runtime.GOOS, errors.ErrUnsupported)
)

// Names inside the store's folder.
const (
	journalName   = "index.jsonl"
	blobsName     = "blobs"
	tmpName       = "tmp"
	openLockName  = "open.lock"
	writeLockName = "write.lock"
	lostFoundName = "lost+found"
)

// compactMinRecords is the journal length under which Open never compacts
// for size alone.
const compactMinRecords = 1024

// Config configures a Store. The zero value means the defaults.
//
//	cfg := fsstore.Config{Logger: log.Named("store"), ReadOnly: true}
type Config struct {
	// PageSize is how many refs List returns per page; n < 1 means the
	// default. Defaults to DefaultPageSize.
	PageSize int
	// IDPrefixLen is how many sha256 hex characters a new id starts with;
	// n < 1 means the default. Ids already in the journal keep their
	// length. Defaults to store.DefaultIDPrefixLen.
	IDPrefixLen int
	// Logger receives what recovery reports: skipped journal lines,
	// dropped entries and collected files, at warn or info level. Defaults
	// to hclog.NewNullLogger().
	Logger hclog.Logger
	// ReadOnly opens the store for reading only (see the package doc):
	// nothing in the folder is created or changed, and Put and Delete
	// return ErrReadOnly. Defaults to false.
	ReadOnly bool
}

// Store is an artifact store on a folder. It is safe for concurrent use, by
// goroutines and by other processes that open the same folder.
type Store struct {
	dir, blobsDir, tmpDir, journalPath string
	pageSize, idPrefixLen              int
	log                                hclog.Logger
	readOnly                           bool

	// repair (set by Repair) makes open fail with ErrBusy unless this
	// process has the folder to itself, and quarantine the blobs in
	// corrupt after recovery.
	repair  bool
	corrupt []string
	// deletedBlobs, when not nil (during recovery and Check), collects the
	// sha256 of every blob the journal's delete records freed: the only
	// blobs recovery may remove.
	deletedBlobs map[string]bool
	// damagedLines, when not nil (during recovery), collects the journal
	// lines that failed their checksum, to be kept in lost+found/.
	damagedLines *[][]byte

	// hook, when set (by tests), is called at named points of Put and
	// Delete to simulate a kill there.
	hook func(point string)

	mu        sync.RWMutex
	closed    bool
	cat       *catalog.Catalog
	openLock  *os.File
	writeLock *os.File
	journal   *os.File
	off       int64 // end of the last complete journal line read
	seen      int64 // journal size when last read
	torn      bool  // the journal ends in a line without '\n'
	skipped   int   // good lines whose record could not be applied
	badLines  int   // complete lines that failed their checksum or decoding
}

var _ store.Store = (*Store)(nil)

// Open opens (creating it when missing, mode 0700) the store in dir. When
// no other process has the folder open it recovers from any earlier kill
// first (see the package doc); otherwise it waits, until ctx is done, only
// while another process is recovering.
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
		blobsDir:    filepath.Join(abs, blobsName),
		tmpDir:      filepath.Join(abs, tmpName),
		journalPath: filepath.Join(abs, journalName),
		pageSize:    cfg.PageSize,
		idPrefixLen: cfg.IDPrefixLen,
		log:         cfg.Logger,
		readOnly:    cfg.ReadOnly,
		cat:         catalog.New(),
	}
	if s.pageSize < 1 {
		s.pageSize = DefaultPageSize
	}
	if s.idPrefixLen < 1 {
		s.idPrefixLen = store.DefaultIDPrefixLen
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
	var err error
	if s.openLock, err = os.OpenFile(filepath.Join(s.dir, openLockName), os.O_RDWR|os.O_CREATE, 0o600); err != nil {
		return err
	}
	if s.writeLock, err = os.OpenFile(filepath.Join(s.dir, writeLockName), os.O_RDWR|os.O_CREATE, 0o600); err != nil {
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
		if err := s.recover(); err != nil {
			return err
		}
		if s.repair {
			if err := s.quarantine(s.corrupt); err != nil {
				return err
			}
		}
	}
	// Convert to (or wait for) a shared hold for the store's lifetime. A
	// conversion is not atomic: another process may recover in between, so
	// the journal is checked again below.
	if err := flock(ctx, s.openLock, false); err != nil {
		return err
	}
	if s.journal != nil {
		same, err := s.journalIsCurrent()
		if err != nil {
			return err
		}
		if !same {
			s.journal.Close()
			s.journal = nil
		}
	}
	if s.journal == nil {
		s.cat = catalog.New()
		s.off, s.seen, s.torn = 0, 0, false
		if s.journal, err = s.openJournal(); err != nil {
			return err
		}
	}
	if err := flock(ctx, s.writeLock, false); err != nil {
		return err
	}
	defer funlock(s.writeLock)
	_, err = s.catchUp()
	return err
}

// openReadOnly opens the store without writing anything: a missing folder
// or journal reads as an empty store, lock files that are missing or
// cannot be opened are done without.
func (s *Store) openReadOnly(ctx context.Context) error {
	exists, err := claimFolder(s.dir, false)
	if err != nil || !exists {
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
	if s.writeLock, err = openIfPresent(filepath.Join(s.dir, writeLockName)); err != nil {
		return err
	}
	if s.journal, err = openIfPresent(s.journalPath); err != nil {
		return err
	}
	if s.journal == nil {
		if shards, _ := os.ReadDir(s.blobsDir); len(shards) > 0 {
			s.log.Warn("the store has blobs but no journal; a read-only open lists none of them: run 'mcpx artifacts fsck'", "dir", s.dir)
		}
		return nil
	}
	unlock, err := s.lockWrite(ctx, false)
	if err != nil {
		return err
	}
	defer unlock()
	if s.torn || s.badLines > 0 {
		// Recovery would re-index what the damage hid; a read-only open
		// must not, so it says where to look.
		s.log.Warn("the journal is damaged; a read-only open may list fewer artifacts than the store holds: run 'mcpx artifacts fsck'",
			"journal", s.journalPath, "damaged_lines", s.badLines, "torn_last_line", s.torn)
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

func (s *Store) openJournal() (*os.File, error) {
	return os.OpenFile(s.journalPath, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
}

func (s *Store) journalIsCurrent() (bool, error) {
	a, err := s.journal.Stat()
	if err != nil {
		return false, err
	}
	b, err := os.Stat(s.journalPath)
	if err != nil {
		return false, err
	}
	return os.SameFile(a, b), nil
}

// Dir returns the store's folder (an absolute path).
func (s *Store) Dir() string { return s.dir }

func (s *Store) blobPath(sha256hex string) string {
	return filepath.Join(s.blobsDir, sha256hex[:2], sha256hex)
}

func (s *Store) at(point string) {
	if s.hook != nil {
		s.hook(point)
	}
}

// catchUp applies what was appended to the journal since it was last read.
// The caller holds mu and write.lock (shared or exclusive).
func (s *Store) catchUp() (scanResult, error) {
	if s.journal == nil {
		// A read-only store on a folder without a journal.
		return scanResult{}, nil
	}
	fi, err := s.journal.Stat()
	if err != nil {
		return scanResult{}, fmt.Errorf("journal: %w", err)
	}
	size := fi.Size()
	if size == s.seen {
		return scanResult{}, nil
	}
	if size < s.off {
		return scanResult{}, fmt.Errorf("journal: %s shrank from %d to %d bytes while open", s.journalPath, s.off, size)
	}
	var keep func([]byte)
	if s.damagedLines != nil {
		keep = func(line []byte) { *s.damagedLines = append(*s.damagedLines, bytes.Clone(line)) }
	}
	res, err := scanJournal(io.NewSectionReader(s.journal, s.off, size-s.off), s.apply, keep)
	if err != nil {
		return res, fmt.Errorf("journal: read %s: %w", s.journalPath, err)
	}
	if len(res.bad) > 0 {
		s.badLines += len(res.bad)
		s.log.Warn("skipped damaged journal lines", "journal", s.journalPath, "from_offset", s.off, "count", len(res.bad), "lines", firstFew(res.bad))
	}
	s.off += res.consumed
	s.seen = size
	s.torn = res.torn
	return res, nil
}

// apply replays one journal record into the catalog.
func (s *Store) apply(rec record) {
	switch rec.Op {
	case opPut:
		if _, err := s.cat.Insert(rec.Seq, *rec.Ref); err != nil {
			s.skipped++
			s.log.Warn("skipped journal record", "journal", s.journalPath, "error", err)
		}
	case opScope:
		s.cat.AddScope(rec.ID, *rec.Scope)
	case opDel:
		e, free, ok := s.cat.Remove(rec.ID)
		if ok && free && s.deletedBlobs != nil {
			s.deletedBlobs[e.Ref.SHA256] = true
		}
	case opSeq:
		s.cat.AdvanceSeq(rec.Seq)
	}
}

// appendRecords writes recs to the journal in one write and fsyncs it. The
// caller holds mu and write.lock exclusively and has caught up. On failure
// the journal is cut back to where it was.
func (s *Store) appendRecords(recs ...record) error {
	var buf []byte
	if s.torn {
		// A killed writer left a line without '\n': close it off so it
		// stays one bad line instead of swallowing this record.
		buf = append(buf, '\n')
	}
	for _, rec := range recs {
		var err error
		if buf, err = appendLine(buf, rec); err != nil {
			return err
		}
	}
	_, err := s.journal.Write(buf)
	if err == nil {
		err = s.journal.Sync()
	}
	if err != nil {
		if terr := s.journal.Truncate(s.seen); terr != nil {
			// The journal's tail is unknown now: read it again next time.
			s.seen = -1
			return fmt.Errorf("journal: append: %w (and cut back: %v)", err, terr)
		}
		return fmt.Errorf("journal: append: %w", err)
	}
	// The journal now ends with this record's '\n'; the closed-off torn
	// line (if any) is a bad line nobody needs to read again.
	s.seen += int64(len(buf))
	s.off = s.seen
	s.torn = false
	return nil
}

// lockWrite takes mu and write.lock (exclusive for a mutation) and catches
// up with the journal. The returned func releases both.
func (s *Store) lockWrite(ctx context.Context, exclusive bool) (func(), error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, store.ErrClosed
	}
	if exclusive && s.readOnly {
		s.mu.Unlock()
		return nil, ErrReadOnly
	}
	// A read-only store may have no write.lock to take (see openReadOnly).
	if s.writeLock != nil {
		if err := flock(ctx, s.writeLock, exclusive); err != nil {
			s.mu.Unlock()
			return nil, err
		}
	}
	unlock := func() {
		if s.writeLock != nil {
			if err := funlock(s.writeLock); err != nil {
				s.log.Warn("unlock failed", "file", s.writeLock.Name(), "error", err)
			}
		}
		s.mu.Unlock()
	}
	if _, err := s.catchUp(); err != nil {
		unlock()
		return nil, err
	}
	return unlock, nil
}

// readLocked takes mu for reading, first catching up with the journal when
// another process has appended to it. The caller calls s.mu.RUnlock.
func (s *Store) readLocked(ctx context.Context) error {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return store.ErrClosed
	}
	if s.journal == nil {
		return nil // a read-only store on a folder without a journal
	}
	fi, err := s.journal.Stat()
	if err == nil && fi.Size() == s.seen {
		return nil
	}
	s.mu.RUnlock()
	unlock, err := s.lockWrite(ctx, false)
	if err != nil {
		return err
	}
	unlock()
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return store.ErrClosed
	}
	return nil
}

// Put streams r into a temp file while hashing it, then commits it (see the
// package doc). The returned ref carries o.Scope; an artifact put again
// keeps its first MIME type, file name and source.
func (s *Store) Put(ctx context.Context, r io.Reader, o store.PutOptions) (store.Ref, error) {
	ns := store.SanitizeNamespace(o.Namespace)
	s.mu.RLock()
	closed := s.closed
	s.mu.RUnlock()
	if closed {
		return store.Ref{}, fmt.Errorf("fsstore: put[%s]: %w", ns, store.ErrClosed)
	}
	if s.readOnly {
		return store.Ref{}, fmt.Errorf("fsstore: put[%s]: %w", ns, ErrReadOnly)
	}
	if err := ctx.Err(); err != nil {
		return store.Ref{}, fmt.Errorf("fsstore: put[%s]: %w", ns, err)
	}
	tmp, err := os.CreateTemp(s.tmpDir, "put-*")
	if err != nil {
		return store.Ref{}, fmt.Errorf("fsstore: put[%s]: %w", ns, err)
	}
	tmpName := tmp.Name()
	defer func() {
		tmp.Close()
		if err := os.Remove(tmpName); err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.log.Warn("could not remove temp file", "file", tmpName, "error", err)
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
	ref, err := s.commit(ctx, tmpName, n, sum, ns, o)
	if err != nil {
		return store.Ref{}, fmt.Errorf("fsstore: put[%s] sha256[%s]: %w", ns, sum, err)
	}
	return ref, nil
}

// commit records the synced temp file tmpName as an artifact.
func (s *Store) commit(ctx context.Context, tmpName string, n int64, sum, ns string, o store.PutOptions) (store.Ref, error) {
	unlock, err := s.lockWrite(ctx, true)
	if err != nil {
		return store.Ref{}, err
	}
	defer unlock()

	if e, ok := s.cat.ByContent(ns, sum); ok {
		if !slices.Contains(e.Scopes, o.Scope) {
			scope := o.Scope
			if err := s.appendRecords(record{Op: opScope, ID: e.Ref.ID, Scope: &scope}); err != nil {
				return store.Ref{}, err
			}
			s.cat.AddScope(e.Ref.ID, o.Scope)
		}
		ref := e.Ref
		ref.Scope = o.Scope
		return ref, nil
	}

	id, err := s.cat.AllocateID(ns, sum, s.idPrefixLen)
	if err != nil {
		return store.Ref{}, err
	}
	ref := store.NewRef(id, sum, n, o)
	blob := s.blobPath(sum)
	wroteBlob := false
	if s.cat.BlobRefs(sum) == 0 {
		if err := s.placeBlob(tmpName, blob); err != nil {
			return store.Ref{}, fmt.Errorf("artifact[%s]: %w", id, err)
		}
		wroteBlob = true
		s.at("put:renamed")
	}
	seq := s.cat.NextSeq()
	if err := s.appendRecords(record{Op: opPut, Seq: seq, Ref: &ref}); err != nil {
		if wroteBlob {
			os.Remove(blob)
		}
		return store.Ref{}, fmt.Errorf("artifact[%s]: %w", id, err)
	}
	if _, err := s.cat.Insert(seq, ref); err != nil {
		return store.Ref{}, fmt.Errorf("artifact[%s]: %w", id, err)
	}
	return ref, nil
}

// placeBlob renames the temp file to the blob's path and makes the rename
// durable.
func (s *Store) placeBlob(tmpName, blob string) error {
	shard := filepath.Dir(blob)
	switch err := os.Mkdir(shard, 0o700); {
	case err == nil:
		if err := syncDir(s.blobsDir); err != nil {
			return err
		}
	case !errors.Is(err, fs.ErrExist):
		return err
	}
	if err := os.Rename(tmpName, blob); err != nil {
		return err
	}
	return syncDir(shard)
}

// Get returns a reader of the artifact's bytes, or of rng of them, reading
// the blob file in place.
func (s *Store) Get(ctx context.Context, id string, rng *store.Range) (io.ReadCloser, store.Ref, error) {
	ref, err := s.stat(ctx, id)
	if err != nil {
		return nil, store.Ref{}, err
	}
	off, n, err := catalog.Bounds(rng, ref.SizeBytes)
	if err != nil {
		return nil, store.Ref{}, fmt.Errorf("fsstore: artifact[%s]: %w", id, err)
	}
	f, err := os.Open(s.blobPath(ref.SHA256))
	if errors.Is(err, fs.ErrNotExist) {
		// Deleted by another process since the journal was read.
		return nil, store.Ref{}, fmt.Errorf("fsstore: artifact[%s]: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, store.Ref{}, fmt.Errorf("fsstore: artifact[%s]: %w", id, err)
	}
	fi, err := f.Stat()
	if err == nil && fi.Size() != ref.SizeBytes {
		err = fmt.Errorf("blob %s has %d bytes, the index says %d", f.Name(), fi.Size(), ref.SizeBytes)
	}
	if err != nil {
		f.Close()
		return nil, store.Ref{}, fmt.Errorf("fsstore: artifact[%s]: %w", id, err)
	}
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

func (s *Store) stat(ctx context.Context, id string) (store.Ref, error) {
	var ref store.Ref
	err := s.lookup(ctx, id, func(e *catalog.Entry) { ref = e.Ref })
	return ref, err
}

// InScope reports whether the artifact was put under a scope that scope
// contains.
func (s *Store) InScope(ctx context.Context, id string, scope store.Scope) (bool, error) {
	var in bool
	err := s.lookup(ctx, id, func(e *catalog.Entry) {
		in = slices.ContainsFunc(e.Scopes, scope.Contains)
	})
	return in, err
}

// lookup calls fn with the entry of id, under the read lock.
func (s *Store) lookup(ctx context.Context, id string, fn func(*catalog.Entry)) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("fsstore: artifact[%s]: %w", store.QuoteID(id), err)
	}
	if !store.ValidID(id) {
		return fmt.Errorf("fsstore: artifact[%s]: %w", store.QuoteID(id), store.ErrInvalidID)
	}
	if err := s.readLocked(ctx); err != nil {
		return fmt.Errorf("fsstore: artifact[%s]: %w", id, err)
	}
	defer s.mu.RUnlock()
	e, ok := s.cat.Get(id)
	if !ok {
		return fmt.Errorf("fsstore: artifact[%s]: %w", id, store.ErrNotFound)
	}
	fn(e)
	return nil
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
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("fsstore: artifact[%s]: %w", store.QuoteID(id), err)
	}
	if !store.ValidID(id) {
		return fmt.Errorf("fsstore: artifact[%s]: %w", store.QuoteID(id), store.ErrInvalidID)
	}
	unlock, err := s.lockWrite(ctx, true)
	if err != nil {
		return fmt.Errorf("fsstore: artifact[%s]: %w", id, err)
	}
	defer unlock()
	if _, ok := s.cat.Get(id); !ok {
		return fmt.Errorf("fsstore: artifact[%s]: %w", id, store.ErrNotFound)
	}
	if err := s.appendRecords(record{Op: opDel, ID: id}); err != nil {
		return fmt.Errorf("fsstore: artifact[%s]: %w", id, err)
	}
	s.at("delete:journaled")
	e, free, _ := s.cat.Remove(id)
	if free {
		// A failure leaves an unreferenced blob, collected by the next
		// recovering Open; the delete itself is done.
		if err := os.Remove(s.blobPath(e.Ref.SHA256)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.log.Warn("could not remove blob", "artifact", id, "error", err)
		}
	}
	return nil
}

// List returns one page of the refs whose scope scope contains, oldest
// first. An artifact put under several scopes is listed once, with the first
// of its scopes that scope contains.
func (s *Store) List(ctx context.Context, scope store.Scope, cursor string) ([]store.Ref, string, error) {
	if err := ctx.Err(); err != nil {
		return nil, "", fmt.Errorf("fsstore: list: %w", err)
	}
	if err := s.readLocked(ctx); err != nil {
		return nil, "", fmt.Errorf("fsstore: list: %w", err)
	}
	defer s.mu.RUnlock()
	refs, next, err := s.cat.List(scope, cursor, s.pageSize)
	if err != nil {
		return nil, "", fmt.Errorf("fsstore: list: %w", err)
	}
	return refs, next, nil
}

// Close releases the store's files and locks. Readers returned by Get stay
// readable. Close is idempotent and ignores ctx.
func (s *Store) Close(context.Context) error {
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
	for _, f := range []**os.File{&s.journal, &s.writeLock, &s.openLock} {
		if *f != nil {
			errs = append(errs, (*f).Close())
			*f = nil
		}
	}
	s.cat = catalog.New()
	return errors.Join(errs...)
}

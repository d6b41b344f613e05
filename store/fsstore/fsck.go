package fsstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Report is what Check found in a store's folder.
type Report struct {
	// Dir is the store's folder (an absolute path).
	Dir string `json:"dir"`
	// Artifacts is the number of artifacts the index lists.
	Artifacts int `json:"artifacts"`
	// IndexDamaged is set when the index is missing while blobs exist, is
	// not a whole SQLite database (damaged, truncated), or fails SQLite's
	// integrity check; IndexError says how. Repair rebuilds it from the
	// blobs.
	IndexDamaged bool   `json:"index_damaged"`
	IndexError   string `json:"index_error,omitempty"`
	// BadLines counts complete lines of a not yet adopted journal (a
	// version 1 store) that fail their checksum or do not decode.
	BadLines int `json:"bad_lines"`
	// TornTail is set when a not yet adopted journal ends in a partial
	// line.
	TornTail bool `json:"torn_tail"`
	// Missing lists the ids whose blob is missing, of the wrong size or
	// not a regular file.
	Missing []string `json:"missing"`
	// Unindexed lists the sha256 of blobs that no artifact holds (a lost
	// or damaged index).
	Unindexed []string `json:"unindexed"`
	// Corrupt lists the sha256 names of blobs whose bytes hash to
	// something else.
	Corrupt []string `json:"corrupt"`
	// Unfinished counts temp files of puts that never finished: what a
	// kill leaves, removed by the next Open that has the folder to itself.
	// Not damage.
	Unfinished int `json:"unfinished"`
	// Leftover counts blobs parked by deletes a kill cut short, settled
	// like Unfinished. Not damage.
	Leftover int `json:"leftover"`
	// Unknown lists files under blobs/ and tmp/ that the store did not
	// make, relative to Dir. The store never touches them, so they are
	// not damage either.
	Unknown []string `json:"unknown"`
}

// Damaged reports whether the report found damage that Repair fixes.
func (r Report) Damaged() bool {
	return r.IndexDamaged || r.BadLines > 0 || r.TornTail || len(r.Missing) > 0 || len(r.Unindexed) > 0 || len(r.Corrupt) > 0
}

// Check reads the store in dir and reports damage without changing
// anything: it opens the store read-only (see Config.ReadOnly), runs
// SQLite's integrity check on the index, looks for every artifact's blob
// and hashes every blob. Writers of other processes go on meanwhile; what
// they change while it looks may show as damage that is not.
//
// # Errors
//
// Those of Open; an error wrapping fs.ErrNotExist when dir does not exist.
func Check(ctx context.Context, dir string, cfg Config) (Report, error) {
	cfg.ReadOnly = true
	s, err := newStore(dir, cfg)
	if err != nil {
		return Report{}, err
	}
	if _, err := os.Stat(s.dir); err != nil {
		return Report{}, fmt.Errorf("fsstore: dir[%s]: %w", s.dir, err)
	}
	if err := s.open(ctx); err != nil {
		s.closeFiles()
		return Report{}, fmt.Errorf("fsstore: dir[%s]: %w", s.dir, err)
	}
	defer s.Close(ctx)
	rep, err := s.check(ctx)
	if err != nil {
		return Report{}, fmt.Errorf("fsstore: dir[%s]: check: %w", s.dir, err)
	}
	return rep, nil
}

// check builds the report.
func (s *Store) check(ctx context.Context) (Report, error) {
	rep := Report{Dir: s.dir}
	if s.blobs == nil {
		return rep, nil
	}
	held := map[string]bool{}
	db, err := s.index(ctx)
	switch {
	case err != nil && !isCorrupt(err):
		return rep, err
	case err != nil:
		rep.IndexDamaged, rep.IndexError = true, err.Error()
	case db == nil:
		if s.hasBlobs() {
			rep.IndexDamaged, rep.IndexError = true, "the store has blobs but no index"
		}
	default:
		if msg, err := integrityCheck(ctx, db); err != nil || msg != "ok" {
			if err != nil {
				msg = err.Error()
			}
			rep.IndexDamaged, rep.IndexError = true, msg
			break
		}
		if err := s.checkRows(ctx, db, &rep, held); err != nil {
			if !isCorrupt(err) {
				return rep, err
			}
			rep.IndexDamaged, rep.IndexError = true, err.Error()
		}
	}
	rel := func(path string) string {
		if r, err := filepath.Rel(s.dir, path); err == nil {
			return r
		}
		return path
	}
	err = s.walkBlobs(func(sum, path string, _ fs.FileInfo) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if sum == "" {
			rep.Unknown = append(rep.Unknown, rel(path))
			return nil
		}
		got, err := hashIn(s.blobs, blobName(sum))
		if err != nil {
			return err
		}
		switch {
		case got != sum:
			rep.Corrupt = append(rep.Corrupt, sum)
		case held[sum]:
		default:
			rep.Unindexed = append(rep.Unindexed, sum)
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return rep, err
	}
	tmps, err := os.ReadDir(filepath.Join(s.dir, tmpName))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return rep, err
	}
	for _, t := range tmps {
		kind, _ := tempKind(t.Name())
		switch {
		case !t.Type().IsRegular() || kind == "":
			rep.Unknown = append(rep.Unknown, rel(filepath.Join(s.dir, tmpName, t.Name())))
		case kind == "del":
			rep.Leftover++
		default:
			rep.Unfinished++
		}
	}
	return rep, nil
}

// integrityCheck runs PRAGMA integrity_check and returns its first line
// ("ok" when the index is sound).
func integrityCheck(ctx context.Context, db *sql.DB) (string, error) {
	rows, err := db.QueryContext(ctx, `PRAGMA integrity_check(10)`)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var l string
		if err := rows.Scan(&l); err != nil {
			return "", err
		}
		lines = append(lines, l)
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	return strings.Join(lines, "; "), nil
}

// checkRows counts the artifacts, lists those whose blob is unusable and
// collects the blobs they hold.
func (s *Store) checkRows(ctx context.Context, db *sql.DB, rep *Report, held map[string]bool) error {
	rows, err := db.QueryContext(ctx, `SELECT id, sha256, size FROM artifacts ORDER BY seq`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id, sum string
		var size int64
		if err := rows.Scan(&id, &sum, &size); err != nil {
			return err
		}
		rep.Artifacts++
		held[sum] = true
		fi, err := s.blobs.Lstat(blobName(sum))
		if err != nil || !fi.Mode().IsRegular() || fi.Size() != size {
			rep.Missing = append(rep.Missing, id)
		}
	}
	return rows.Err()
}

// Repair checks the store in dir (see Check) and, when it finds damage,
// repairs it: a damaged index is moved to lost+found/ and rebuilt from the
// blobs, artifacts whose blob is missing are dropped, blobs no artifact
// holds are re-indexed (see the package doc), and blobs whose bytes do not
// match their name are moved to lost+found/ with the artifacts that held
// them dropped. No blob is deleted. It returns what Check found before the
// repair.
//
// # Errors
//
// Those of Check and Open; ErrBusy when another process has the store
// open (repair needs the folder to itself).
func Repair(ctx context.Context, dir string, cfg Config) (Report, error) {
	rep, err := Check(ctx, dir, cfg)
	if err != nil || !rep.Damaged() {
		return rep, err
	}
	cfg.ReadOnly = false
	s, err := newStore(dir, cfg)
	if err != nil {
		return rep, err
	}
	s.repair, s.repairRebuild, s.corrupt = true, rep.IndexDamaged, rep.Corrupt
	if err := s.open(ctx); err != nil {
		s.closeFiles()
		return rep, fmt.Errorf("fsstore: dir[%s]: repair: %w", s.dir, err)
	}
	if err := s.Close(ctx); err != nil {
		return rep, err
	}
	return rep, nil
}

// repairIndex runs during a repair, with the folder to itself: it sets a
// damaged index aside (opening the index then rebuilds it) or reconciles
// a sound one with the blobs.
func (s *Store) repairIndex(ctx context.Context) error {
	if s.repairRebuild {
		if _, err := os.Lstat(s.indexPath); err == nil {
			if err := s.setIndexAside(ctx, errIndexDamaged); err != nil {
				return err
			}
		}
		_, err := s.index(ctx)
		return err
	}
	db, err := s.index(ctx)
	if err != nil {
		return err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var c recoveryCounts
	if err := s.reconcile(ctx, tx, &c, nil, s.corrupt); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	s.logCounts(c)
	return nil
}

// openIndexReadOnly opens the index for reading: nil when the store has
// none. A journal store not yet adopted is read into a private in-memory
// index; an index in a folder this process cannot write is opened
// immutable (SQLite cannot make its shared-memory file there).
func (s *Store) openIndexReadOnly(ctx context.Context) (*sql.DB, error) {
	if s.blobs == nil {
		return nil, nil
	}
	f, err := openIfPresent(s.indexPath)
	if err != nil {
		return nil, err
	}
	if f == nil {
		if fi, err := statIfExists(s.journalPath); err != nil || fi == nil {
			return nil, err
		}
		return s.journalInMemory(ctx)
	}
	_, herr := checkIndexHeader(f)
	f.Close()
	if herr != nil {
		return nil, fmt.Errorf("%w: %w", ErrIndexDamaged, herr)
	}
	// A reader in WAL mode makes -wal and -shm when they are missing,
	// which a read-only open must not. They are missing only when no
	// connection has the index open; then nothing is in a WAL and the
	// file can be read immutable (index drops that handle once a writer
	// appears). The same goes for a folder this process cannot write.
	wal, err := statIfExists(s.indexPath + "-wal")
	if err != nil {
		return nil, err
	}
	immutable := wal == nil || !writable(s.dir)
	s.dbImmutable = immutable
	db, v, err := openIndexDB(ctx, indexDSN(s.indexPath, s.busyTimeout, true, immutable))
	if err != nil {
		return nil, err
	}
	if v == 0 {
		// Being created by a writer right now: nothing in it yet.
		db.Close()
		return nil, nil
	}
	// An index older than this mcpx lacks columns; a read-only store
	// reads it without them (the next read-write open migrates).
	s.oldIndex.Store(0)
	if v < schemaVersion {
		s.oldIndex.Store(int32(v))
	}
	return db, nil
}

// journalInMemory reads the journal of a store not yet adopted into an
// in-memory index.
func (s *Store) journalInMemory(ctx context.Context) (*sql.DB, error) {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		return nil, err
	}
	// One connection: each connection to :memory: is a database of its own.
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	tx, err := db.BeginTx(ctx, nil)
	if err == nil {
		defer tx.Rollback()
		err = createSchema(ctx, tx)
	}
	if err == nil {
		var c recoveryCounts
		_, err = s.importJournal(ctx, tx, &c, map[string]bool{}, false)
		if c.badLines > 0 || c.tornTail {
			s.log.Warn("the journal is damaged; a read-only open may list fewer artifacts than the store holds: run 'mcpx artifacts fsck'", "journal", s.journalPath)
		}
	}
	if err == nil {
		err = tx.Commit()
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	s.log.Info("read a journal store (not yet adopted) into memory; a read-write open adopts it", "journal", s.journalPath)
	return db, nil
}

package fsstore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mcpx-dev/mcpx/store"
)

// recoveryCounts are what one recovery found and did, for its log line.
type recoveryCounts struct {
	unfinished  int // temp files of unfinished puts removed
	badLines    int // damaged lines of an adopted journal skipped
	tornTail    bool
	missing     int // entries dropped: blob missing, of the wrong size or type
	reindexed   int // blobs no entry held, re-indexed from their name and size
	lostFound   int // blobs whose bytes do not match their name, moved to lost+found/
	deletedGone int // blobs of deletes a kill interrupted, removed
	restored    int // blobs of deletes a kill rolled back, put back
	unknown     int // files the store did not make, left alone
}

func (c recoveryCounts) damaged() bool {
	return c.badLines > 0 || c.tornTail || c.missing > 0 || c.reindexed > 0 || c.lostFound > 0
}

func (s *Store) logCounts(c recoveryCounts) {
	if c.damaged() {
		s.log.Warn("recovered a damaged store: no blob was deleted",
			"dir", s.dir,
			"damaged_journal_lines", c.badLines, "torn_last_line", c.tornTail,
			"artifacts_without_blob", c.missing,
			"blobs_reindexed", c.reindexed, "blobs_moved_to_lost_found", c.lostFound,
			"files_left_alone", c.unknown)
	}
	if c.unfinished > 0 || c.deletedGone > 0 || c.restored > 0 {
		s.log.Info("cleaned up after an interrupted process", "dir", s.dir,
			"unfinished_puts_removed", c.unfinished, "deleted_blobs_removed", c.deletedGone,
			"blobs_of_rolled_back_deletes_restored", c.restored)
	}
}

// tempKind says what a name under tmp/ is: "put", "del" (with the parked
// blob's sha256), "index" (a version 1 compaction), or "" when the store
// did not mint it.
func tempKind(name string) (kind, sum string) {
	digits := func(s string) bool {
		if s == "" {
			return false
		}
		for i := 0; i < len(s); i++ {
			if s[i] < '0' || s[i] > '9' {
				return false
			}
		}
		return true
	}
	if rest, ok := strings.CutPrefix(name, "put-"); ok && digits(rest) {
		return "put", ""
	}
	if rest, ok := strings.CutPrefix(name, "index-"); ok {
		if rest, ok = strings.CutSuffix(rest, ".jsonl"); ok && digits(rest) {
			return "index", ""
		}
	}
	if rest, ok := strings.CutPrefix(name, "del-"); ok && len(rest) > 65 && rest[64] == '-' &&
		store.ValidSHA256(rest[:64]) && digits(rest[65:]) {
		return "del", rest[:64]
	}
	return "", ""
}

// recoverTmp runs when this process has the folder to itself (open.lock
// held exclusively): it settles what killed calls left under tmp/ (see
// the package doc). It opens the index only when a kill hit a put after its
// link or a delete before its commit.
func (s *Store) recoverTmp(ctx context.Context) error {
	d, err := s.tmp.Open(".")
	if err != nil {
		return err
	}
	entries, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return err
	}
	var c recoveryCounts
	var pending []string
	for _, e := range entries {
		kind, _ := tempKind(e.Name())
		if !e.Type().IsRegular() || kind == "" {
			s.log.Warn("left a file the store did not make", "file", filepath.Join(s.dir, tmpName, e.Name()))
			c.unknown++
			continue
		}
		if kind == "put" {
			fi, err := s.tmp.Lstat(e.Name())
			if err != nil {
				return err
			}
			if linkCount(fi) > 1 {
				pending = append(pending, e.Name())
				continue
			}
		}
		if kind == "del" {
			pending = append(pending, e.Name())
			continue
		}
		if err := s.tmp.Remove(e.Name()); err != nil {
			return fmt.Errorf("remove unfinished put: %w", err)
		}
		c.unfinished++
	}
	if len(pending) > 0 {
		db, err := s.index(ctx)
		if err != nil {
			return err
		}
		for _, name := range pending {
			if err := s.settle(ctx, db, name, &c); err != nil {
				return err
			}
		}
	}
	s.logCounts(c)
	return nil
}

// settle deals with one temp file a kill left after a put's link or in a
// delete's transaction.
func (s *Store) settle(ctx context.Context, db *sql.DB, name string, c *recoveryCounts) error {
	kind, sum := tempKind(name)
	if kind == "put" {
		var err error
		if sum, err = hashIn(s.tmp, name); err != nil {
			return err
		}
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	held, err := blobHeld(ctx, tx, sum)
	if err != nil {
		return err
	}
	fi, berr := s.blobs.Lstat(blobName(sum))
	switch {
	case kind == "put" && !held && berr == nil && fi.Mode().IsRegular():
		// Linked, never recorded: nothing proves it garbage.
		ref, err := s.reindex(ctx, tx, sum, fi)
		if err != nil {
			return err
		}
		s.log.Warn("re-indexed the blob of a put a kill interrupted; its MIME type, file name, source and scope are lost",
			"artifact", ref.ID, "size", ref.SizeBytes)
		c.reindexed++
	case kind == "del" && held && errors.Is(berr, fs.ErrNotExist):
		if err := s.unparkBlob(name, sum); err != nil {
			return err
		}
		c.restored++
		return tx.Commit()
	case kind == "del":
		c.deletedGone++
	default:
		c.unfinished++
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if err := s.tmp.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// reindex records the blob sum as a new artifact in the "recovered"
// namespace, with what the blob proves: its sha256 and size (and its
// modification time as the creation time).
func (s *Store) reindex(ctx context.Context, tx *sql.Tx, sum string, fi fs.FileInfo) (store.Ref, error) {
	id, err := allocateID(ctx, tx, recoveredNamespace, sum, s.idPrefixLen)
	if err != nil {
		return store.Ref{}, err
	}
	ref := store.NewRef(id, sum, fi.Size(), store.PutOptions{})
	ref.Created = fi.ModTime().UTC().Round(0)
	if _, err := insertArtifact(ctx, tx, recoveredNamespace, ref); err != nil {
		return store.Ref{}, fmt.Errorf("re-index blob %s: %w", sum, err)
	}
	return ref, nil
}

// recoveredNamespace names the artifacts recovery re-indexes.
const recoveredNamespace = "recovered"

// openIndex opens the index, creating it when missing (and rebuilding it
// from the blobs, or importing a journal, when the store has some), and
// setting a damaged one aside to rebuild it when this process is alone.
func (s *Store) openIndex(ctx context.Context) (*sql.DB, error) {
	if s.readOnly {
		return s.openIndexReadOnly(ctx)
	}
	db, err := s.openIndexRWRetry(ctx)
	if err == nil || !isCorrupt(err) {
		return db, err
	}
	if err := s.setIndexAside(ctx, err); err != nil {
		return nil, err
	}
	return s.openIndexRW(ctx)
}

// openIndexRWRetry is openIndexRW, tried again while SQLite answers
// SQLITE_BUSY, up to the busy timeout: processes that open a new index at
// once race to create it and switch it to WAL, and SQLite's busy handler
// does not cover every lock taken on that path (4 processes putting into
// a new store hit it about once in a dozen runs).
func (s *Store) openIndexRWRetry(ctx context.Context) (*sql.DB, error) {
	deadline := time.Now().Add(s.busyTimeout)
	wait := 5 * time.Millisecond
	for {
		db, err := s.openIndexRW(ctx)
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			return db, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(wait):
		}
		wait = min(2*wait, 200*time.Millisecond)
	}
}

func (s *Store) openIndexRW(ctx context.Context) (*sql.DB, error) {
	f, err := openIfPresent(s.indexPath)
	if err != nil {
		return nil, err
	}
	if f != nil {
		_, herr := checkIndexHeader(f)
		f.Close()
		if herr != nil {
			return nil, herr
		}
	}
	db, v, err := openIndexDB(ctx, indexDSN(s.indexPath, s.busyTimeout, false, false))
	if err != nil {
		return nil, err
	}
	switch {
	case v == 0:
		err = s.initIndex(ctx, db)
	case v > schemaVersion:
		err = fmt.Errorf("%s has schema version %d; this mcpx reads version %d", indexName, v, schemaVersion)
	case v < schemaVersion:
		if err = s.migrateSchema(ctx, db); err == nil {
			err = s.finishAdoption(ctx, db)
		}
	default:
		err = s.finishAdoption(ctx, db)
	}
	if err == nil {
		err = s.ensureSearchSchema(ctx, db)
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// setIndexAside moves a damaged index to lost+found/ when no other process
// has the store open; else it returns ErrIndexDamaged.
func (s *Store) setIndexAside(ctx context.Context, cause error) error {
	if !s.exclusive {
		alone, err := tryFlock(s.openLock, true)
		if err != nil {
			return err
		}
		// Back to shared whatever happened: a failed conversion may have
		// dropped the shared hold.
		defer flock(ctx, s.openLock, false)
		if !alone {
			return fmt.Errorf("%w: %w", ErrIndexDamaged, cause)
		}
	}
	to := ""
	for _, suffix := range []string{"", "-wal", "-shm"} {
		from := s.indexPath + suffix
		if _, err := os.Lstat(from); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if suffix == "-shm" {
			if err := os.Remove(from); err != nil {
				return err
			}
			continue
		}
		name := "index-damaged-" + time.Now().UTC().Format("20060102T150405") + ".db" + suffix
		var err error
		if to, err = s.moveToLostFound(from, name); err != nil {
			return err
		}
	}
	s.log.Warn("set a damaged index aside; rebuilding it from the blobs", "index", s.indexPath, "error", cause, "moved_to", to)
	return nil
}

// initIndex creates the schema of a new index and fills it: from the
// journal of a version 1 store, then from every blob nothing holds.
func (s *Store) initIndex(ctx context.Context, db *sql.DB) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	tx, v, err := beginVersioned(ctx, db)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if v != 0 {
		// Another process made it while this one waited.
		if err := tx.Commit(); err != nil {
			return err
		}
		return s.finishAdoption(ctx, db)
	}
	if err := createSchema(ctx, tx); err != nil {
		return err
	}
	var c recoveryCounts
	deleted := map[string]bool{}
	adopted := false
	if fi, err := statIfExists(s.journalPath); err != nil {
		return err
	} else if fi != nil {
		n, err := s.importJournal(ctx, tx, &c, deleted, true)
		if err != nil {
			return fmt.Errorf("adopt %s: %w", journalName, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES ('journal_imported', ?)`, time.Now().UTC().Format(time.RFC3339)); err != nil {
			return err
		}
		adopted = true
		s.log.Info("adopted a journal store: imported its journal into the index", "dir", s.dir, "artifacts", n)
	}
	if s.hasBlobs() {
		if err := s.reconcile(ctx, tx, &c, deleted, nil); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	s.logCounts(c)
	if adopted {
		return s.finishAdoption(ctx, db)
	}
	return nil
}

// finishAdoption renames an imported journal to its backup name (a kill
// may have come between the import's commit and the rename).
func (s *Store) finishAdoption(ctx context.Context, db *sql.DB) error {
	fi, err := statIfExists(s.journalPath)
	if err != nil || fi == nil {
		return err
	}
	var when string
	err = db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'journal_imported'`).Scan(&when)
	if errors.Is(err, sql.ErrNoRows) {
		s.log.Warn("the store has both an index and a journal it never imported; the journal is ignored", "journal", s.journalPath)
		return nil
	}
	if err != nil {
		return err
	}
	if err := os.Rename(s.journalPath, filepath.Join(s.dir, journalImportedName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return syncDir(s.dir)
}

// reconcile makes the index agree with the blobs: artifacts whose blob is
// missing or of the wrong size are dropped, blobs in corrupt (and any
// unheld blob whose bytes do not match its name) go to lost+found/ with
// the artifacts that held them, blobs of deletes in deleted are removed,
// and every other blob nothing holds is re-indexed. The caller holds a
// write transaction and is alone with the folder.
func (s *Store) reconcile(ctx context.Context, tx *sql.Tx, c *recoveryCounts, deleted map[string]bool, corrupt []string) error {
	rows, err := tx.QueryContext(ctx, `SELECT seq, id, sha256, size FROM artifacts`)
	if err != nil {
		return err
	}
	var drop []int64
	for rows.Next() {
		var seq, size int64
		var id, sum string
		if err := rows.Scan(&seq, &id, &sum, &size); err != nil {
			rows.Close()
			return err
		}
		fi, err := s.blobs.Lstat(blobName(sum))
		if err == nil && fi.Mode().IsRegular() && fi.Size() == size {
			continue
		}
		why := "wrong size or type"
		if err != nil {
			why = err.Error()
		}
		s.log.Warn("dropped artifact whose blob is unusable", "artifact", id, "reason", why)
		drop = append(drop, seq)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, seq := range drop {
		if err := dropArtifact(ctx, tx, seq); err != nil {
			return err
		}
		c.missing++
	}
	for _, sum := range corrupt {
		got, err := hashIn(s.blobs, blobName(sum))
		if errors.Is(err, fs.ErrNotExist) || (err == nil && got == sum) {
			continue
		}
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM artifacts WHERE sha256 = ?`, sum)
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		to, err := s.moveToLostFound(filepath.Join(s.dir, blobsName, sum[:2], sum), sum)
		if err != nil {
			return err
		}
		s.log.Warn("moved a blob whose bytes do not match its name to lost+found", "sha256", sum, "hashes_to", got, "to", to, "artifacts_dropped", n)
		c.lostFound++
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM scopes WHERE seq NOT IN (SELECT seq FROM artifacts)`); err != nil {
		return err
	}
	return s.walkBlobs(func(sum, path string, fi fs.FileInfo) error {
		if sum == "" {
			s.log.Warn("left a file the store did not make", "file", path)
			c.unknown++
			return nil
		}
		held, err := blobHeld(ctx, tx, sum)
		if err != nil || held {
			return err
		}
		if deleted[sum] {
			if err := s.blobs.Remove(blobName(sum)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("remove blob of a deleted artifact: %w", err)
			}
			c.deletedGone++
			return nil
		}
		got, err := hashIn(s.blobs, blobName(sum))
		if err != nil {
			return err
		}
		if got != sum {
			to, err := s.moveToLostFound(path, sum)
			if err != nil {
				return err
			}
			s.log.Warn("moved a blob whose bytes do not match its name to lost+found", "blob", path, "sha256", got, "to", to)
			c.lostFound++
			return nil
		}
		ref, err := s.reindex(ctx, tx, sum, fi)
		if err != nil {
			return err
		}
		s.log.Warn("re-indexed a blob the index did not hold; its MIME type, file name, source and scope are lost",
			"artifact", ref.ID, "size", ref.SizeBytes)
		c.reindexed++
		return nil
	})
}

// dropArtifact removes the artifact seq from the index.
func dropArtifact(ctx context.Context, tx *sql.Tx, seq int64) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM scopes WHERE seq = ?`, seq); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `DELETE FROM artifacts WHERE seq = ?`, seq)
	return err
}

// walkBlobs calls fn for every file under blobs/: sum is its name when the
// name is a sha256 in the right shard and the file a regular one, else "".
func (s *Store) walkBlobs(fn func(sum, path string, fi fs.FileInfo) error) error {
	d, err := s.blobs.Open(".")
	if err != nil {
		return err
	}
	shards, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return err
	}
	for _, sh := range shards {
		dir := filepath.Join(s.dir, blobsName, sh.Name())
		if !sh.IsDir() || len(sh.Name()) != 2 {
			if err := fn("", dir, nil); err != nil {
				return err
			}
			continue
		}
		sd, err := s.blobs.Open(sh.Name())
		if err != nil {
			return err
		}
		files, err := sd.ReadDir(-1)
		sd.Close()
		if err != nil {
			return err
		}
		for _, f := range files {
			name, path := f.Name(), filepath.Join(dir, f.Name())
			fi, err := f.Info()
			if errors.Is(err, fs.ErrNotExist) {
				continue // deleted by a writer since ReadDir
			}
			if err != nil {
				return err
			}
			if !store.ValidSHA256(name) || name[:2] != sh.Name() || !fi.Mode().IsRegular() {
				name = ""
			}
			if err := fn(name, path, fi); err != nil {
				return err
			}
		}
	}
	return nil
}

// hashIn returns the lower-case hex sha256 of the file name in root.
func hashIn(root *os.Root, name string) (string, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|oNoFollow, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hash %s: %w", name, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// moveToLostFound renames path into lost+found/ as name (name.1, name.2,
// … when taken) and returns where it went.
func (s *Store) moveToLostFound(path, name string) (string, error) {
	dir := filepath.Join(s.dir, lostFoundName)
	if err := checkOwnFolder(s.dir, lostFoundName); err != nil {
		return "", err
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", err
	}
	for i := 0; ; i++ {
		to := filepath.Join(dir, name)
		if i > 0 {
			to += "." + strconv.Itoa(i)
		}
		if _, err := os.Lstat(to); !errors.Is(err, fs.ErrNotExist) {
			if err != nil {
				return "", err
			}
			continue
		}
		if err := os.Rename(path, to); err != nil {
			return "", err
		}
		return to, syncDir(dir)
	}
}

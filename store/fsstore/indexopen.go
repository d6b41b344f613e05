package fsstore

// Opening the index: creating it (from a journal and the blobs when the
// store has some), migrating an older one, setting a damaged one aside
// to rebuild it, or reading it without writing (see the package doc).

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// open opens the index, creating it when missing (and rebuilding it
// from the blobs, or importing a journal, when the store has some), and
// setting a damaged one aside to rebuild it when this process is alone.
func (x *index) open(ctx context.Context) (*sql.DB, error) {
	if x.readOnly {
		return x.openReadOnly(ctx)
	}
	db, err := x.openRWRetry(ctx)
	if err == nil || !isCorrupt(err) {
		return db, err
	}
	if err := x.setAside(ctx, err); err != nil {
		return nil, err
	}
	return x.openRW(ctx)
}

// openRWRetry is openRW, tried again while SQLite answers SQLITE_BUSY,
// up to the busy timeout: processes that open a new index at once race
// to create it and switch it to WAL, and SQLite's busy handler does not
// cover every lock taken on that path (4 processes putting into a new
// store hit it about once in a dozen runs).
func (x *index) openRWRetry(ctx context.Context) (*sql.DB, error) {
	deadline := time.Now().Add(x.busyTimeout)
	wait := 5 * time.Millisecond
	for {
		db, err := x.openRW(ctx)
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

func (x *index) openRW(ctx context.Context) (*sql.DB, error) {
	f, err := openIfPresent(x.path)
	if err != nil {
		return nil, err
	}
	var short error
	if f != nil {
		short, err = x.checkHeader(f)
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	db, v, err := openIndexDB(ctx, indexDSN(x.path, x.busyTimeout, false, false))
	if err != nil {
		return nil, err
	}
	if short != nil {
		if err := x.settleShort(ctx, db, short); err != nil {
			db.Close()
			return nil, err
		}
	}
	switch {
	case v == 0:
		err = x.create(ctx, db)
	case v > schemaVersion:
		err = fmt.Errorf("%s has schema version %d; this mcpx reads version %d", indexName, v, schemaVersion)
	case v < schemaVersion:
		if err = x.migrate(ctx, db); err == nil {
			err = x.finishAdoption(ctx, db)
		}
	default:
		err = x.finishAdoption(ctx, db)
	}
	if err == nil {
		err = x.ensureSearchSchema(ctx, db)
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// setAside moves a damaged index to lost+found/ when no other process
// has the store open; else it returns ErrIndexDamaged.
func (x *index) setAside(ctx context.Context, cause error) error {
	if !x.lock.exclusive {
		alone, err := x.lock.tryExclusive()
		if err != nil {
			return err
		}
		// Back to shared whatever happened: a failed conversion may have
		// dropped the shared hold.
		defer x.lock.share(ctx)
		if !alone {
			return fmt.Errorf("%w: %w", ErrIndexDamaged, cause)
		}
	}
	// Alone, no checkpoint is under way: a file that was shorter than its
	// header while one was (checkIndexHeader) is looked at again before a
	// whole index is moved aside and its ids are lost.
	if errors.Is(cause, errIndexShort) {
		f, err := openIfPresent(x.path)
		if err != nil {
			return err
		}
		if f != nil {
			_, herr := checkIndexHeader(f)
			f.Close()
			if herr == nil {
				return nil
			}
		}
	}
	to := ""
	for _, suffix := range []string{"", "-wal", "-shm"} {
		from := x.path + suffix
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
		if to, err = x.files.moveToLostFound(from, name); err != nil {
			return err
		}
	}
	x.log.Warn("set a damaged index aside; rebuilding it from the blobs", "index", x.path, "error", cause, "moved_to", to)
	return nil
}

// create creates the schema of a new index and fills it: from the
// journal of a version 1 store, then from every blob nothing holds.
func (x *index) create(ctx context.Context, db *sql.DB) error {
	var c recoveryCounts
	made, adopted := true, false
	err := x.writeVersioned(ctx, db, func(tx *sql.Tx, v int) error {
		if v != 0 {
			made = false // another process made it while this one waited
			return nil
		}
		if err := createSchema(ctx, tx); err != nil {
			return err
		}
		deleted := map[string]bool{}
		if fi, err := statIfExists(x.journalPath); err != nil {
			return err
		} else if fi != nil {
			n, err := x.rebuild.importJournal(ctx, tx, &c, deleted, true)
			if err != nil {
				return fmt.Errorf("adopt %s: %w", journalName, err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES ('journal_imported', ?)`, time.Now().UTC().Format(time.RFC3339)); err != nil {
				return err
			}
			adopted = true
			x.log.Info("adopted a journal store: imported its journal into the index", "dir", x.dir, "artifacts", n)
		}
		if x.files.hasBlobs() {
			return x.rebuild.reconcile(ctx, tx, &c, deleted, nil)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if made {
		x.rebuild.logCounts(c)
	}
	if !made || adopted {
		return x.finishAdoption(ctx, db)
	}
	return nil
}

// finishAdoption renames an imported journal to its backup name (a kill
// may have come between the import's commit and the rename).
func (x *index) finishAdoption(ctx context.Context, db *sql.DB) error {
	fi, err := statIfExists(x.journalPath)
	if err != nil || fi == nil {
		return err
	}
	var when string
	err = db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'journal_imported'`).Scan(&when)
	if errors.Is(err, sql.ErrNoRows) {
		x.log.Warn("the store has both an index and a journal it never imported; the journal is ignored", "journal", x.journalPath)
		return nil
	}
	if err != nil {
		return err
	}
	if err := os.Rename(x.journalPath, filepath.Join(x.dir, journalImportedName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return syncDir(x.dir)
}

// migrate brings an index of an older version up to schemaVersion, in
// one transaction (another process may have done it meanwhile: the
// version is read again inside it).
func (x *index) migrate(ctx context.Context, db *sql.DB) error {
	from := schemaVersion
	err := x.writeVersioned(ctx, db, func(tx *sql.Tx, v int) error {
		if v >= schemaVersion {
			return nil
		}
		for from = v; v < schemaVersion; v++ {
			for _, q := range migrations[v+1] {
				if _, err := tx.ExecContext(ctx, q); err != nil {
					return fmt.Errorf("migrate index to version %d: %w", v+1, err)
				}
			}
		}
		_, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", schemaVersion))
		return err
	})
	if err == nil && from < schemaVersion {
		x.log.Info("migrated the index", "index", x.path, "from_version", from, "to_version", schemaVersion)
	}
	return err
}

// ensureSearchSchema makes the search tables when the index lacks them.
func (x *index) ensureSearchSchema(ctx context.Context, db *sql.DB) error {
	var n int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE name = 'artifacts_delete_search'`).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	return x.write(ctx, db, func(tx *sql.Tx) error {
		for _, q := range searchSchema {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("create search index: %w", err)
			}
		}
		return nil
	})
}

// repair runs during a repair, with the folder to itself: it sets a
// damaged index aside (rebuild: opening the index then rebuilds it) or
// reconciles a sound one with the blobs, moving those in corrupt to
// lost+found/.
func (x *index) repair(ctx context.Context, rebuild bool, corrupt []string) error {
	if rebuild {
		if _, err := os.Lstat(x.path); err == nil {
			if err := x.setAside(ctx, errIndexDamaged); err != nil {
				return err
			}
		}
		_, err := x.db(ctx)
		return err
	}
	db, err := x.db(ctx)
	if err != nil {
		return err
	}
	var c recoveryCounts
	if err := x.write(ctx, db, func(tx *sql.Tx) error { return x.rebuild.reconcile(ctx, tx, &c, nil, corrupt) }); err != nil {
		return err
	}
	x.rebuild.logCounts(c)
	return nil
}

// openReadOnly opens the index for reading: nil when the store has none.
// A journal store not yet adopted is read into a private in-memory index;
// an index in a folder this process cannot write is opened immutable
// (SQLite cannot make its shared-memory file there).
func (x *index) openReadOnly(ctx context.Context) (*sql.DB, error) {
	if !x.files.present() {
		return nil, nil
	}
	f, err := openIfPresent(x.path)
	if err != nil {
		return nil, err
	}
	if f == nil {
		if fi, err := statIfExists(x.journalPath); err != nil || fi == nil {
			return nil, err
		}
		return x.journalInMemory(ctx)
	}
	short, err := x.checkHeader(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrIndexDamaged, err)
	}
	// A reader in WAL mode makes -wal and -shm when they are missing,
	// which a read-only open must not. They are missing only when no
	// connection has the index open; then nothing is in a WAL and the
	// file can be read immutable (db drops that handle once a writer
	// appears). The same goes for a folder this process cannot write.
	wal, err := statIfExists(x.path + "-wal")
	if err != nil {
		return nil, err
	}
	immutable := wal == nil || !writable(x.dir)
	x.immutable = immutable
	db, v, err := openIndexDB(ctx, indexDSN(x.path, x.busyTimeout, true, immutable))
	if err != nil {
		return nil, err
	}
	if short != nil {
		if err := x.settleShort(ctx, db, short); err != nil {
			db.Close()
			return nil, fmt.Errorf("%w: %w", ErrIndexDamaged, err)
		}
	}
	if v == 0 {
		// Being created by a writer right now: nothing in it yet.
		db.Close()
		return nil, nil
	}
	// An index older than this mcpx lacks columns; a read-only store
	// reads it without them (the next read-write open migrates).
	x.oldVersion.Store(0)
	if v < schemaVersion {
		x.oldVersion.Store(int32(v))
	}
	return db, nil
}

// journalInMemory reads the journal of a store not yet adopted into an
// in-memory index.
func (x *index) journalInMemory(ctx context.Context) (*sql.DB, error) {
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
		_, err = x.rebuild.importJournal(ctx, tx, &c, map[string]bool{}, false)
		if c.badLines > 0 || c.tornTail {
			x.log.Warn("the journal is damaged; a read-only open may list fewer artifacts than the store holds: run 'mcpx artifacts fsck'", "journal", x.journalPath)
		}
	}
	if err == nil {
		err = tx.Commit()
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	x.log.Info("read a journal store (not yet adopted) into memory; a read-write open adopts it", "journal", x.journalPath)
	return db, nil
}

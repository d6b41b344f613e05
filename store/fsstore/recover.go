package fsstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/store"
)

// recovery settles what a kill or damage left: the temp files of calls a
// kill cut short, and the rows an index needs to agree with the blobs
// (re-indexing what it lacks, importing a version 1 journal). It writes
// only inside transactions its caller, the index, holds.
type recovery struct {
	dir, journalPath string
	idPrefixLen      int
	files            *blobFolders
	log              hclog.Logger
}

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

func (r *recovery) logCounts(c recoveryCounts) {
	if c.damaged() {
		r.log.Warn("recovered a damaged store: no blob was deleted",
			"dir", r.dir,
			"damaged_journal_lines", c.badLines, "torn_last_line", c.tornTail,
			"artifacts_without_blob", c.missing,
			"blobs_reindexed", c.reindexed, "blobs_moved_to_lost_found", c.lostFound,
			"files_left_alone", c.unknown)
	}
	if c.unfinished > 0 || c.deletedGone > 0 || c.restored > 0 {
		r.log.Info("cleaned up after an interrupted process", "dir", r.dir,
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
func (r *recovery) recoverTmp(ctx context.Context, idx *index) error {
	entries, err := r.files.temps()
	if err != nil {
		return err
	}
	var c recoveryCounts
	var pending []string
	for _, e := range entries {
		kind, _ := tempKind(e.Name())
		if !e.Type().IsRegular() || kind == "" {
			r.log.Warn("left a file the store did not make", "file", filepath.Join(r.dir, tmpName, e.Name()))
			c.unknown++
			continue
		}
		if kind == "put" {
			fi, err := r.files.statTemp(e.Name())
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
		if err := r.files.removeTemp(e.Name()); err != nil {
			return fmt.Errorf("remove unfinished put: %w", err)
		}
		c.unfinished++
	}
	if len(pending) > 0 {
		db, err := idx.db(ctx)
		if err != nil {
			return err
		}
		for _, name := range pending {
			if err := r.settle(ctx, idx, db, name, &c); err != nil {
				return err
			}
		}
	}
	r.logCounts(c)
	return nil
}

// settle deals with one temp file a kill left after a put's link or in a
// delete's transaction.
func (r *recovery) settle(ctx context.Context, idx *index, db *sql.DB, name string, c *recoveryCounts) error {
	kind, sum := tempKind(name)
	if kind == "put" {
		var err error
		if sum, err = r.files.hashTemp(name); err != nil {
			return err
		}
	}
	remove := true
	err := idx.write(ctx, db, func(tx *sql.Tx) error {
		held, err := blobHeld(ctx, tx, sum)
		if err != nil {
			return err
		}
		fi, berr := r.files.stat(sum)
		switch {
		case kind == "put" && !held && berr == nil && fi.Mode().IsRegular():
			// Linked, never recorded: nothing proves it garbage.
			ref, err := r.reindex(ctx, tx, sum, fi)
			if err != nil {
				return err
			}
			r.log.Warn("re-indexed the blob of a put a kill interrupted; its MIME type, file name, source and scope are lost",
				"artifact", ref.ID, "size", ref.SizeBytes)
			c.reindexed++
		case kind == "del" && held && errors.Is(berr, fs.ErrNotExist):
			if err := r.files.unpark(name, sum); err != nil {
				return err
			}
			c.restored++
			remove = false
		case kind == "del":
			c.deletedGone++
		default:
			c.unfinished++
		}
		return nil
	})
	if err != nil || !remove {
		return err
	}
	return r.files.removeTemp(name)
}

// reindex records the blob sum as a new artifact in the "recovered"
// namespace, with what the blob proves: its sha256 and size (and its
// modification time as the creation time).
func (r *recovery) reindex(ctx context.Context, tx *sql.Tx, sum string, fi fs.FileInfo) (store.Ref, error) {
	id, err := allocateID(ctx, tx, recoveredNamespace, sum, r.idPrefixLen)
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

// reconcile makes the index agree with the blobs: artifacts whose blob is
// missing or of the wrong size are dropped, blobs in corrupt (and any
// unheld blob whose bytes do not match its name) go to lost+found/ with
// the artifacts that held them, blobs of deletes in deleted are removed,
// and every other blob nothing holds is re-indexed. The caller holds a
// write transaction and is alone with the folder.
func (r *recovery) reconcile(ctx context.Context, tx *sql.Tx, c *recoveryCounts, deleted map[string]bool, corrupt []string) error {
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
		fi, err := r.files.stat(sum)
		if err == nil && fi.Mode().IsRegular() && fi.Size() == size {
			continue
		}
		why := "wrong size or type"
		if err != nil {
			why = err.Error()
		}
		r.log.Warn("dropped artifact whose blob is unusable", "artifact", id, "reason", why)
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
		got, err := r.files.hashBlob(sum)
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
		to, err := r.files.moveToLostFound(filepath.Join(r.dir, blobsName, sum[:2], sum), sum)
		if err != nil {
			return err
		}
		r.log.Warn("moved a blob whose bytes do not match its name to lost+found", "sha256", sum, "hashes_to", got, "to", to, "artifacts_dropped", n)
		c.lostFound++
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM scopes WHERE seq NOT IN (SELECT seq FROM artifacts)`); err != nil {
		return err
	}
	return r.files.walk(func(sum, path string, fi fs.FileInfo) error {
		if sum == "" {
			r.log.Warn("left a file the store did not make", "file", path)
			c.unknown++
			return nil
		}
		held, err := blobHeld(ctx, tx, sum)
		if err != nil || held {
			return err
		}
		if deleted[sum] {
			if err := r.files.remove(sum); err != nil {
				return fmt.Errorf("remove blob of a deleted artifact: %w", err)
			}
			c.deletedGone++
			return nil
		}
		got, err := r.files.hashBlob(sum)
		if err != nil {
			return err
		}
		if got != sum {
			to, err := r.files.moveToLostFound(path, sum)
			if err != nil {
				return err
			}
			r.log.Warn("moved a blob whose bytes do not match its name to lost+found", "blob", path, "sha256", got, "to", to)
			c.lostFound++
			return nil
		}
		ref, err := r.reindex(ctx, tx, sum, fi)
		if err != nil {
			return err
		}
		r.log.Warn("re-indexed a blob the index did not hold; its MIME type, file name, source and scope are lost",
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

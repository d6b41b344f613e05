package fsstore

// Writes: a put's temp file, link and transaction, and a delete's (see
// the package doc).

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/internal/putio"
)

// writer puts, annotates and deletes artifacts.
type writer struct {
	dir         string // the store's folder, for the paths logs name
	readOnly    bool
	idPrefixLen int
	log         hclog.Logger
	hook        *hook
	idx         *index
	files       *blobFolders
	reads       *accessLog
	text        *indexer
}

// tempName returns a new name for a temp file: prefix and random digits.
func tempName(prefix string) string {
	var b [8]byte
	rand.Read(b[:])
	return prefix + strconv.FormatUint(binary.LittleEndian.Uint64(b[:])>>1, 10)
}

// put streams r into a temp file while hashing it, then commits it.
func (w *writer) put(ctx context.Context, r io.Reader, o store.PutOptions) (store.Ref, error) {
	ns := store.SanitizeNamespace(o.Namespace)
	w.idx.wmu.enter()
	defer w.idx.wmu.leave()
	if w.idx.isClosed() {
		return store.Ref{}, fmt.Errorf("fsstore: put[%s]: %w", ns, store.ErrClosed)
	}
	if w.readOnly {
		return store.Ref{}, fmt.Errorf("fsstore: put[%s]: %w", ns, ErrReadOnly)
	}
	if err := ctx.Err(); err != nil {
		return store.Ref{}, fmt.Errorf("fsstore: put[%s]: %w", ns, err)
	}
	w.idx.prefetch(ctx)
	name := tempName("put-")
	tmp, err := w.files.createTemp(name)
	if err != nil {
		return store.Ref{}, fmt.Errorf("fsstore: put[%s]: %w", ns, err)
	}
	defer func() {
		tmp.Close()
		if err := w.files.removeTemp(name); err != nil {
			w.log.Warn("could not remove temp file", "file", filepath.Join(w.dir, tmpName, name), "error", err)
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
	w.hook.at("put:synced")
	ref, err := w.commit(ctx, name, n, sum, ns, o)
	if err != nil {
		return store.Ref{}, fmt.Errorf("fsstore: put[%s] sha256[%s]: %w", ns, sum, err)
	}
	return ref, nil
}

// commit records the synced temp file tmpName as an artifact.
func (w *writer) commit(ctx context.Context, tmpName string, n int64, sum, ns string, o store.PutOptions) (store.Ref, error) {
	db, err := w.idx.db(ctx)
	if err != nil {
		return store.Ref{}, err
	}
	linked, err := w.files.place(tmpName, sum)
	if err != nil {
		return store.Ref{}, err
	}
	w.hook.at("put:linked")
	var ref store.Ref
	err = w.idx.write(ctx, db, func(tx *sql.Tx) (err error) {
		ref, err = w.record(ctx, tx, tmpName, n, sum, ns, o)
		return err
	})
	if err != nil {
		if linked {
			w.dropUnheld(db, sum)
		}
		return store.Ref{}, err
	}
	w.hook.at("put:committed")
	return ref, nil
}

// record is Put's write transaction: the artifact of sum in ns gains o's
// scope, or a new one is made.
func (w *writer) record(ctx context.Context, tx *sql.Tx, tmpName string, n int64, sum, ns string, o store.PutOptions) (store.Ref, error) {
	seq, ref, err := scanRef(tx.QueryRowContext(ctx, `SELECT `+w.idx.refColumns()+`, `+scopeColumns+`
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
		id, err := allocateID(ctx, tx, ns, sum, w.idPrefixLen)
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
	if _, err := w.files.stat(sum); errors.Is(err, fs.ErrNotExist) {
		if _, err := w.files.place(tmpName, sum); err != nil {
			return store.Ref{}, err
		}
	} else if err != nil {
		return store.Ref{}, err
	}
	w.reads.carry(ctx, tx)
	return ref, nil
}

// dropUnheld removes the blob sum that a failed put linked, unless an
// artifact holds it (another put of the same bytes may have committed).
func (w *writer) dropUnheld(db *sql.DB, sum string) {
	ctx := context.Background()
	err := w.idx.write(ctx, db, func(tx *sql.Tx) error {
		if held, err := blobHeld(ctx, tx, sum); err != nil || held {
			return nil
		}
		return w.files.remove(sum)
	})
	if err != nil {
		w.log.Warn("could not remove the blob of a failed put", "sha256", sum, "error", err)
	}
}

// delete removes the artifact, and its blob when no other id holds it.
func (w *writer) delete(ctx context.Context, id string) error {
	if w.readOnly {
		return fmt.Errorf("fsstore: artifact[%s]: %w", store.QuoteID(id), ErrReadOnly)
	}
	db, err := w.idx.forID(ctx, id)
	if err != nil {
		return err
	}
	if err := w.deleteIn(ctx, db, id); err != nil {
		return fmt.Errorf("fsstore: artifact[%s]: %w", id, err)
	}
	return nil
}

func (w *writer) deleteIn(ctx context.Context, db *sql.DB, id string) error {
	w.idx.wmu.Lock()
	defer w.idx.wmu.Unlock()
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
		return w.idx.queryErr(err)
	}
	parked, err := removeArtifact(ctx, tx, w.files, seq, sum)
	if err != nil {
		return err
	}
	w.hook.at("delete:parked")
	if err := tx.Commit(); err != nil {
		if parked != "" {
			if uerr := w.files.unpark(parked, sum); uerr != nil {
				w.log.Warn("could not put back the blob of a failed delete", "file", parked, "error", uerr)
			}
		}
		return err
	}
	w.hook.at("delete:committed")
	if parked != "" {
		if err := w.files.removeTemp(parked); err != nil {
			// Removed by the next recovering Open; the delete is done.
			w.log.Warn("could not remove blob", "artifact", id, "error", err)
		}
	}
	return nil
}

// removeArtifact deletes the artifact seq (whose blob is sum) in tx, and
// parks its blob in tmp/ when no other artifact holds it; it returns the
// parked name ("" when none). The caller commits, then removes the parked
// blob, or puts it back (unpark) when the commit fails.
func removeArtifact(ctx context.Context, tx *sql.Tx, files *blobFolders, seq int64, sum string) (string, error) {
	if err := dropArtifact(ctx, tx, seq); err != nil {
		return "", err
	}
	held, err := blobHeld(ctx, tx, sum)
	if err != nil || held {
		return "", err
	}
	// Parked, not removed, until the commit: a kill before it leaves the
	// artifact recorded and its blob in tmp/, put back by recovery.
	return files.park(sum, tempName("del-"+sum+"-"))
}

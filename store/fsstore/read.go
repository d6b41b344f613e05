package fsstore

// Reads: lookups in the index (one indexed query each, whatever the store
// holds) and the blob files they name.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"time"

	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/internal/catalog"
)

// reader answers Get, Stat, InScope, Owned, Exists, List and LastAccess.
type reader struct {
	pageSize int
	idx      *index
	files    *blobFolders
	reads    *accessLog
}

// get opens the artifact's blob file in place, sectioned to rng, and
// notes the read.
func (r *reader) get(ctx context.Context, id string, rng *store.Range) (io.ReadCloser, store.Ref, error) {
	seq, rc, ref, err := r.openRange(ctx, id, rng)
	if err != nil {
		return nil, store.Ref{}, err
	}
	r.reads.touch(seq)
	return rc, ref, nil
}

// open is get of the whole blob that records no read: the indexer's
// reading of an artifact's text is not a use that lru retention counts.
func (r *reader) open(ctx context.Context, id string) (io.ReadCloser, store.Ref, error) {
	_, rc, ref, err := r.openRange(ctx, id, nil)
	return rc, ref, err
}

// openRange opens rng of artifact id's blob; it returns the artifact's
// seq too.
func (r *reader) openRange(ctx context.Context, id string, rng *store.Range) (int64, io.ReadCloser, store.Ref, error) {
	seq, ref, err := r.statSeq(ctx, id)
	if err != nil {
		return 0, nil, store.Ref{}, err
	}
	off, n, err := catalog.Bounds(rng, ref.SizeBytes)
	if err != nil {
		return 0, nil, store.Ref{}, fmt.Errorf("fsstore: artifact[%s]: %w", id, err)
	}
	f, err := r.files.openBlob(ref.SHA256)
	if errors.Is(err, fs.ErrNotExist) {
		// Deleted by another process since the lookup.
		return 0, nil, store.Ref{}, fmt.Errorf("fsstore: artifact[%s]: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return 0, nil, store.Ref{}, fmt.Errorf("fsstore: artifact[%s]: %w", id, err)
	}
	fi, err := f.Stat()
	if err == nil && fi.Size() != ref.SizeBytes {
		err = fmt.Errorf("blob %s has %d bytes, the index says %d", ref.SHA256, fi.Size(), ref.SizeBytes)
	}
	if err != nil {
		f.Close()
		return 0, nil, store.Ref{}, fmt.Errorf("fsstore: artifact[%s]: %w", id, err)
	}
	// The open file stays readable to its end even if gc removes the
	// blob now (Unix keeps an unlinked file's bytes while it is open).
	return seq, &blobReader{SectionReader: io.NewSectionReader(f, off, n), f: f}, ref, nil
}

// statSeq returns the artifact's seq and ref (with its first scope).
func (r *reader) statSeq(ctx context.Context, id string) (int64, store.Ref, error) {
	db, err := r.idx.forID(ctx, id)
	if err != nil {
		return 0, store.Ref{}, err
	}
	seq, ref, err := scanRef(db.QueryRowContext(ctx, `SELECT `+r.idx.refColumns()+`, `+scopeColumns+`
		FROM artifacts a JOIN scopes s ON s.seq = a.seq WHERE a.id = ? ORDER BY s.ord LIMIT 1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return 0, store.Ref{}, fmt.Errorf("fsstore: artifact[%s]: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return 0, store.Ref{}, fmt.Errorf("fsstore: artifact[%s]: %w", id, r.idx.queryErr(err))
	}
	return seq, ref, nil
}

// exists reports whether the artifact is stored.
func (r *reader) exists(ctx context.Context, id string) (bool, error) {
	_, _, err := r.statSeq(ctx, id)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, store.ErrNotFound):
		return false, nil
	}
	return false, err
}

// inScope reports whether the artifact was put under a scope that scope
// contains.
func (r *reader) inScope(ctx context.Context, id string, scope store.Scope) (bool, error) {
	db, err := r.idx.forID(ctx, id)
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
		return false, fmt.Errorf("fsstore: artifact[%s]: %w", id, r.idx.queryErr(err))
	}
	return in, nil
}

// owned returns the artifact as owner holds it: one indexed lookup of
// its scope rows.
func (r *reader) owned(ctx context.Context, id string, owner store.Owner) ([]store.Ref, error) {
	db, err := r.idx.forID(ctx, id)
	if err != nil {
		return nil, err
	}
	rows, err := db.QueryContext(ctx, `SELECT `+r.idx.refColumns()+`, `+scopeColumns+`
		FROM artifacts a JOIN scopes s ON s.seq = a.seq
		WHERE a.id = ? AND s.tenant_id = ? AND s.user_id = ? ORDER BY s.ord`, id, owner.TenantID, owner.UserID)
	if err != nil {
		return nil, fmt.Errorf("fsstore: artifact[%s]: %w", id, r.idx.queryErr(err))
	}
	defer rows.Close()
	var refs []store.Ref
	for rows.Next() {
		_, ref, err := scanRef(rows)
		if err != nil {
			return nil, fmt.Errorf("fsstore: artifact[%s]: %w", id, r.idx.queryErr(err))
		}
		refs = append(refs, ref)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("fsstore: artifact[%s]: %w", id, r.idx.queryErr(err))
	}
	if len(refs) == 0 {
		if ok, err := r.exists(ctx, id); err != nil || !ok {
			if err == nil {
				err = fmt.Errorf("fsstore: artifact[%s]: %w", id, store.ErrNotFound)
			}
			return nil, err
		}
	}
	return refs, nil
}

// lastAccess returns when artifact id was last read (or put).
func (r *reader) lastAccess(ctx context.Context, id string) (time.Time, error) {
	db, err := r.idx.db(ctx)
	if err != nil {
		return time.Time{}, err
	}
	if db == nil {
		return time.Time{}, fmt.Errorf("fsstore: artifact[%s]: %w", id, store.ErrNotFound)
	}
	var la int64
	err = db.QueryRowContext(ctx, `SELECT last_access_at FROM artifacts WHERE id = ?`, id).Scan(&la)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, fmt.Errorf("fsstore: artifact[%s]: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return time.Time{}, r.idx.queryErr(err)
	}
	return time.Unix(0, la).UTC(), nil
}

// list returns one page of the refs in scope, in order, with each one's
// last access when withAccess.
func (r *reader) list(ctx context.Context, scope store.Scope, cursor string, order store.Order, withAccess bool) ([]store.Ref, []time.Time, string, error) {
	var refs []store.Ref
	var access []time.Time
	next, err := r.each(ctx, scope, cursor, order, func(ref store.Ref, la time.Time) error {
		refs = append(refs, ref)
		if withAccess {
			access = append(access, la)
		}
		return nil
	})
	if err != nil {
		return nil, nil, "", err
	}
	return refs, access, next, nil
}

// each hands fn the refs of one page in scope, in order, with each one's
// last access, as the query yields them, and returns the next page's
// cursor. An error from fn stops the page and is returned unwrapped.
func (r *reader) each(ctx context.Context, scope store.Scope, cursor string, order store.Order, fn func(store.Ref, time.Time) error) (string, error) {
	var fnErr error
	next, err := r.eachPage(ctx, scope, cursor, order, func(ref store.Ref, la time.Time) bool {
		fnErr = fn(ref, la)
		return fnErr == nil
	})
	if fnErr != nil {
		return "", fnErr
	}
	if err != nil {
		return "", fmt.Errorf("fsstore: list: %w", err)
	}
	return next, nil
}

// eachPage runs the page's query and hands fn each row as it is read, so
// that the first row reaches the caller before the rest are read; fn
// returning false stops it.
func (r *reader) eachPage(ctx context.Context, scope store.Scope, cursor string, order store.Order, fn func(store.Ref, time.Time) bool) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	after, err := decodeCursor(cursor, order)
	if err != nil {
		return "", err
	}
	db, err := r.idx.db(ctx)
	if err != nil {
		return "", err
	}
	if db == nil {
		return "", nil
	}
	cond, args := scopeFilter(scope)
	q := `SELECT ` + r.idx.refColumns() + `, ` + scopeColumns + `, MIN(s.ord), a.last_access_at
		FROM scopes s JOIN artifacts a ON a.seq = s.seq WHERE `
	if order == store.NewestFirst {
		if after == 0 {
			after = 1<<63 - 1
		}
		q += `s.seq < ?` + cond + ` GROUP BY s.seq ORDER BY s.seq DESC LIMIT ?`
	} else {
		q += `s.seq > ?` + cond + ` GROUP BY s.seq ORDER BY s.seq LIMIT ?`
	}
	rows, err := db.QueryContext(ctx, q, append(append([]any{after}, args...), r.pageSize+1)...)
	if err != nil {
		return "", r.idx.queryErr(err)
	}
	defer rows.Close()
	var last int64
	n := 0
	next := ""
	for rows.Next() {
		if n == r.pageSize {
			next = encodeCursor(last, order)
			break
		}
		var ord, la int64
		seq, ref, err := scanRef(rows, &ord, &la)
		if err != nil {
			return "", r.idx.queryErr(err)
		}
		if !fn(ref, time.Unix(0, la).UTC()) {
			return "", nil
		}
		n++
		last = seq
	}
	if err := rows.Err(); err != nil {
		return "", r.idx.queryErr(err)
	}
	return next, nil
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

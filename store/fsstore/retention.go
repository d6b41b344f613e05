package fsstore

// Retention: gc in SQL over the index, DropScope, quotas at put, and the
// batched recording of reads (LRU order).

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/mcpx-dev/mcpx/store"
)

// touchFlushInterval is how long a read's new last access waits in memory
// before it is written, together with every other read of that span, in
// one transaction: reading never waits for the index's write lock.
const touchFlushInterval = 2 * time.Second

// collectBatch is how many artifacts one gc transaction removes: short
// transactions keep the write lock free for puts between them. A var so
// that tests can cross batches with few artifacts.
var collectBatch = 1000

var _ store.Collector = (*Store)(nil)
var _ store.AccessLister = (*Store)(nil)

// touch records that the artifact seq was read now; flushTouches writes it.
func (s *Store) touch(seq int64) {
	if s.readOnly {
		return
	}
	s.tmu.Lock()
	defer s.tmu.Unlock()
	if s.touched == nil {
		s.touched = make(map[int64]int64)
	}
	s.touched[seq] = time.Now().UnixNano()
	if !s.touchPending {
		s.touchPending = true
		time.AfterFunc(touchFlushInterval, func() {
			s.tmu.Lock()
			s.touchPending = false
			s.tmu.Unlock()
			s.flushTouches(context.Background(), true)
		})
	}
}

// flushTouches writes the recorded reads in one UPDATE transaction. timed
// is set for the timer's flush, which does nothing once the store closed
// (Close flushed itself).
func (s *Store) flushTouches(ctx context.Context, timed bool) {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	if !s.hasTouches() {
		return
	}
	s.mu.Lock()
	db, closed := s.db, s.closed
	s.mu.Unlock()
	if db == nil || (closed && timed) {
		return
	}
	if err := s.writeTouches(ctx, db); err != nil {
		// Only LRU order is lost: the artifacts are untouched.
		s.log.Warn("could not record artifact reads", "error", err)
	}
}

func (s *Store) hasTouches() bool {
	s.tmu.Lock()
	defer s.tmu.Unlock()
	return len(s.touched) > 0
}

func (s *Store) writeTouches(ctx context.Context, db *sql.DB) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := s.touchesIn(ctx, tx); err != nil {
		return err
	}
	return tx.Commit()
}

// touchesIn writes the reads recorded so far inside tx, so that a put or
// an annotation carries them in its own commit rather than the timer
// paying one more (a CLI run that stores and inspects an artifact commits
// once less). A failure loses LRU order only and is logged, not returned:
// the write that carries them goes on.
func (s *Store) touchesIn(ctx context.Context, tx *sql.Tx) error {
	s.tmu.Lock()
	m := s.touched
	s.touched = nil
	s.tmu.Unlock()
	if len(m) == 0 {
		return nil
	}
	st, err := tx.PrepareContext(ctx, `UPDATE artifacts SET last_access_at = ? WHERE seq = ? AND last_access_at < ?`)
	if err != nil {
		return err
	}
	defer st.Close()
	for seq, at := range m {
		if _, err := st.ExecContext(ctx, at, seq, at); err != nil {
			return fmt.Errorf("record %d artifact reads: %w", len(m), err)
		}
	}
	return nil
}

// checkQuota refuses (store.ErrQuotaExceeded) a put that would take its
// session or trace past q. seq is the artifact when it exists already (0
// for new content): a session that holds it already gains nothing.
func checkQuota(ctx context.Context, tx *sql.Tx, q store.Quota, sc store.Scope, seq, size int64) error {
	usage := func(col, v string) (store.Usage, error) {
		u := store.Usage{Scoped: v != ""}
		if !u.Scoped {
			return u, nil
		}
		var in bool
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM scopes WHERE `+col+` = ? AND seq = ?)`, v, seq).Scan(&in); err != nil {
			return u, err
		}
		if in {
			return store.Usage{}, nil
		}
		err := tx.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(size), 0) FROM artifacts
			WHERE seq IN (SELECT seq FROM scopes WHERE `+col+` = ?)`, v).Scan(&u.Count, &u.Bytes)
		return u, err
	}
	session, err := usage("session_id", sc.SessionID)
	if err != nil {
		return err
	}
	trace, err := usage("trace_id", sc.TraceID)
	if err != nil {
		return err
	}
	return q.CheckQuota(size, session, trace)
}

// Collect applies policy (see store.Collector). It chooses its victims in
// a few set-based statements over the index into a temporary table (so
// memory does not grow with the store), then removes them in short
// transactions of collectBatch, each as Delete does: rows deleted and
// unheld blobs parked in tmp/, commit, then the parked blobs removed. An
// artifact read (lru) or removed by another collector since it was chosen
// is skipped.
func (s *Store) Collect(ctx context.Context, policy store.Retention, o store.CollectOptions) (store.CollectReport, error) {
	rep := store.CollectReport{DryRun: o.DryRun}
	if err := policy.Check(); err != nil {
		return rep, fmt.Errorf("fsstore: collect: %w", err)
	}
	if s.readOnly && !o.DryRun {
		return rep, fmt.Errorf("fsstore: collect: %w", ErrReadOnly)
	}
	db, err := s.index(ctx)
	if err != nil || db == nil {
		return rep, wrapErr("collect", err)
	}
	if !s.readOnly {
		s.flushTouches(ctx, false)
	}
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return rep, wrapErr("collect", err)
	}
	defer conn.Close()
	if err := chooseVictims(ctx, conn, policy, now); err != nil {
		return rep, wrapErr("collect", s.queryErr(err))
	}
	defer conn.ExecContext(context.Background(), `DROP TABLE IF EXISTS temp.victims`)
	if o.DryRun {
		rows, err := conn.QueryContext(ctx, `SELECT a.id, a.size, v.why FROM temp.victims v JOIN artifacts a ON a.seq = v.seq ORDER BY v.seq`)
		if err != nil {
			return rep, wrapErr("collect", s.queryErr(err))
		}
		defer rows.Close()
		for rows.Next() {
			var r store.Removal
			if err := rows.Scan(&r.ID, &r.Bytes, &r.Why); err != nil {
				return rep, wrapErr("collect", err)
			}
			rep.Add(r, o.Each)
		}
		return rep, wrapErr("collect", rows.Err())
	}
	for after := int64(0); ; {
		batch, err := nextVictims(ctx, conn, after)
		if err != nil {
			return rep, wrapErr("collect", s.queryErr(err))
		}
		if len(batch) == 0 {
			return rep, nil
		}
		after = batch[len(batch)-1].seq
		if err := s.removeVictims(ctx, conn, batch, &rep, o.Each); err != nil {
			return rep, wrapErr("collect", err)
		}
	}
}

func wrapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("fsstore: %s: %w", op, err)
}

// chooseVictims fills temp.victims (seq, why, seen: the order column when
// chosen) with what policy removes at now, rule by rule; a rule does not
// count what an earlier one chose.
func chooseVictims(ctx context.Context, conn *sql.Conn, p store.Retention, now time.Time) error {
	col := "created_at"
	if p.ByAccess() {
		col = "last_access_at"
	}
	stmts := []struct {
		q    string
		args []any
		on   bool
	}{
		{`DROP TABLE IF EXISTS temp.victims`, nil, true},
		{`CREATE TEMP TABLE victims (seq INTEGER PRIMARY KEY, why TEXT NOT NULL, seen INTEGER NOT NULL)`, nil, true},
		{`INSERT OR IGNORE INTO temp.victims SELECT seq, 'ttl', ` + col + ` FROM artifacts WHERE ` + col + ` < ?`,
			[]any{now.Add(-time.Duration(p.TTL)).UnixNano()}, p.TTL > 0},
		{`INSERT OR IGNORE INTO temp.victims SELECT seq, 'max_artifact_bytes', ` + col + ` FROM artifacts WHERE size > ?`,
			[]any{p.MaxArtifactBytes}, p.MaxArtifactBytes > 0},
	}
	if p.Evicts() {
		for _, g := range []struct {
			col, name          string
			maxCount, maxBytes int64
		}{
			{"session_id", "session", p.MaxArtifactsPerSession, p.MaxSessionBytes},
			{"trace_id", "trace", p.MaxArtifactsPerTrace, p.MaxTraceBytes},
		} {
			// Newest (or most recently read) first: what lies past the
			// count, or past the bytes, goes.
			stmts = append(stmts, struct {
				q    string
				args []any
				on   bool
			}{`INSERT OR IGNORE INTO temp.victims
				SELECT seq, CASE WHEN ? > 0 AND rn > ? THEN 'max_artifacts_per_` + g.name + ` ` + g.name + `=' ELSE 'max_` + g.name + `_bytes ` + g.name + `=' END || k, o
				FROM (SELECT g.seq, g.k, a.` + col + ` AS o,
					ROW_NUMBER() OVER w AS rn, SUM(a.size) OVER w AS cum
					FROM (SELECT DISTINCT ` + g.col + ` AS k, seq FROM scopes WHERE ` + g.col + ` != '') g
					JOIN artifacts a ON a.seq = g.seq
					WHERE g.seq NOT IN (SELECT seq FROM temp.victims)
					WINDOW w AS (PARTITION BY g.k ORDER BY a.` + col + ` DESC, a.seq DESC ROWS UNBOUNDED PRECEDING))
				WHERE (? > 0 AND rn > ?) OR (? > 0 AND cum > ?)`,
				[]any{g.maxCount, g.maxCount, g.maxCount, g.maxCount, g.maxBytes, g.maxBytes},
				g.maxCount > 0 || g.maxBytes > 0})
		}
		stmts = append(stmts, struct {
			q    string
			args []any
			on   bool
		}{`INSERT OR IGNORE INTO temp.victims
			SELECT seq, 'max_bytes', o FROM (SELECT seq, ` + col + ` AS o,
				SUM(size) OVER (ORDER BY ` + col + ` DESC, seq DESC ROWS UNBOUNDED PRECEDING) AS cum
				FROM artifacts WHERE seq NOT IN (SELECT seq FROM temp.victims))
			WHERE cum > ?`, []any{p.MaxBytes}, p.MaxBytes > 0})
	}
	for _, st := range stmts {
		if !st.on {
			continue
		}
		if _, err := conn.ExecContext(ctx, st.q, st.args...); err != nil {
			return err
		}
	}
	return nil
}

// victim is one chosen artifact.
type victim struct {
	seq, seen int64
	why       string
}

// nextVictims reads the next batch of chosen artifacts after seq.
func nextVictims(ctx context.Context, conn *sql.Conn, after int64) ([]victim, error) {
	rows, err := conn.QueryContext(ctx, `SELECT seq, seen, why FROM temp.victims WHERE seq > ? ORDER BY seq LIMIT ?`, after, collectBatch)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []victim
	for rows.Next() {
		var v victim
		if err := rows.Scan(&v.seq, &v.seen, &v.why); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// removeVictims removes one batch in one transaction, set-based: the
// batch's artifacts still as they were chosen are read, their rows
// deleted in two statements, and the blobs no artifact holds any more
// parked in tmp/ (as Delete does); after the commit the parked blobs are
// removed.
func (s *Store) removeVictims(ctx context.Context, conn *sql.Conn, batch []victim, rep *store.CollectReport, each func(store.Removal)) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	from, to := batch[0].seq-1, batch[len(batch)-1].seq
	// Read (lru) or put again since it was chosen: kept. Removed by
	// another collector or rm: gone from the join.
	const live = `SELECT v.seq FROM temp.victims v JOIN artifacts a ON a.seq = v.seq
		WHERE v.seq > ? AND v.seq <= ? AND (a.last_access_at = v.seen OR a.created_at = v.seen)`
	rows, err := tx.QueryContext(ctx, `SELECT a.id, a.sha256, a.size, v.why FROM temp.victims v JOIN artifacts a ON a.seq = v.seq
		WHERE v.seq IN (`+live+`) ORDER BY v.seq`, from, to)
	if err != nil {
		return s.queryErr(err)
	}
	var removed []store.Removal
	sums := map[string]bool{}
	for rows.Next() {
		var r store.Removal
		var sum string
		if err := rows.Scan(&r.ID, &sum, &r.Bytes, &r.Why); err != nil {
			rows.Close()
			return err
		}
		removed = append(removed, r)
		sums[sum] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return s.queryErr(err)
	}
	if len(removed) == 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM scopes WHERE seq IN (`+live+`)`, from, to); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM artifacts WHERE seq IN (`+live+`)`, from, to); err != nil {
		return err
	}
	var parked []parkedBlob
	// One statement for the batch: preparing it per blob cost more than
	// the lookup (modernc's prepare is a full parse).
	heldStmt, err := tx.PrepareContext(ctx, blobHeldQuery)
	if err != nil {
		return s.queryErr(err)
	}
	defer heldStmt.Close()
	for sum := range sums {
		var held bool
		err := heldStmt.QueryRowContext(ctx, sum).Scan(&held)
		if err == nil && !held {
			var name string
			if name, err = s.parkBlob(sum, tempName("del-"+sum+"-")); err == nil && name != "" {
				parked = append(parked, parkedBlob{name, sum})
			}
		}
		if err != nil {
			s.unparkAll(parked)
			return err
		}
	}
	s.at("gc:parked")
	if err := tx.Commit(); err != nil {
		s.unparkAll(parked)
		return err
	}
	s.at("gc:committed")
	s.removeParked(parked)
	for _, r := range removed {
		rep.Add(r, each)
	}
	return nil
}

// parkedBlob is a blob a transaction moved to tmp/ (see delete).
type parkedBlob struct{ name, sum string }

// unparkAll puts back the blobs of a transaction that did not commit.
func (s *Store) unparkAll(parked []parkedBlob) {
	for i := len(parked) - 1; i >= 0; i-- {
		if err := s.unparkBlob(parked[i].name, parked[i].sum); err != nil {
			s.log.Warn("could not put back the blob of a failed removal", "file", parked[i].name, "error", err)
		}
	}
}

// removeParked removes the blobs a committed transaction parked; one left
// behind is removed by the next recovering Open.
func (s *Store) removeParked(parked []parkedBlob) {
	for _, p := range parked {
		if err := s.tmp.Remove(p.name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.log.Warn("could not remove blob", "file", p.name, "error", err)
		}
	}
}

// DropScope removes scope from every artifact put under it, and removes
// the artifacts left with no scope (see store.Collector), in one
// transaction.
func (s *Store) DropScope(ctx context.Context, scope store.Scope) (store.CollectReport, error) {
	var rep store.CollectReport
	if scope.IsZero() {
		return rep, fmt.Errorf("fsstore: drop scope: empty scope would drop every artifact")
	}
	if s.readOnly {
		return rep, fmt.Errorf("fsstore: drop scope: %w", ErrReadOnly)
	}
	db, err := s.index(ctx)
	if err != nil {
		return rep, wrapErr("drop scope", err)
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return rep, wrapErr("drop scope", err)
	}
	defer tx.Rollback()
	cond, args := scopeFilter(scope)
	rows, err := tx.QueryContext(ctx, `SELECT DISTINCT s.seq FROM scopes s WHERE 1`+cond, args...)
	if err != nil {
		return rep, wrapErr("drop scope", s.queryErr(err))
	}
	var seqs []int64
	for rows.Next() {
		var seq int64
		if err := rows.Scan(&seq); err != nil {
			rows.Close()
			return rep, wrapErr("drop scope", err)
		}
		seqs = append(seqs, seq)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return rep, wrapErr("drop scope", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM scopes AS s WHERE 1`+cond, args...); err != nil {
		return rep, wrapErr("drop scope", err)
	}
	why := "drop_on_session_end"
	if scope.SessionID == "" {
		why = "scope dropped"
	}
	var parked []parkedBlob
	var removed []store.Removal
	for _, seq := range seqs {
		var id, sum string
		var size int64
		err := tx.QueryRowContext(ctx, `SELECT id, sha256, size FROM artifacts a
			WHERE seq = ? AND NOT EXISTS (SELECT 1 FROM scopes WHERE seq = a.seq)`, seq).Scan(&id, &sum, &size)
		if errors.Is(err, sql.ErrNoRows) {
			continue // still held under another scope
		}
		if err == nil {
			var p string
			if p, err = s.removeInTx(ctx, tx, seq, sum); err == nil && p != "" {
				parked = append(parked, parkedBlob{p, sum})
			}
		}
		if err != nil {
			s.unparkAll(parked)
			return rep, wrapErr("drop scope", err)
		}
		removed = append(removed, store.Removal{ID: id, Bytes: size, Why: why})
	}
	if err := tx.Commit(); err != nil {
		s.unparkAll(parked)
		return rep, wrapErr("drop scope", err)
	}
	s.removeParked(parked)
	for _, r := range removed {
		rep.Add(r, nil)
	}
	return rep, nil
}

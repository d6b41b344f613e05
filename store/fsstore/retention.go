package fsstore

// Retention: gc in SQL over the index, DropScope, and quotas at put.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/store"
)

// collectBatch is how many artifacts one gc transaction removes: short
// transactions keep the write lock free for puts between them. A var so
// that tests can cross batches with few artifacts.
var collectBatch = 1000

// collector applies retention (Collect) and drops scopes (DropScope).
type collector struct {
	readOnly bool
	log      hclog.Logger
	hook     *hook
	idx      *index
	files    *blobFolders
	reads    *accessLog
}

// checkQuota refuses (store.ErrQuotaExceeded) a put under sc that would
// take sc's session, trace or owner past q, each counted within sc's
// owner. seq is the artifact when it exists already (0 for new content):
// a session, trace or owner that holds it already gains nothing.
func checkQuota(ctx context.Context, tx *sql.Tx, q store.Quota, sc store.Scope, seq, size int64) error {
	usage := func(maxCount, maxBytes int64, cond string, args ...any) (store.Usage, error) {
		if maxCount == 0 && maxBytes == 0 {
			return store.Usage{}, nil
		}
		args = append([]any{sc.TenantID, sc.UserID}, args...)
		var in bool
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM scopes WHERE seq = ? AND tenant_id = ? AND user_id = ?`+cond+`)`,
			append([]any{seq}, args...)...).Scan(&in); err != nil || in {
			return store.Usage{}, err
		}
		u := store.Usage{Scoped: true}
		err := tx.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(size), 0) FROM artifacts
			WHERE seq IN (SELECT seq FROM scopes WHERE tenant_id = ? AND user_id = ?`+cond+`)`, args...).Scan(&u.Count, &u.Bytes)
		return u, err
	}
	var session, trace store.Usage
	var err error
	if sc.SessionID != "" {
		if session, err = usage(q.MaxArtifactsPerSession, q.MaxSessionBytes, ` AND session_id = ?`, sc.SessionID); err != nil {
			return err
		}
	}
	if sc.TraceID != "" {
		if trace, err = usage(q.MaxArtifactsPerTrace, q.MaxTraceBytes, ` AND trace_id = ?`, sc.TraceID); err != nil {
			return err
		}
	}
	user, err := usage(q.MaxArtifactsPerUser, q.MaxUserBytes, "")
	if err != nil {
		return err
	}
	return q.CheckQuota(size, session, trace, user)
}

// collect applies policy (see store.Collector). It chooses the scopes
// that go in a few set-based statements over the index into a temporary
// table (so memory does not grow with the store), then, artifact by
// artifact in short transactions of collectBatch, removes those scope
// rows, and the artifacts left with none as Delete does: rows deleted
// and unheld blobs parked in tmp/, commit, then the parked blobs
// removed. An artifact read (lru) or removed by another collector since
// it was chosen is skipped.
func (c *collector) collect(ctx context.Context, policy store.Retention, o store.CollectOptions) (store.CollectReport, error) {
	rep := store.CollectReport{DryRun: o.DryRun}
	if err := policy.Check(); err != nil {
		return rep, fmt.Errorf("fsstore: collect: %w", err)
	}
	if c.readOnly && !o.DryRun {
		return rep, fmt.Errorf("fsstore: collect: %w", ErrReadOnly)
	}
	db, err := c.idx.db(ctx)
	if err != nil || db == nil {
		return rep, wrapErr("collect", err)
	}
	if !c.readOnly {
		c.reads.flush(ctx)
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
	if err := chooseVictims(ctx, conn, policy, now, c.idx.version()); err != nil {
		return rep, wrapErr("collect", c.idx.queryErr(err))
	}
	defer conn.ExecContext(context.Background(), `DROP TABLE IF EXISTS temp.victims`)
	for after := int64(0); ; {
		var to sql.NullInt64
		if err := conn.QueryRowContext(ctx, `SELECT MAX(seq) FROM
			(SELECT DISTINCT seq FROM temp.victims WHERE seq > ? ORDER BY seq LIMIT ?)`, after, collectBatch).Scan(&to); err != nil {
			return rep, wrapErr("collect", c.idx.queryErr(err))
		}
		if !to.Valid {
			return rep, nil
		}
		if o.DryRun {
			chosen, err := readChosen(ctx, conn, after, to.Int64, policy.ByAccess())
			if err != nil {
				return rep, wrapErr("collect", c.idx.queryErr(err))
			}
			for _, a := range chosen {
				rep.Add(a.removal(), o.Each)
			}
		} else if err := c.removeVictims(ctx, conn, after, to.Int64, policy.ByAccess(), o.Each, &rep); err != nil {
			return rep, wrapErr("collect", err)
		}
		after = to.Int64
	}
}

func wrapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("fsstore: %s: %w", op, err)
}

// chooseVictims fills temp.victims (seq and ord: a scope row; why; seen:
// the artifact's last access when chosen) with the scopes policy removes
// at now, rule by rule in store.Retention.Choose's order (the rowid
// keeps it, so an artifact's first reason is its first row); a rule does
// not count what an earlier one chose. v is the index's schema version.
func chooseVictims(ctx context.Context, conn *sql.Conn, p store.Retention, now time.Time, v int) error {
	// The clock of a scope: under lru the artifact's last use (which a
	// put under any scope renews), else when the scope first put it.
	created := "s.created_at"
	if v < 3 {
		created = "a.created_at" // an older index read as it is
	}
	key, keyOf := "a.last_access_at", "a.last_access_at"
	if !p.ByAccess() {
		key, keyOf = created, "MIN("+created+")"
	}
	type stmt struct {
		q    string
		args []any
		on   bool
	}
	const from = ` FROM scopes s JOIN artifacts a ON a.seq = s.seq`
	const unchosen = ` NOT EXISTS (SELECT 1 FROM temp.victims v WHERE v.seq = s.seq AND v.ord = s.ord)`
	stmts := []stmt{
		{`DROP TABLE IF EXISTS temp.victims`, nil, true},
		{`CREATE TEMP TABLE victims (seq INTEGER NOT NULL, ord INTEGER NOT NULL, why TEXT NOT NULL, seen INTEGER NOT NULL, UNIQUE (seq, ord))`, nil, true},
		{`INSERT OR IGNORE INTO temp.victims SELECT s.seq, s.ord, 'ttl', a.last_access_at` + from + ` WHERE ` + key + ` < ?`,
			[]any{now.Add(-time.Duration(p.TTL)).UnixNano()}, p.TTL > 0},
		{`INSERT OR IGNORE INTO temp.victims SELECT s.seq, s.ord, 'max_artifact_bytes', a.last_access_at` + from + ` WHERE a.size > ?`,
			[]any{p.MaxArtifactBytes}, p.MaxArtifactBytes > 0},
	}
	if p.Evicts() {
		for _, g := range []struct {
			col, name          string
			maxCount, maxBytes int64
		}{
			{"s.session_id", "session", p.MaxArtifactsPerSession, p.MaxSessionBytes},
			{"s.trace_id", "trace", p.MaxArtifactsPerTrace, p.MaxTraceBytes},
			{"''", "user", p.MaxArtifactsPerUser, p.MaxUserBytes},
		} {
			// Per owner (t, u) and group (k), newest (or most recently
			// read) first: what lies past the count, or past the bytes,
			// loses the group's scopes.
			named, inGroup := ` || ' `+g.name+`=' || k`, g.col+` != '' AND`
			if g.name == "user" {
				named, inGroup = "", ""
			}
			stmts = append(stmts, stmt{`INSERT OR IGNORE INTO temp.victims
				SELECT s.seq, s.ord, CASE WHEN ? > 0 AND m.rn > ? THEN 'max_artifacts_per_` + g.name + `' ELSE 'max_` + g.name + `_bytes' END
					|| CASE WHEN m.t != '' THEN ' tenant=' || m.t ELSE '' END
					|| CASE WHEN m.u != '' THEN ' user=' || m.u ELSE '' END` + named + `, m.seen
				FROM (SELECT t, u, k, seq, seen, ROW_NUMBER() OVER w AS rn, SUM(size) OVER w AS cum
					FROM (SELECT s.tenant_id AS t, s.user_id AS u, ` + g.col + ` AS k, s.seq AS seq, a.size AS size,
							a.last_access_at AS seen, ` + keyOf + ` AS o` + from + `
						WHERE ` + inGroup + unchosen + `
						GROUP BY ` + g.col + `, s.tenant_id, s.user_id, s.seq)
					WINDOW w AS (PARTITION BY t, u, k ORDER BY o DESC, seq DESC ROWS UNBOUNDED PRECEDING)) m
				JOIN scopes s ON s.seq = m.seq AND s.tenant_id = m.t AND s.user_id = m.u AND ` + g.col + ` = m.k
				WHERE (? > 0 AND m.rn > ?) OR (? > 0 AND m.cum > ?)`,
				[]any{g.maxCount, g.maxCount, g.maxCount, g.maxCount, g.maxBytes, g.maxBytes},
				g.maxCount > 0 || g.maxBytes > 0})
		}
		col := "a.last_access_at"
		if !p.ByAccess() {
			col = "a.created_at"
		}
		// The whole store: whole artifacts, of every owner.
		stmts = append(stmts, stmt{`INSERT OR IGNORE INTO temp.victims
			SELECT s.seq, s.ord, 'max_bytes', x.seen FROM (
				SELECT seq, seen, SUM(size) OVER (ORDER BY o DESC, seq DESC ROWS UNBOUNDED PRECEDING) AS cum
				FROM (SELECT a.seq, a.size, a.last_access_at AS seen, ` + col + ` AS o FROM artifacts a
					WHERE EXISTS (SELECT 1 FROM scopes s WHERE s.seq = a.seq AND` + unchosen + `))) x
			JOIN scopes s ON s.seq = x.seq
			WHERE x.cum > ?`, []any{p.MaxBytes}, p.MaxBytes > 0})
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

// chosenArtifact is one artifact some of whose scopes were chosen.
type chosenArtifact struct {
	seq     int64
	id, sum string
	size    int64
	why     string
	scopes  []store.Scope
	all     bool // every scope it has: the artifact goes
}

// removal is the report of a.
func (a *chosenArtifact) removal() store.Removal {
	if a.all {
		return store.Removal{ID: a.id, Bytes: a.size, Why: a.why}
	}
	return store.Removal{ID: a.id, Why: a.why, Released: a.scopes}
}

// readChosen reads the chosen scopes of the artifacts after from up to
// to that are still as they were chosen (lru: not read since; removed
// by another collector or rm: gone from the join), by artifact.
func readChosen(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, from, to int64, lru bool) ([]*chosenArtifact, error) {
	rows, err := q.QueryContext(ctx, `SELECT v.seq, a.id, a.sha256, a.size, v.why, `+scopeColumns+`,
			(SELECT COUNT(*) FROM scopes x WHERE x.seq = v.seq)
		FROM temp.victims v JOIN artifacts a ON a.seq = v.seq JOIN scopes s ON s.seq = v.seq AND s.ord = v.ord
		WHERE `+liveVictims(lru)+` ORDER BY v.seq, v.rowid`, from, to)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var chosen []*chosenArtifact
	for rows.Next() {
		var c chosenArtifact
		var sc store.Scope
		var total int
		if err := rows.Scan(&c.seq, &c.id, &c.sum, &c.size, &c.why, &sc.TenantID, &sc.UserID, &sc.SessionID, &sc.TraceID, &total); err != nil {
			return nil, err
		}
		if n := len(chosen); n == 0 || chosen[n-1].seq != c.seq {
			chosen = append(chosen, &c)
		}
		a := chosen[len(chosen)-1]
		a.scopes = append(a.scopes, sc)
		a.all = len(a.scopes) == total
	}
	return chosen, rows.Err()
}

// liveVictims is the condition on temp.victims v (and artifacts a) of
// the rows after ? up to ? still as they were chosen: under lru, not
// read since.
func liveVictims(lru bool) string {
	if lru {
		return `v.seq > ? AND v.seq <= ? AND a.last_access_at = v.seen`
	}
	return `v.seq > ? AND v.seq <= ?`
}

// removeVictims applies the choice for the artifacts after from up to
// to, in one transaction: the chosen scope rows still as they were
// chosen are deleted, then the artifacts left with none, in two
// statements, and the blobs no artifact holds any more parked in tmp/
// (as Delete does); after the commit the parked blobs are removed.
func (c *collector) removeVictims(ctx context.Context, conn *sql.Conn, from, to int64, lru bool, each func(store.Removal), rep *store.CollectReport) error {
	c.idx.wmu.Lock()
	defer c.idx.wmu.Unlock()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	chosen, err := readChosen(ctx, tx, from, to, lru)
	if err != nil {
		return c.idx.queryErr(err)
	}
	if len(chosen) == 0 {
		return nil
	}
	liveRows := `SELECT v.seq, v.ord FROM temp.victims v JOIN artifacts a ON a.seq = v.seq WHERE ` + liveVictims(lru)
	if _, err := tx.ExecContext(ctx, `DELETE FROM scopes WHERE (seq, ord) IN (`+liveRows+`)`, from, to); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM artifacts AS a WHERE a.seq IN (SELECT seq FROM temp.victims WHERE seq > ? AND seq <= ?)
		AND NOT EXISTS (SELECT 1 FROM scopes s WHERE s.seq = a.seq)`, from, to); err != nil {
		return err
	}
	var parked []parkedBlob
	// One statement for the batch: preparing it per blob cost more than
	// the lookup (modernc's prepare is a full parse).
	heldStmt, err := tx.PrepareContext(ctx, blobHeldQuery)
	if err != nil {
		return c.idx.queryErr(err)
	}
	defer heldStmt.Close()
	sums := map[string]bool{}
	for _, a := range chosen {
		if !a.all || sums[a.sum] {
			continue
		}
		sums[a.sum] = true
		var held bool
		err := heldStmt.QueryRowContext(ctx, a.sum).Scan(&held)
		if err == nil && !held {
			var name string
			if name, err = c.files.park(a.sum, tempName("del-"+a.sum+"-")); err == nil && name != "" {
				parked = append(parked, parkedBlob{name, a.sum})
			}
		}
		if err != nil {
			c.files.unparkAll(parked)
			return err
		}
	}
	c.hook.at("gc:parked")
	if err := tx.Commit(); err != nil {
		c.files.unparkAll(parked)
		return err
	}
	c.hook.at("gc:committed")
	c.files.removeParked(parked)
	for _, a := range chosen {
		rep.Add(a.removal(), each)
	}
	return nil
}

// dropScope removes scope from every artifact put under it, and removes
// the artifacts left with no scope (see store.Collector), in one
// transaction.
func (c *collector) dropScope(ctx context.Context, scope store.Scope) (store.CollectReport, error) {
	var rep store.CollectReport
	if scope.IsZero() {
		return rep, fmt.Errorf("fsstore: drop scope: empty scope would drop every artifact")
	}
	if c.readOnly {
		return rep, fmt.Errorf("fsstore: drop scope: %w", ErrReadOnly)
	}
	db, err := c.idx.db(ctx)
	if err != nil {
		return rep, wrapErr("drop scope", err)
	}
	c.idx.wmu.Lock()
	defer c.idx.wmu.Unlock()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return rep, wrapErr("drop scope", err)
	}
	defer tx.Rollback()
	cond, args := scopeFilter(scope)
	rows, err := tx.QueryContext(ctx, `SELECT DISTINCT s.seq FROM scopes s WHERE 1`+cond, args...)
	if err != nil {
		return rep, wrapErr("drop scope", c.idx.queryErr(err))
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
			if p, err = removeArtifact(ctx, tx, c.files, seq, sum); err == nil && p != "" {
				parked = append(parked, parkedBlob{p, sum})
			}
		}
		if err != nil {
			c.files.unparkAll(parked)
			return rep, wrapErr("drop scope", err)
		}
		removed = append(removed, store.Removal{ID: id, Bytes: size, Why: why})
	}
	if err := tx.Commit(); err != nil {
		c.files.unparkAll(parked)
		return rep, wrapErr("drop scope", err)
	}
	c.files.removeParked(parked)
	for _, r := range removed {
		rep.Add(r, nil)
	}
	return rep, nil
}

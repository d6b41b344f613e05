package fsstore

// Search text indexed beside the calls, not in them: FTS5 takes 70-100 ms
// of CPU and writes 3-6 MB for the 13,000 lines of a 600 kB accessibility
// snapshot, which a tool call through the gateway would otherwise wait
// for, and a one-shot "mcpx transform" would pay before it exits.
// Annotate records the summary and the text parts (search_pending) in one
// transaction, and queues the parts; one goroutine per store writes them
// to the search index and removes the pending row in the transaction
// that writes an artifact's last line. Search waits for what is queued
// and then indexes whatever is still pending in its scope: text another
// process left (Close does not wait for the indexer) or a killed process
// was writing. A kill leaves the pending row, so nothing is half-indexed
// for good: whoever indexes it next deletes the rows written so far.
//
// The indexer works in the gaps between calls (see writeLock): it starts
// a transaction only once no put or annotation has been under way for
// indexQuiet, commits at least every indexTxRows lines, and commits early
// when a call starts storing, so that a call never waits for more than
// one INSERT of the indexer nor shares the disk with its writes. It also
// checkpoints the WAL itself in those gaps, once an artifact
// (walAutoCheckpoint is the backstop), so that a call's commit does not
// copy the index's pages into index.db. While Search waits for it, or the
// queue holds more than half of MaxPendingIndexBytes, the indexer stops
// waiting for gaps and yields only to a write that waits for the lock:
// steady traffic cannot starve it.
//
// Another process searching the same folder sees the text as it is
// written (an artifact's lines can be partly there for a moment).

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/store"
)

// MaxPendingIndexBytes bounds the text waiting to be indexed: an
// annotation that would pass it is indexed in its own call instead, so a
// burst of large results slows down rather than piles up in memory.
const MaxPendingIndexBytes = 64 << 20

// indexTxRows is how many lines the indexer writes in one transaction at
// most (about 50 kB of a snapshot's text and 0.5 MB of WAL), which bounds
// what its commit syncs when a call starts.
const indexTxRows = 4 * indexRowsPerInsert

// indexer writes the queued text parts of annotated artifacts to the
// search index, one goroutine per store while there is any.
type indexer struct {
	log  hclog.Logger
	hook *hook
	idx  *index
	// read reads the text of an artifact annotated with AnnotateLater
	// (Config.Text; nil: such text stays pending), from the blob open
	// gives.
	read store.TextReader
	open func(ctx context.Context, id string) (io.ReadCloser, store.Ref, error)

	mu           sync.Mutex // guards what follows
	pending      []pendingText
	pendingBytes int
	done         chan struct{} // open while the goroutine runs
	waiters      int           // Search calls waiting for it
	stopping     bool          // Close: leave the rest pending
	cancel       func()        // ends the goroutine's context (a read under way)
}

// readLater is the pending text of an artifact whose text the indexer's
// TextReader reads from its bytes (AnnotateLater).
const readLater = "null"

// pendingText is one artifact's text parts waiting to be indexed, and
// their row in search_pending; no parts: the TextReader reads them.
type pendingText struct {
	id      string
	pending int64
	parts   []store.TextPart
	bytes   int
}

// queue hands parts, pending as row pending of search_pending, to the
// indexer; false when the queue is full (the caller indexes them itself)
// or the store is closing (they stay pending).
func (x *indexer) queue(id string, pending int64, parts []store.TextPart) bool {
	n := 0
	for _, p := range parts {
		n += len(p.Text)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.stopping {
		return true
	}
	if x.pendingBytes+n > MaxPendingIndexBytes {
		return false
	}
	x.pending = append(x.pending, pendingText{id: id, pending: pending, parts: parts, bytes: n})
	x.pendingBytes += n
	if x.done == nil {
		x.done = make(chan struct{})
		ctx, cancel := context.WithCancel(context.Background())
		x.cancel = cancel
		go x.run(ctx, x.done)
	}
	return true
}

// run writes the queued text until the queue is empty, and checkpoints
// after each artifact; then it closes done.
func (x *indexer) run(ctx context.Context, done chan struct{}) {
	dirty := false // the indexer committed since its last checkpoint
	for {
		if dirty {
			x.checkpointQuiet(ctx)
			dirty = false
		}
		x.mu.Lock()
		if len(x.pending) == 0 || x.stopping {
			x.pending, x.pendingBytes = nil, 0
			x.cancel()
			x.done = nil
			x.mu.Unlock()
			close(done)
			return
		}
		p := x.pending[0]
		x.pending[0] = pendingText{}
		x.pending = x.pending[1:]
		x.mu.Unlock()
		if err := x.indexBehind(ctx, p, &dirty); err != nil && ctx.Err() == nil {
			x.log.Warn("could not index an artifact's text for search", "id", p.id, "error", err)
		}
		x.mu.Lock()
		x.pendingBytes -= p.bytes
		x.mu.Unlock()
	}
}

// urgent reports whether the indexer should not wait for gaps between
// calls: the queue is more than half full, Search waits for it, or Close
// stops it.
func (x *indexer) urgent() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.pendingBytes > MaxPendingIndexBytes/2 || x.waiters > 0 || x.stopping
}

// stopped reports whether Close stops the indexer.
func (x *indexer) stopped() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.stopping
}

// stop makes the indexer leave what it has not written pending, and
// returns once its goroutine has ended: within one INSERT.
func (x *indexer) stop() {
	x.mu.Lock()
	x.stopping = true
	done := x.done
	if done != nil {
		x.cancel()
	}
	x.mu.Unlock()
	if done == nil {
		return
	}
	x.idx.wmu.wake()
	<-done
}

// checkpointQuiet waits for a gap between calls and copies the WAL into
// index.db there (PASSIVE: it takes no lock that a writer waits for).
func (x *indexer) checkpointQuiet(ctx context.Context) {
	x.idx.wmu.waitQuiet(x.urgent)
	db, err := x.idx.db(ctx)
	if err != nil {
		return
	}
	if _, err := db.ExecContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`); err != nil {
		x.log.Debug("could not checkpoint the index", "error", err)
	}
}

// indexText replaces the search text of artifact seq with parts, in one
// transaction.
func (x *indexer) indexText(ctx context.Context, seq int64, parts []store.TextPart) error {
	db, err := x.idx.db(ctx)
	if err != nil {
		return err
	}
	return x.idx.write(ctx, db, func(tx *sql.Tx) error {
		if err := indexParts(ctx, tx, seq, parts); err != nil {
			return fmt.Errorf("index text: %w", err)
		}
		return nil
	})
}

// indexBehind is indexText for the indexer: transactions of at most
// indexTxRows lines, each started in a gap between calls and ended early
// when a call starts storing (see the file comment). It sets dirty when
// it commits.
func (x *indexer) indexBehind(ctx context.Context, p pendingText, dirty *bool) error {
	db, err := x.idx.db(ctx)
	if err != nil {
		return err
	}
	parts := p.parts
	if parts == nil {
		// Reading a PDF's pages takes CPU a call could use: in a gap too.
		x.idx.wmu.waitQuiet(x.urgent)
		if x.stopped() {
			return nil
		}
		if parts, err = x.readText(ctx, p.id); err != nil {
			return err
		}
	}
	rows := searchRows(parts)
	for done := 0; ; {
		n, committed, err := x.rowsBehind(ctx, db, p.pending, done == 0, rows[done:], len(rows[done:]) <= indexTxRows)
		if err != nil {
			return fmt.Errorf("index text: %w", err)
		}
		if !committed {
			return nil // indexed by another, annotated again, gone, or left for later
		}
		*dirty = true
		x.hook.at("index:committed")
		if done += n; done == len(rows) {
			return nil
		}
	}
}

// rowsBehind is one transaction of indexBehind, of at most indexTxRows
// of rows. It adds nothing while Close stops the indexer, or once the
// pending row is gone (its artifact deleted or annotated again, or its
// text indexed by a search). The first one (first) deletes the
// artifact's earlier rows; the one that adds the last of rows (last)
// deletes the pending row. It returns how many of rows it added, and
// whether it committed.
func (x *indexer) rowsBehind(ctx context.Context, db *sql.DB, pending int64, first bool, rows []searchRow, last bool) (int, bool, error) {
	x.idx.wmu.lockBackground(x.urgent)
	defer x.idx.wmu.Unlock()
	if x.stopped() {
		return 0, false, nil
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, false, err
	}
	defer tx.Rollback()
	var seq int64
	err = tx.QueryRowContext(ctx, `SELECT seq FROM search_pending WHERE id = ?`, pending).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	if first {
		if _, err := tx.ExecContext(ctx, `DELETE FROM search_parts WHERE seq = ?`, seq); err != nil {
			return 0, false, err
		}
	}
	rows = rows[:min(indexTxRows, len(rows))]
	n, err := insertSearchRows(ctx, tx, seq, rows, func() bool { return x.stopped() || x.idx.wmu.yield(x.urgent) })
	if err != nil {
		return 0, false, err
	}
	if x.stopped() {
		return 0, false, nil // rolled back: the text stays pending whole
	}
	if last && n == len(rows) {
		if _, err := tx.ExecContext(ctx, `DELETE FROM search_pending WHERE id = ?`, pending); err != nil {
			return 0, false, err
		}
	}
	return n, true, tx.Commit()
}

// setPending makes text (a JSON array of store.TextPart) the pending
// search text of artifact seq, in place of any earlier, and returns its
// row's id.
func setPending(ctx context.Context, tx *sql.Tx, seq int64, text []byte) (int64, error) {
	if _, err := tx.ExecContext(ctx, `DELETE FROM search_pending WHERE seq = ?`, seq); err != nil {
		return 0, err
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO search_pending (seq, parts) VALUES (?, ?)`, seq, text)
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

// indexPending indexes the pending text of the artifacts put under a
// scope that scope contains, one artifact a transaction, newest first;
// it stops with ctx's error when ctx ends. A read-only store indexes
// nothing, and text left for a TextReader stays pending without one.
func (x *indexer) indexPending(ctx context.Context, scope store.Scope) error {
	if x.idx.readOnly {
		return nil
	}
	db, err := x.idx.db(ctx)
	if err != nil || db == nil {
		return err
	}
	cond, args := scopeFilter(scope)
	rows, err := db.QueryContext(ctx, `SELECT p.id, p.seq, a.id FROM search_pending p JOIN artifacts a ON a.seq = p.seq
		WHERE EXISTS (SELECT 1 FROM scopes s WHERE s.seq = p.seq`+cond+`) ORDER BY p.seq DESC`, args...)
	if err != nil {
		return x.idx.queryErr(err)
	}
	type pendingRow struct {
		id, seq  int64
		artifact string
	}
	var todo []pendingRow
	for rows.Next() {
		var r pendingRow
		if err := rows.Scan(&r.id, &r.seq, &r.artifact); err != nil {
			rows.Close()
			return x.idx.queryErr(err)
		}
		todo = append(todo, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return x.idx.queryErr(err)
	}
	for _, r := range todo {
		var text []byte
		err := db.QueryRowContext(ctx, `SELECT parts FROM search_pending WHERE id = ?`, r.id).Scan(&text)
		if errors.Is(err, sql.ErrNoRows) {
			continue // indexed meanwhile, or gone
		}
		if err != nil {
			return fmt.Errorf("index pending text: %w", x.idx.queryErr(err))
		}
		var parts []store.TextPart
		switch {
		case string(text) == readLater && x.read == nil:
			continue
		case string(text) == readLater:
			// Read outside the write lock: a PDF's pages take a while.
			if parts, err = x.readText(ctx, r.artifact); err != nil {
				return fmt.Errorf("index pending text: %w", err)
			}
		default:
			if err := json.Unmarshal(text, &parts); err != nil {
				// Not text this store wrote: dropped, or every search
				// would stop at it.
				x.log.Warn("dropping pending search text that does not decode", "id", r.artifact, "error", err)
				parts = nil
			}
		}
		err = x.idx.write(ctx, db, func(tx *sql.Tx) error {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM search_pending WHERE id = ?`, r.id).Scan(&n); err != nil || n == 0 {
				return err // indexed meanwhile, annotated again, or gone
			}
			return indexParts(ctx, tx, r.seq, parts)
		})
		if err != nil {
			return fmt.Errorf("index pending text: %w", err)
		}
	}
	return nil
}

// readText reads the search text of artifact id with the TextReader. A
// reader that fails gives no text (logged), so that no search tries again;
// only ctx's end leaves the text pending.
func (x *indexer) readText(ctx context.Context, id string) ([]store.TextPart, error) {
	rc, ref, err := x.open(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return []store.TextPart{}, nil // gone, and its pending row with it
	}
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	ra, ok := rc.(io.ReaderAt)
	if !ok {
		return nil, fmt.Errorf("artifact[%s]: the blob reader cannot read at offsets", id)
	}
	parts, err := x.read(ctx, ref, ra, ref.SizeBytes)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		x.log.Warn("could not read an artifact's text for search", "id", id, "error", err)
		return []store.TextPart{}, nil
	}
	if parts == nil {
		parts = []store.TextPart{}
	}
	return parts, nil
}

// wait returns once the text queued so far is in the index, or when ctx
// ends.
func (x *indexer) wait(ctx context.Context) error {
	x.mu.Lock()
	done := x.done
	if done != nil {
		x.waiters++
	}
	x.mu.Unlock()
	if done == nil {
		return nil
	}
	defer func() {
		x.mu.Lock()
		x.waiters--
		x.mu.Unlock()
	}()
	x.idx.wmu.wake() // no more waiting for gaps
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

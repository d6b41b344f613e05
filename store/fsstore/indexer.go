package fsstore

// Search text indexed beside the calls, not in them: FTS5 takes 70-100 ms
// of CPU and writes 3-6 MB for the 13,000 lines of a 600 kB accessibility
// snapshot, which a tool call through the gateway would otherwise wait
// for. Annotate records the summary at once and queues the text; one
// goroutine per store writes it to the search index, and Search and Close
// wait for what is queued, so a process always finds what it stored.
//
// The indexer works in the gaps between calls (see writeLock): it starts
// a transaction only once no put or annotation has been under way for
// indexQuiet, commits at least every indexTxRows lines, and commits early
// when a call starts storing, so that a call never waits for more than
// one INSERT of the indexer nor shares the disk with its writes. It also
// checkpoints the WAL itself in those gaps, once an artifact
// (walAutoCheckpoint is the backstop), so that a call's commit does not
// copy the index's pages into index.db. While Search or Close waits for
// it, or the queue holds more than half of MaxPendingIndexBytes, the
// indexer stops waiting for gaps and yields only to a write that waits
// for the lock: steady traffic cannot starve it.
//
// Another process searching the same folder sees the text as it is
// written (an artifact's lines can be partly there for a moment); a crash
// before then leaves the artifact, its bytes and its summary intact, only
// not (or partly) searchable.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
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

	mu           sync.Mutex // guards what follows
	pending      []pendingText
	pendingBytes int
	done         chan struct{} // open while the goroutine runs
	waiters      int           // Search and Close calls waiting for it
}

// pendingText is one artifact's text parts waiting to be indexed.
type pendingText struct {
	id    string
	parts []store.TextPart
	bytes int
}

// queue hands parts to the indexer; false when the queue is full (the
// caller indexes them itself).
func (x *indexer) queue(id string, parts []store.TextPart) bool {
	n := 0
	for _, p := range parts {
		n += len(p.Text)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.pendingBytes+n > MaxPendingIndexBytes {
		return false
	}
	x.pending = append(x.pending, pendingText{id: id, parts: parts, bytes: n})
	x.pendingBytes += n
	if x.done == nil {
		x.done = make(chan struct{})
		go x.run(x.done)
	}
	return true
}

// run writes the queued text until the queue is empty, and checkpoints
// after each artifact; then it closes done.
func (x *indexer) run(done chan struct{}) {
	ctx := context.Background()
	dirty := false // the indexer committed since its last checkpoint
	for {
		if dirty {
			x.checkpointQuiet(ctx)
			dirty = false
		}
		x.mu.Lock()
		if len(x.pending) == 0 {
			x.done = nil
			x.mu.Unlock()
			close(done)
			return
		}
		p := x.pending[0]
		x.pending[0] = pendingText{}
		x.pending = x.pending[1:]
		x.mu.Unlock()
		if err := x.indexBehind(ctx, p.id, p.parts, &dirty); err != nil {
			x.log.Warn("could not index an artifact's text for search", "id", p.id, "error", err)
		}
		x.mu.Lock()
		x.pendingBytes -= p.bytes
		x.mu.Unlock()
	}
}

// urgent reports whether the indexer should not wait for gaps between
// calls: the queue is more than half full, or Search or Close waits for
// it.
func (x *indexer) urgent() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.pendingBytes > MaxPendingIndexBytes/2 || x.waiters > 0
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

// indexText replaces the artifact's search text with parts, in one
// transaction.
func (x *indexer) indexText(ctx context.Context, id string, parts []store.TextPart) error {
	db, err := x.idx.db(ctx)
	if err != nil {
		return err
	}
	return x.idx.write(ctx, db, func(tx *sql.Tx) error {
		if err := indexParts(ctx, tx, id, parts); err != nil {
			return fmt.Errorf("index text: %w", err)
		}
		return nil
	})
}

// indexBehind is indexText for the indexer: transactions of at most
// indexTxRows lines, each started in a gap between calls and ended early
// when a call starts storing (see the file comment). It sets dirty when
// it commits.
func (x *indexer) indexBehind(ctx context.Context, id string, parts []store.TextPart, dirty *bool) error {
	db, err := x.idx.db(ctx)
	if err != nil {
		return err
	}
	rows := searchRows(parts)
	var seq int64
	for done := 0; ; {
		n, committed, err := x.rowsBehind(ctx, db, id, &seq, done == 0, rows[done:min(done+indexTxRows, len(rows))])
		if err != nil {
			return fmt.Errorf("index text: %w", err)
		}
		if !committed {
			return nil // the artifact is gone
		}
		*dirty = true
		x.hook.at("index:committed")
		if done += n; done == len(rows) {
			return nil
		}
	}
}

// rowsBehind is one transaction of indexBehind: the first one
// (first) deletes the artifact's earlier rows and notes its seq; a later
// one adds nothing when the artifact is gone, or is another put (a new
// seq), since. It returns how many of rows it added, and whether it
// committed.
func (x *indexer) rowsBehind(ctx context.Context, db *sql.DB, id string, seq *int64, first bool, rows []searchRow) (int, bool, error) {
	x.idx.wmu.lockBackground(x.urgent)
	defer x.idx.wmu.Unlock()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, false, err
	}
	defer tx.Rollback()
	now, err := artifactSeq(ctx, tx, id)
	if !first && (errors.Is(err, store.ErrNotFound) || err == nil && now != *seq) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	if first {
		*seq = now
		if _, err := tx.ExecContext(ctx, `DELETE FROM search_parts WHERE seq = ?`, now); err != nil {
			return 0, false, err
		}
	}
	n, err := insertSearchRows(ctx, tx, now, rows, func() bool { return x.idx.wmu.yield(x.urgent) })
	if err != nil {
		return 0, false, err
	}
	return n, true, tx.Commit()
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

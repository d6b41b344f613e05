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

// pendingText is one artifact's text parts waiting to be indexed.
type pendingText struct {
	id    string
	parts []store.TextPart
	bytes int
}

// queueText hands parts to the indexer; false when the queue is full (the
// caller indexes them itself).
func (s *Store) queueText(id string, parts []store.TextPart) bool {
	n := 0
	for _, p := range parts {
		n += len(p.Text)
	}
	s.imu.Lock()
	defer s.imu.Unlock()
	if s.ipendingBytes+n > MaxPendingIndexBytes {
		return false
	}
	s.ipending = append(s.ipending, pendingText{id: id, parts: parts, bytes: n})
	s.ipendingBytes += n
	if s.idone == nil {
		s.idone = make(chan struct{})
		go s.indexQueued(s.idone)
	}
	return true
}

// indexQueued writes the queued text until the queue is empty, and
// checkpoints after each artifact; then it closes done.
func (s *Store) indexQueued(done chan struct{}) {
	ctx := context.Background()
	dirty := false // the indexer committed since its last checkpoint
	for {
		if dirty {
			s.checkpointQuiet(ctx)
			dirty = false
		}
		s.imu.Lock()
		if len(s.ipending) == 0 {
			s.idone = nil
			s.imu.Unlock()
			close(done)
			return
		}
		p := s.ipending[0]
		s.ipending[0] = pendingText{}
		s.ipending = s.ipending[1:]
		s.imu.Unlock()
		if err := s.indexTextBehind(ctx, p.id, p.parts, &dirty); err != nil {
			s.log.Warn("could not index an artifact's text for search", "id", p.id, "error", err)
		}
		s.imu.Lock()
		s.ipendingBytes -= p.bytes
		s.imu.Unlock()
	}
}

// urgentIndex reports whether the indexer should not wait for gaps
// between calls: the queue is more than half full, or Search or Close
// waits for it.
func (s *Store) urgentIndex() bool {
	s.imu.Lock()
	defer s.imu.Unlock()
	return s.ipendingBytes > MaxPendingIndexBytes/2 || s.iwaiters > 0
}

// checkpointQuiet waits for a gap between calls and copies the WAL into
// index.db there (PASSIVE: it takes no lock that a writer waits for).
func (s *Store) checkpointQuiet(ctx context.Context) {
	s.wmu.waitQuiet(s.urgentIndex)
	db, err := s.index(ctx)
	if err != nil {
		return
	}
	if _, err := db.ExecContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`); err != nil {
		s.log.Debug("could not checkpoint the index", "error", err)
	}
}

// indexText replaces the artifact's search text with parts, in one
// transaction.
func (s *Store) indexText(ctx context.Context, id string, parts []store.TextPart) error {
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
	if err := s.indexParts(ctx, tx, id, parts); err != nil {
		return fmt.Errorf("index text: %w", err)
	}
	return tx.Commit()
}

// indexTextBehind is indexText for the indexer: transactions of at most
// indexTxRows lines, each started in a gap between calls and ended early
// when a call starts storing (see the file comment). It sets dirty when
// it commits.
func (s *Store) indexTextBehind(ctx context.Context, id string, parts []store.TextPart, dirty *bool) error {
	db, err := s.index(ctx)
	if err != nil {
		return err
	}
	rows := searchRows(parts)
	var seq int64
	for done := 0; ; {
		n, committed, err := s.indexRowsBehind(ctx, db, id, &seq, done == 0, rows[done:min(done+indexTxRows, len(rows))])
		if err != nil {
			return fmt.Errorf("index text: %w", err)
		}
		if !committed {
			return nil // the artifact is gone
		}
		*dirty = true
		s.at("index:committed")
		if done += n; done == len(rows) {
			return nil
		}
	}
}

// indexRowsBehind is one transaction of indexTextBehind: the first one
// (first) deletes the artifact's earlier rows and notes its seq; a later
// one adds nothing when the artifact is gone, or is another put (a new
// seq), since. It returns how many of rows it added, and whether it
// committed.
func (s *Store) indexRowsBehind(ctx context.Context, db *sql.DB, id string, seq *int64, first bool, rows []searchRow) (int, bool, error) {
	s.wmu.lockBackground(s.urgentIndex)
	defer s.wmu.Unlock()
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
	n, err := insertSearchRows(ctx, tx, now, rows, func() bool { return s.wmu.yield(s.urgentIndex) })
	if err != nil {
		return 0, false, err
	}
	return n, true, tx.Commit()
}

// waitIndexed returns once the text queued so far is in the index, or
// when ctx ends.
func (s *Store) waitIndexed(ctx context.Context) error {
	s.imu.Lock()
	done := s.idone
	if done != nil {
		s.iwaiters++
	}
	s.imu.Unlock()
	if done == nil {
		return nil
	}
	defer func() {
		s.imu.Lock()
		s.iwaiters--
		s.imu.Unlock()
	}()
	s.wmu.wake() // no more waiting for gaps
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

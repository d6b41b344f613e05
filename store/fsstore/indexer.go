package fsstore

// Search text indexed beside the call, not in it: FTS5 takes about 100 ms
// for the 10,000 lines of a 600 kB accessibility snapshot, which a tool
// call through the gateway would otherwise wait for. Annotate records the
// summary at once and queues the text; one goroutine per store writes it
// to the search index, and Search and Close wait for what is queued, so a
// process always finds what it stored. Another process searching the same
// folder sees the text once it is written (within that ~100 ms); a crash
// before then leaves the artifact, its bytes and its summary intact, only
// unsearchable.

import (
	"context"
	"fmt"

	"github.com/mcpx-dev/mcpx/store"
)

// MaxPendingIndexBytes bounds the text waiting to be indexed: an
// annotation that would pass it is indexed in its own call instead, so a
// burst of large results slows down rather than piles up in memory.
const MaxPendingIndexBytes = 64 << 20

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

// indexQueued writes the queued text, one transaction an artifact, until
// the queue is empty; then it closes done.
func (s *Store) indexQueued(done chan struct{}) {
	ctx := context.Background()
	for {
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
		if err := s.indexText(ctx, p.id, p.parts); err != nil {
			s.log.Warn("could not index an artifact's text for search", "id", p.id, "error", err)
		}
		s.imu.Lock()
		s.ipendingBytes -= p.bytes
		s.imu.Unlock()
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

// waitIndexed returns once the text queued so far is in the index, or
// when ctx ends.
func (s *Store) waitIndexed(ctx context.Context) error {
	s.imu.Lock()
	done := s.idone
	s.imu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

package fsstore

// The batched recording of reads (LRU order): a read notes the time in
// memory, and the notes are written together, by a timer or inside the
// next put's or annotation's own transaction, so reading never waits for
// the index's write lock.

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// touchFlushInterval is how long a read's new last access waits in memory
// before it is written, together with every other read of that span, in
// one transaction: reading never waits for the index's write lock.
const touchFlushInterval = 2 * time.Second

// accessLog holds the reads not yet written as last_access_at.
type accessLog struct {
	readOnly bool // reads are not recorded
	log      hclog.Logger
	idx      *index

	mu      sync.Mutex // guards touched and pending
	touched map[int64]int64
	pending bool // a timer's flush is due

	// fmu orders flushes (stop waits for the timer's); stopped, under
	// it, ends them once the store closes.
	fmu     sync.Mutex
	stopped bool
}

// touch records that the artifact seq was read now; flush writes it.
func (a *accessLog) touch(seq int64) {
	if a.readOnly {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.touched == nil {
		a.touched = make(map[int64]int64)
	}
	a.touched[seq] = time.Now().UnixNano()
	if !a.pending {
		a.pending = true
		time.AfterFunc(touchFlushInterval, func() {
			a.mu.Lock()
			a.pending = false
			a.mu.Unlock()
			a.flush(context.Background())
		})
	}
}

// flush writes the recorded reads in one UPDATE transaction when the
// index is open; after stop it does nothing.
func (a *accessLog) flush(ctx context.Context) {
	a.fmu.Lock()
	defer a.fmu.Unlock()
	if a.stopped || !a.any() {
		return
	}
	db := a.idx.opened()
	if db == nil {
		return
	}
	if err := a.idx.write(ctx, db, func(tx *sql.Tx) error { return a.writeIn(ctx, tx) }); err != nil {
		// Only LRU order is lost: the artifacts are untouched.
		a.log.Warn("could not record artifact reads", "error", err)
	}
}

// stop flushes what is recorded and ends flushing: Close calls it before
// it closes the index, and a timer that fires later finds nothing to do.
func (a *accessLog) stop(ctx context.Context) {
	a.flush(ctx)
	a.fmu.Lock()
	a.stopped = true
	a.fmu.Unlock()
}

func (a *accessLog) any() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.touched) > 0
}

// writeIn writes the reads recorded so far inside tx, so that a put or
// an annotation carries them in its own commit rather than the timer
// paying one more (a CLI run that stores and inspects an artifact commits
// once less).
func (a *accessLog) writeIn(ctx context.Context, tx *sql.Tx) error {
	a.mu.Lock()
	m := a.touched
	a.touched = nil
	a.mu.Unlock()
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

// carry is writeIn for a write that has its own purpose: a failure
// loses LRU order only and is logged, not returned, and the write goes
// on.
func (a *accessLog) carry(ctx context.Context, tx *sql.Tx) {
	if err := a.writeIn(ctx, tx); err != nil {
		a.log.Warn("could not record artifact reads", "error", err)
	}
}

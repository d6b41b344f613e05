package fsstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcpx-dev/mcpx/store"
)

// annotate records the artifact's content summary in the index with its
// text parts pending for search, and hands the parts to the indexer, or
// indexes them itself when its queue is full.
func (w *writer) annotate(ctx context.Context, id string, content json.RawMessage, parts []store.TextPart) error {
	return w.annotateAs(ctx, id, content, parts, false)
}

// annotateAs is annotate; with later, the text is left pending for the
// indexer's TextReader to read from the bytes (parts is nil).
func (w *writer) annotateAs(ctx context.Context, id string, content json.RawMessage, parts []store.TextPart, later bool) error {
	if w.readOnly {
		return fmt.Errorf("fsstore: artifact[%s]: %w", store.QuoteID(id), ErrReadOnly)
	}
	if len(content) > 0 && !json.Valid(content) {
		return fmt.Errorf("fsstore: artifact[%s]: content is not JSON", store.QuoteID(id))
	}
	w.idx.wmu.enter()
	defer w.idx.wmu.leave()
	db, err := w.idx.forID(ctx, id)
	if err != nil {
		return err
	}
	seq, pending, err := w.summarize(ctx, db, id, content, parts, later)
	if err != nil {
		return fmt.Errorf("fsstore: artifact[%s]: %w", id, err)
	}
	if later {
		w.text.queue(id, pending, nil)
		return nil
	}
	if len(parts) == 0 || w.text.queue(id, pending, parts) {
		return nil
	}
	if err := w.text.indexText(ctx, seq, parts); err != nil {
		return fmt.Errorf("fsstore: artifact[%s]: %w", id, err)
	}
	return nil
}

// summarize writes the content summary, and parts (when any; with later,
// readLater) as the artifact's pending search text in place of any
// earlier, in a transaction that commits without an fsync of its own
// (synchronous=NORMAL on its connection): a
// summary is derived from the blob and computed again when missing, so it
// need not survive a power loss as the put it follows does, and a CLI run
// that stores one artifact pays one fsync of the index, not two. A process
// that dies after the commit keeps it (the OS has the WAL's pages); the
// next commit or checkpoint of any connection makes it durable. It
// returns the artifact's seq and the pending text's id.
func (w *writer) summarize(ctx context.Context, db *sql.DB, id string, content json.RawMessage, parts []store.TextPart, later bool) (seq, pending int64, err error) {
	var text []byte
	if later {
		text = []byte(readLater)
	} else if len(parts) > 0 {
		if text, err = json.Marshal(parts); err != nil {
			return 0, 0, err
		}
	}
	w.idx.wmu.Lock()
	defer w.idx.wmu.Unlock()
	conn, err := unsyncedConn(ctx, db)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return 0, 0, err
	}
	defer tx.Rollback()
	err = tx.QueryRowContext(ctx, `SELECT seq FROM artifacts WHERE id = ?`, id).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, store.ErrNotFound
	}
	if err != nil {
		return 0, 0, w.idx.queryErr(err)
	}
	var col any // NULL: no summary
	if len(content) > 0 {
		col = string(content)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE artifacts SET content = ? WHERE seq = ?`, col, seq); err != nil {
		return 0, 0, err
	}
	if text != nil {
		if pending, err = setPending(ctx, tx, seq, text); err != nil {
			return 0, 0, err
		}
	}
	w.reads.carry(ctx, tx)
	return seq, pending, tx.Commit()
}

// unsyncedConn returns a connection of db whose commits do not fsync the
// WAL (synchronous=NORMAL). Closing it sets synchronous back to FULL
// before the pool may hand it to a put; a connection that cannot be set
// back is discarded instead.
func unsyncedConn(ctx context.Context, db *sql.DB) (*syncedOnClose, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := conn.ExecContext(ctx, `PRAGMA synchronous=NORMAL`); err != nil {
		discard(conn)
		return nil, err
	}
	return &syncedOnClose{conn}, nil
}

// syncedOnClose is a connection with synchronous=NORMAL; Close restores
// FULL.
type syncedOnClose struct{ *sql.Conn }

func (c *syncedOnClose) Close() error {
	if _, err := c.ExecContext(context.Background(), `PRAGMA synchronous=FULL`); err != nil {
		discard(c.Conn)
		return err
	}
	return c.Conn.Close()
}

// discard closes conn and drops its driver connection rather than return
// it to the pool.
func discard(conn *sql.Conn) {
	_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	_ = conn.Close()
}

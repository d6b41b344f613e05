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

// annotate records the artifact's content summary in the index and
// hands its text parts to the indexer, or indexes them itself when its
// queue is full.
func (w *writer) annotate(ctx context.Context, id string, content json.RawMessage, parts []store.TextPart) error {
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
	if err := w.summarize(ctx, db, id, content); err != nil {
		return fmt.Errorf("fsstore: artifact[%s]: %w", id, err)
	}
	if len(parts) == 0 || w.text.queue(id, parts) {
		return nil
	}
	if err := w.text.indexText(ctx, id, parts); err != nil {
		return fmt.Errorf("fsstore: artifact[%s]: %w", id, err)
	}
	return nil
}

// summarize writes the content summary in a transaction that commits
// without an fsync of its own (synchronous=NORMAL on its connection): a
// summary is derived from the blob and computed again when missing, so it
// need not survive a power loss as the put it follows does, and a CLI run
// that stores one artifact pays one fsync of the index, not two. A process
// that dies after the commit keeps it (the OS has the WAL's pages); the
// next commit or checkpoint of any connection makes it durable.
func (w *writer) summarize(ctx context.Context, db *sql.DB, id string, content json.RawMessage) error {
	w.idx.wmu.Lock()
	defer w.idx.wmu.Unlock()
	conn, err := unsyncedConn(ctx, db)
	if err != nil {
		return err
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var seq int64
	err = tx.QueryRowContext(ctx, `SELECT seq FROM artifacts WHERE id = ?`, id).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrNotFound
	}
	if err != nil {
		return w.idx.queryErr(err)
	}
	var col any // NULL: no summary
	if len(content) > 0 {
		col = string(content)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE artifacts SET content = ? WHERE seq = ?`, col, seq); err != nil {
		return err
	}
	w.reads.carry(ctx, tx)
	return tx.Commit()
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

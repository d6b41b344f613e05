package fsstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcpx-dev/mcpx/store"
)

// Annotate records the artifact's content summary in the index (returned
// in Ref.Content by Stat, Get and List) and hands its text parts to the
// search index, written beside the caller (see indexer.go): annotating
// again replaces both.
func (s *Store) Annotate(ctx context.Context, id string, content json.RawMessage, parts []store.TextPart) error {
	if s.readOnly {
		return fmt.Errorf("fsstore: artifact[%s]: %w", store.QuoteID(id), ErrReadOnly)
	}
	if len(content) > 0 && !json.Valid(content) {
		return fmt.Errorf("fsstore: artifact[%s]: content is not JSON", store.QuoteID(id))
	}
	s.wmu.enter()
	defer s.wmu.leave()
	db, err := s.readIndex(ctx, id)
	if err != nil {
		return err
	}
	if err := s.annotate(ctx, db, id, content); err != nil {
		return fmt.Errorf("fsstore: artifact[%s]: %w", id, err)
	}
	if len(parts) == 0 || s.queueText(id, parts) {
		return nil
	}
	if err := s.indexText(ctx, id, parts); err != nil {
		return fmt.Errorf("fsstore: artifact[%s]: %w", id, err)
	}
	return nil
}

func (s *Store) annotate(ctx context.Context, db *sql.DB, id string, content json.RawMessage) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	tx, err := db.BeginTx(ctx, nil)
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
		return s.queryErr(err)
	}
	var col any // NULL: no summary
	if len(content) > 0 {
		col = string(content)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE artifacts SET content = ? WHERE seq = ?`, col, seq); err != nil {
		return err
	}
	if err := s.touchesIn(ctx, tx); err != nil {
		s.log.Warn("could not record artifact reads", "error", err)
	}
	return tx.Commit()
}

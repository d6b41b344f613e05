package fsstore

// Annotate: what an artifact's content says, kept in the index. (Stub of
// SEARCH's branch: SUMMARIES' annotate.go, which also keeps content in the
// content column, replaces it at merge.)

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mcpx-dev/mcpx/store"
)

var _ store.Annotator = (*Store)(nil)

// Annotate indexes parts for Search (content is kept by SUMMARIES' version).
func (s *Store) Annotate(ctx context.Context, id string, content json.RawMessage, parts []store.TextPart) error {
	if s.readOnly {
		return fmt.Errorf("fsstore: annotate[%s]: %w", store.QuoteID(id), ErrReadOnly)
	}
	db, err := s.readIndex(ctx, id)
	if err != nil {
		return err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("fsstore: annotate[%s]: %w", id, err)
	}
	defer tx.Rollback()
	if err := s.indexParts(ctx, tx, id, parts); err != nil {
		return fmt.Errorf("fsstore: annotate[%s]: %w", id, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("fsstore: annotate[%s]: %w", id, err)
	}
	return nil
}

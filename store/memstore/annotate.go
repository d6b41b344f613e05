package memstore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/mcpx-dev/mcpx/store"
)

// Annotate keeps the artifact's content summary (returned in Ref.Content)
// and its text parts (what Search reads), replacing earlier ones.
func (s *Store) Annotate(ctx context.Context, id string, content json.RawMessage, parts []store.TextPart) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memstore: artifact[%s]: %w", store.QuoteID(id), err)
	}
	if !store.ValidID(id) {
		return fmt.Errorf("memstore: artifact[%s]: %w", store.QuoteID(id), store.ErrInvalidID)
	}
	if len(content) > 0 && !json.Valid(content) {
		return fmt.Errorf("memstore: artifact[%s]: content is not JSON", id)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("memstore: artifact[%s]: %w", id, store.ErrClosed)
	}
	if _, ok := s.cat.Get(id); !ok {
		return fmt.Errorf("memstore: artifact[%s]: %w", id, store.ErrNotFound)
	}
	if len(content) == 0 {
		delete(s.content, id)
	} else {
		s.content[id] = bytes.Clone(content)
	}
	s.indexParts(id, parts)
	return nil
}

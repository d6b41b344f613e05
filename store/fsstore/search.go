package fsstore

// STUB by helper SUMMARIES so the branch compiles; helper SEARCH owns this
// file and replaces it at merge (an FTS5 table of the parts).

import (
	"context"
	"database/sql"

	"github.com/mcpx-dev/mcpx/store"
)

// indexParts replaces the text parts indexed for the artifact seq, inside
// the caller's write transaction.
func (s *Store) indexParts(ctx context.Context, tx *sql.Tx, seq int64, parts []store.TextPart) error {
	return nil
}

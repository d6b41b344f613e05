package fsstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/mcpx-dev/mcpx/store"
)

// LastAccess returns when artifact id was last read (or put): the time
// lru retention counts from. The HTTP API's /artifacts/{id}/meta reports
// it (web.AccessStater).
func (s *Store) LastAccess(ctx context.Context, id string) (time.Time, error) {
	db, err := s.index(ctx)
	if err != nil {
		return time.Time{}, err
	}
	if db == nil {
		return time.Time{}, fmt.Errorf("fsstore: artifact[%s]: %w", id, store.ErrNotFound)
	}
	var la int64
	err = db.QueryRowContext(ctx, `SELECT last_access_at FROM artifacts WHERE id = ?`, id).Scan(&la)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, fmt.Errorf("fsstore: artifact[%s]: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return time.Time{}, s.queryErr(err)
	}
	return time.Unix(0, la).UTC(), nil
}

package s3store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/minio/minio-go/v7"

	"github.com/mcpx-dev/mcpx/store"
)

// Annotate keeps the artifact's content summary in its record (returned
// in Ref.Content) and its text parts in text/<id> (what Search reads),
// replacing earlier ones. The record is rewritten only if unchanged since
// it was read (If-Match), so an Annotate racing a Delete cannot bring the
// record back.
func (s *Store) Annotate(ctx context.Context, id string, content json.RawMessage, parts []store.TextPart) error {
	if err := s.usableID(ctx, id); err != nil {
		return fmt.Errorf("s3store: artifact[%s]: %w", store.QuoteID(id), err)
	}
	if len(content) > 0 && !json.Valid(content) {
		return fmt.Errorf("s3store: artifact[%s]: content is not JSON", id)
	}
	for range 5 {
		rec, etag, ok, err := s.getRecord(ctx, id)
		if err != nil {
			return fmt.Errorf("s3store: artifact[%s]: %w", id, err)
		}
		if !ok {
			return fmt.Errorf("s3store: artifact[%s]: %w", id, store.ErrNotFound)
		}
		rec.Content = nil
		if len(content) > 0 {
			rec.Content = content
		}
		b, err := json.Marshal(rec)
		if err != nil {
			return fmt.Errorf("s3store: artifact[%s]: %w", id, err)
		}
		opts := minio.PutObjectOptions{ContentType: "application/json"}
		opts.SetMatchETag(etag)
		if err = s.putSmall(ctx, s.key("meta/", id), b, opts); isPreconditionFailed(err) {
			continue
		} else if err != nil {
			return fmt.Errorf("s3store: artifact[%s]: %w", id, err)
		}
		if len(parts) == 0 {
			err = s.removeErr(ctx, s.key("text/", id))
		} else {
			_, err = s.putJSON(ctx, s.key("text/", id), parts, false)
		}
		if err != nil {
			return fmt.Errorf("s3store: artifact[%s]: text: %w", id, err)
		}
		return nil
	}
	return fmt.Errorf("s3store: artifact[%s]: its record kept changing", id)
}

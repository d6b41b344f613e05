package s3store

import (
	"context"
	"fmt"
	"mime"
	"net/url"
	"time"

	"github.com/mcpx-dev/mcpx/store"
)

// PresignGet returns a URL that GETs the artifact's bytes straight from
// the object store until expiry passes (expiry < 1 means
// DefaultPresignExpiry; S3 allows at most 7 days), with the artifact's
// MIME type and file name as the response's Content-Type and
// Content-Disposition. Signing is local; finding the artifact's bytes
// costs one request. The URL is a bearer capability: whoever holds it
// reads the bytes, whatever their scope.
func (s *Store) PresignGet(ctx context.Context, id string, expiry time.Duration) (*url.URL, error) {
	ref, rec, err := s.stat(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("s3store: artifact[%s]: %w", store.QuoteID(id), err)
	}
	if expiry < 1 {
		expiry = DefaultPresignExpiry
	}
	params := url.Values{}
	if ref.MIMEType != "" {
		params.Set("response-content-type", ref.MIMEType)
	}
	if ref.Filename != "" {
		params.Set("response-content-disposition", mime.FormatMediaType("attachment", map[string]string{"filename": ref.Filename}))
	}
	u, err := s.client.PresignedGetObject(ctx, s.bucket, s.key("blobs/", rec.Blob), expiry, params)
	if err != nil {
		return nil, fmt.Errorf("s3store: artifact[%s]: presign: %w", id, err)
	}
	return u, nil
}

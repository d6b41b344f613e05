package s3store

import (
	"context"
	"fmt"
	"mime"
	"net/url"
	"sync"
	"time"

	"github.com/mcpx-dev/mcpx/store"
)

// PresignGet returns a URL that GETs the artifact's bytes straight from
// the object store until expiry passes (expiry < 1 means
// DefaultPresignExpiry; S3 allows at most 7 days), with the artifact's
// MIME type and file name as the response's Content-Type and
// Content-Disposition. Signing is local; finding the artifact's bytes,
// type and name costs a stat (three small requests). The URL is a bearer
// capability: whoever holds it reads the bytes, whatever their scope.
func (s *Store) PresignGet(ctx context.Context, id string, expiry time.Duration) (*url.URL, error) {
	ref, rec, err := s.reader.stat(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("s3store: artifact[%s]: %w", store.QuoteID(id), err)
	}
	return s.presign(ctx, id, rec.Blob, ref.MIMEType, ref.Filename, expiry)
}

// PresignURL is PresignGet for a caller that has the artifact's ref (the
// engine linking what it just stored): mimeType and filename come from
// it, so finding the bytes costs one request (the record), or none for an
// artifact this process put or read within the last minute.
func (s *Store) PresignURL(ctx context.Context, id, mimeType, filename string, expiry time.Duration) (*url.URL, error) {
	if err := s.life.usableID(ctx, id); err != nil {
		return nil, fmt.Errorf("s3store: artifact[%s]: %w", store.QuoteID(id), err)
	}
	blob, ok := s.recent.get(id)
	if !ok {
		rec, _, found, err := s.records.get(ctx, id)
		if err == nil && !found {
			err = store.ErrNotFound
		}
		if err != nil {
			return nil, fmt.Errorf("s3store: artifact[%s]: %w", store.QuoteID(id), err)
		}
		blob = rec.Blob
		s.recent.add(id, blob)
	}
	return s.presign(ctx, id, blob, mimeType, filename, expiry)
}

func (s *Store) presign(ctx context.Context, id, blob, mimeType, filename string, expiry time.Duration) (*url.URL, error) {
	if expiry < 1 {
		expiry = DefaultPresignExpiry
	}
	disposition := ""
	if filename != "" {
		disposition = mime.FormatMediaType("attachment", map[string]string{"filename": filename})
	}
	u, err := s.bucket.presignGet(ctx, s.bucket.key("blobs/", blob), expiry, mimeType, disposition)
	if err != nil {
		return nil, fmt.Errorf("s3store: artifact[%s]: presign: %w", store.QuoteID(id), err)
	}
	return u, nil
}

// recentBlobs remembers which blob holds the artifacts this process put
// or looked up lately, so that linking what was just stored costs no
// request. An entry is trusted for recentBlobLife: an artifact deleted
// and stored again (another blob) by another replica within it would get
// a URL that answers 404 until then.
type recentBlobs struct {
	mu    sync.Mutex
	byID  map[string]recentBlob
	order []string // ids, oldest first, at most recentBlobCount
}

type recentBlob struct {
	blob string
	at   time.Time
}

const (
	recentBlobCount = 1024
	recentBlobLife  = time.Minute
)

func (r *recentBlobs) add(id, blob string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byID == nil {
		r.byID = map[string]recentBlob{}
	}
	if _, ok := r.byID[id]; !ok {
		if len(r.order) == recentBlobCount {
			delete(r.byID, r.order[0])
			r.order = r.order[1:]
		}
		r.order = append(r.order, id)
	}
	r.byID[id] = recentBlob{blob: blob, at: time.Now()}
}

func (r *recentBlobs) get(id string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.byID[id]
	if !ok || time.Since(e.at) > recentBlobLife {
		return "", false
	}
	return e.blob, true
}

// forget drops id (deleted by this process).
func (r *recentBlobs) forget(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.byID, id) // its place in order goes when it comes round
}

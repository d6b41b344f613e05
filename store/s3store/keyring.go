package s3store

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
)

// keyRingKey is the object that keeps the HTTP surface's URL-signing key
// ring (web.KeyKeeper), under Config.Prefix: every replica signs and
// verifies with the same keys, and they outlive restarts. Collect's
// orphan sweep never looks under keys/.
const keyRingKey = "keys/url-signing.json"

// maxKeyRingBytes bounds the ring read back.
const maxKeyRingBytes = 1 << 20

// ReadKeys returns the key ring, or an error matching fs.ErrNotExist when
// none is kept yet. It implements web.KeyKeeper.
func (s *Store) ReadKeys(ctx context.Context) ([]byte, error) {
	b, _, err := s.bucket.getBytes(ctx, s.bucket.key(keyRingKey, ""), maxKeyRingBytes)
	if isNotFound(err) {
		return nil, fmt.Errorf("s3store: %s%s: %w", s.bucket.where, keyRingKey, fs.ErrNotExist)
	}
	return b, err
}

// WriteKeys keeps the key ring; with create only when none is kept (of
// replicas starting at once, one ring wins), reporting whether it wrote.
func (s *Store) WriteKeys(ctx context.Context, b []byte, create bool) (bool, error) {
	return s.bucket.putJSON(ctx, s.bucket.key(keyRingKey, ""), json.RawMessage(b), create)
}

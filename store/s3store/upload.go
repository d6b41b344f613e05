package s3store

// Streaming a put to the bucket: the bytes are hashed as minio-go reads
// them, so the sha256 that names the artifact costs no second pass and
// no copy of the artifact is kept.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"

	"github.com/minio/minio-go/v7"

	"github.com/mcpx-dev/mcpx/store"
)

// upload writes r to blobs/<blob> and returns its size and sha256. The
// first SinglePutBytes are read ahead: content that ends there goes in one
// PUT, longer content as a multipart upload of PartSize parts (minio-go
// holds one part at a time). A failure leaves no object (minio-go aborts
// the multipart upload) and returns the reader's or the context's error
// as it is.
func (s *Store) upload(ctx context.Context, blob string, r io.Reader, maxBytes int64) (int64, string, error) {
	hr := &hashingReader{ctx: ctx, r: r, h: sha256.New(), max: maxBytes}
	hp := s.heads.Get().(*[]byte)
	defer s.heads.Put(hp)
	head := *hp
	k, err := io.ReadFull(hr, head)
	key := s.key("blobs/", blob)
	opts := minio.PutObjectOptions{ContentType: "application/octet-stream", PartSize: uint64(s.partSize)}
	switch {
	case hr.err != nil:
		return 0, "", hr.err
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		_, err = s.client.PutObject(ctx, s.bucket, key, bytes.NewReader(head[:k]), int64(k), opts)
	case err != nil:
		return 0, "", err
	default:
		_, err = s.client.PutObject(ctx, s.bucket, key, io.MultiReader(bytes.NewReader(head), hr), -1, opts)
	}
	if hr.err != nil { // what made minio-go fail
		s.remove(ctx, key)
		return 0, "", hr.err
	}
	if err != nil {
		s.remove(ctx, key)
		if cerr := ctx.Err(); cerr != nil {
			return 0, "", cerr
		}
		return 0, "", err
	}
	return hr.n, hex.EncodeToString(hr.h.Sum(nil)), nil
}

// hashingReader hashes and counts what is read through it, honours ctx
// before every read and fails with store.ErrTooLarge past max (when
// positive). err keeps the first failure, so the caller can tell it from
// minio-go's wrapping.
type hashingReader struct {
	ctx context.Context
	r   io.Reader
	h   hash.Hash
	n   int64
	max int64
	err error
}

func (hr *hashingReader) Read(p []byte) (int, error) {
	if hr.err != nil {
		return 0, hr.err
	}
	if err := hr.ctx.Err(); err != nil {
		hr.err = err
		return 0, err
	}
	if hr.max > 0 && int64(len(p)) > hr.max-hr.n+1 {
		p = p[:hr.max-hr.n+1]
	}
	k, err := hr.r.Read(p)
	if k > 0 {
		if hr.max > 0 && hr.n+int64(k) > hr.max {
			hr.err = fmt.Errorf("more than %d bytes: %w", hr.max, store.ErrTooLarge)
			return 0, hr.err
		}
		hr.h.Write(p[:k])
		hr.n += int64(k)
	}
	if err != nil && err != io.EOF {
		hr.err = err
	}
	return k, err
}

package s3store

// Streaming a put to the bucket: the sha256 that names the artifact is
// the only pass of hashing over its bytes, and memory holds one part.

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
// first SinglePutBytes are read ahead. Content that ends there goes in one
// PUT while another goroutine hashes it, and onSum is told the sum as soon
// as it is known (from that goroutine, before upload returns). Longer
// content goes as a multipart upload of PartSize parts (minio-go holds
// one part at a time), hashed as minio-go reads it, and onSum is not
// called. Either way the bytes go unsigned (UNSIGNED-PAYLOAD, as minio-go
// sends every PUT over HTTPS): over plain HTTP minio-go would sign them in
// 64 KiB chunks, a second pass of hashing in line on each side (the 10
// MiB put took 1.4x minio-go's PutObject; BENCHMARKS.md). A failure leaves
// no object (minio-go aborts the multipart upload) and returns the
// reader's or the context's error as it is.
func (s *Store) upload(ctx context.Context, blob string, r io.Reader, maxBytes int64, onSum func(sum string)) (int64, string, error) {
	hr := &hashingReader{ctx: ctx, r: r, max: maxBytes}
	hp := s.heads.Get().(*[]byte)
	defer s.heads.Put(hp)
	head := *hp
	k, err := io.ReadFull(hr, head)
	key := s.key("blobs/", blob)
	opts := minio.PutObjectOptions{ContentType: "application/octet-stream", PartSize: uint64(s.partSize), DisableContentSha256: true}
	switch {
	case hr.err != nil:
		return 0, "", hr.err
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		sums := make(chan string, 1)
		go func() {
			b := sha256.Sum256(head[:k])
			sum := hex.EncodeToString(b[:])
			onSum(sum)
			sums <- sum
		}()
		_, err := s.core.PutObject(ctx, s.bucket, key, bytes.NewReader(head[:k]), int64(k), "", "", opts)
		sum := <-sums // head goes back to the pool only once hashed
		if err != nil {
			s.remove(ctx, key)
			if cerr := ctx.Err(); cerr != nil {
				return 0, "", cerr
			}
			return 0, "", err
		}
		return int64(k), sum, nil
	case err != nil:
		return 0, "", err
	}
	hr.h = sha256.New()
	hr.h.Write(head)
	_, err = s.client.PutObject(ctx, s.bucket, key, io.MultiReader(bytes.NewReader(head), hr), -1, opts)
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

// hashingReader counts what is read through it, and hashes it once h is
// set; it honours ctx before every read and fails with store.ErrTooLarge
// past max (when positive). err keeps the first failure, so the caller
// can tell it from minio-go's wrapping.
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
		if hr.h != nil {
			hr.h.Write(p[:k])
		}
		hr.n += int64(k)
	}
	if err != nil && err != io.EOF {
		hr.err = err
	}
	return k, err
}

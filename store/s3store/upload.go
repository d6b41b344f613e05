package s3store

// Streaming a put to the bucket: the sha256 that names the artifact is
// the only pass of hashing over its bytes, and memory holds two parts.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/store"
)

// uploader streams artifacts' bytes to blobs/.
type uploader struct {
	bucket              *bucket
	log                 hclog.Logger
	partSize, singlePut int64
	heads, parts        sync.Pool // *[]byte of singlePut and of partSize bytes
}

func newUploader(b *bucket, log hclog.Logger, partSize, singlePut int64) *uploader {
	u := &uploader{bucket: b, log: log, partSize: partSize, singlePut: singlePut}
	u.heads.New = func() any { b := make([]byte, singlePut); return &b }
	u.parts.New = func() any { b := make([]byte, partSize); return &b }
	return u
}

// upload writes r to blobs/<blob> and returns its size and sha256. The
// first SinglePutBytes are read ahead. Content that ends there goes in one
// PUT while another goroutine hashes it, and onSum is told the sum as soon
// as it is known (from that goroutine, before upload returns). Longer
// content goes as a multipart upload of PartSize parts (see multipart),
// hashed as it is read, and onSum is not called. Either way the bytes go
// unsigned (UNSIGNED-PAYLOAD) and without a checksum: signing them would
// hash them a second time in line on each side (the SDK's signed PUT of
// 10 MiB takes 1.3-1.8x its unsigned one; BENCHMARKS.md). A failure
// leaves no object (the multipart upload is aborted) and returns the
// reader's or the context's error as it is.
func (u *uploader) upload(ctx context.Context, blob string, r io.Reader, maxBytes int64, onSum func(sum string)) (int64, string, error) {
	hr := &hashingReader{ctx: ctx, r: r, max: maxBytes}
	hp := u.heads.Get().(*[]byte)
	defer u.heads.Put(hp)
	head := *hp
	k, err := io.ReadFull(hr, head)
	key := u.bucket.key("blobs/", blob)
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
		err := u.bucket.putBlob(ctx, key, head[:k])
		sum := <-sums // head goes back to the pool only once hashed
		if err != nil {
			u.bucket.remove(ctx, key)
			return 0, "", ctxErrOr(ctx, err)
		}
		return int64(k), sum, nil
	case err != nil:
		return 0, "", err
	}
	hr.h = sha256.New()
	hr.h.Write(head)
	err = u.multipart(ctx, key, head, hr)
	if hr.err != nil { // what made the upload fail
		u.bucket.remove(ctx, key)
		return 0, "", hr.err
	}
	if err != nil {
		u.bucket.remove(ctx, key)
		return 0, "", ctxErrOr(ctx, err)
	}
	return hr.n, hex.EncodeToString(hr.h.Sum(nil)), nil
}

// ctxErrOr is ctx's error when it ended (what cut the request), else
// err.
func ctxErrOr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	return err
}

// minPartSize is S3's smallest part but the last.
const minPartSize = 5 << 20

// multipart writes head and then rest to key in parts of PartSize;
// content that fits one part goes in one PUT. Each part is sent while the
// next is read (and hashed), from two buffers in turn: the head itself
// and one more when the head is a whole part (the defaults), else two
// more. A failure aborts the upload.
func (u *uploader) multipart(ctx context.Context, key string, head []byte, rest io.Reader) error {
	first, src := head, rest
	if int64(len(head)) != u.partSize || len(head) < minPartSize {
		// The head is read again into parts of their own size.
		pp := u.parts.Get().(*[]byte)
		defer u.parts.Put(pp)
		src = io.MultiReader(bytes.NewReader(head), rest)
		n, err := io.ReadFull(src, *pp)
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return u.bucket.putBlob(ctx, key, (*pp)[:n])
		}
		if err != nil {
			return err
		}
		first = *pp
	}
	pp := u.parts.Get().(*[]byte)
	defer u.parts.Put(pp)
	bufs := [2][]byte{first, *pp}
	id, err := u.bucket.startUpload(ctx, key)
	if err != nil {
		return err
	}
	var parts []types.CompletedPart
	part, last := first, false
	for i, cur := int32(1), 0; ; i, cur = i+1, 1-cur {
		type sent struct {
			part types.CompletedPart
			err  error
		}
		done := make(chan sent, 1)
		go func(data []byte) {
			p, err := u.bucket.uploadPart(ctx, key, id, i, data)
			done <- sent{p, err}
		}(part)
		var n int
		var rerr error
		if !last {
			n, rerr = io.ReadFull(src, bufs[1-cur])
		}
		r := <-done
		if r.err != nil {
			return u.abort(ctx, key, id, r.err)
		}
		parts = append(parts, r.part)
		if last || errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil && !errors.Is(rerr, io.ErrUnexpectedEOF) {
			return u.abort(ctx, key, id, rerr)
		}
		part, last = bufs[1-cur][:n], rerr != nil
	}
	if err := u.bucket.completeUpload(ctx, key, id, parts); err != nil {
		return u.abort(ctx, key, id, err)
	}
	return nil
}

// abort drops the upload id after cause, whether or not ctx has ended,
// and returns cause. One it cannot drop is left to Collect's sweep (or
// the bucket's lifecycle rule).
func (u *uploader) abort(ctx context.Context, key, id string, cause error) error {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := u.bucket.abortUpload(actx, key, id); err != nil {
		u.log.Warn("aborting a multipart upload", "key", key, "error", err)
	}
	return cause
}

// hashingReader counts what is read through it, and hashes it once h is
// set; it honours ctx before every read and fails with store.ErrTooLarge
// past max (when positive). err keeps the first failure, so the caller
// can tell it from the SDK's wrapping.
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

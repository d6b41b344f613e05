// Package putio holds the streaming helpers every backend's Put uses: a
// reader that honours the context and PutOptions.MaxBytes, and a copy that
// hashes as it writes through a pooled buffer.
package putio

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"sync"

	"github.com/mcpx-dev/mcpx/store"
)

// BufferSize is the size of the buffers Copy uses.
const BufferSize = 256 << 10

var buffers = sync.Pool{New: func() any { b := make([]byte, BufferSize); return &b }}

// Copy copies from r to w until EOF, hashing what it copies, and returns the
// byte count and the lower-case hex sha256 of the bytes. It stops before
// reading more than maxBytes+1 bytes when maxBytes > 0 and fails with
// store.ErrTooLarge (wrapped), and it checks ctx before every read. Errors
// from r, w and ctx are returned as they are.
//
// It writes whole buffers (BufferSize, the last one short): a reader that
// returns a few bytes per Read still costs one write per buffer, not one
// system call per Read.
func Copy(ctx context.Context, w io.Writer, r io.Reader, maxBytes int64) (n int64, sha256hex string, err error) {
	if err := ctx.Err(); err != nil {
		return 0, "", err
	}
	h := sha256.New()
	bp := buffers.Get().(*[]byte)
	defer buffers.Put(bp)
	buf := *bp
	fill := 0 // bytes read into buf and not yet written
	for {
		if err := ctx.Err(); err != nil {
			return n, "", err
		}
		p := buf[fill:]
		if maxBytes > 0 && int64(len(p)) > maxBytes-n+1 {
			p = p[:maxBytes-n+1]
		}
		k, rerr := r.Read(p)
		if k > 0 {
			if maxBytes > 0 && n+int64(k) > maxBytes {
				return n, "", fmt.Errorf("more than %d bytes: %w", maxBytes, store.ErrTooLarge)
			}
			n += int64(k)
			fill += k
		}
		if rerr != nil && rerr != io.EOF {
			return n, "", rerr
		}
		if fill > 0 && (fill == len(buf) || rerr == io.EOF) {
			h.Write(buf[:fill])
			if _, werr := w.Write(buf[:fill]); werr != nil {
				return n, "", werr
			}
			fill = 0
		}
		if rerr == io.EOF {
			break
		}
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

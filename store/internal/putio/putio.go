// Package putio holds the streaming helpers every backend's Put uses: a
// reader that honours the context and PutOptions.MaxBytes, and a copy that
// hashes as it writes through a pooled buffer.
package putio

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
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
// system call per Read. Past pipeAfter buffers the rest of a stream is
// hashed on another goroutine, a buffer behind the reads and writes:
// SHA-256 is the slowest stage of a large put (about 1.3 GB/s with SHA-NI,
// where a 10 MiB base64 value decodes at several GB/s and a write to the
// page cache copies at several more), so on two cores the copy takes
// about the hash's time rather than the sum of the three.
func Copy(ctx context.Context, w io.Writer, r io.Reader, maxBytes int64) (n int64, sha256hex string, err error) {
	if err := ctx.Err(); err != nil {
		return 0, "", err
	}
	h := sha256.New()
	var pipe *hashPipe
	defer func() {
		if pipe != nil {
			pipe.stop()
		}
	}()
	bp := buffers.Get().(*[]byte)
	filled := 0 // buffers read so far
	for {
		fill, eof, err := fillBuffer(ctx, *bp, r, maxBytes, &n)
		if err != nil {
			buffers.Put(bp)
			return n, "", err
		}
		if fill > 0 {
			if filled++; pipe == nil && !eof && filled > pipeAfter {
				pipe = startHashPipe(h)
			}
			if pipe == nil {
				h.Write((*bp)[:fill])
			} else {
				pipe.send(bp, fill)
			}
			if _, werr := w.Write((*bp)[:fill]); werr != nil {
				if pipe == nil {
					buffers.Put(bp)
				}
				return n, "", werr
			}
			if pipe != nil {
				bp = pipe.next()
			}
		}
		if eof {
			break
		}
	}
	if pipe == nil {
		buffers.Put(bp)
	} else {
		pipe.free = append(pipe.free, bp)
		pipe.stop()
		pipe = nil
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

// fillBuffer reads from r into buf until it is full, r ends (eof) or
// fails, counting the bytes in *n against maxBytes.
func fillBuffer(ctx context.Context, buf []byte, r io.Reader, maxBytes int64, n *int64) (fill int, eof bool, err error) {
	for fill < len(buf) {
		if err := ctx.Err(); err != nil {
			return fill, false, err
		}
		p := buf[fill:]
		if maxBytes > 0 && int64(len(p)) > maxBytes-*n+1 {
			p = p[:maxBytes-*n+1]
		}
		k, rerr := r.Read(p)
		if k > 0 {
			if maxBytes > 0 && *n+int64(k) > maxBytes {
				return fill, false, fmt.Errorf("more than %d bytes: %w", maxBytes, store.ErrTooLarge)
			}
			*n += int64(k)
			fill += k
		}
		if rerr == io.EOF {
			return fill, true, nil
		}
		if rerr != nil {
			return fill, false, rerr
		}
	}
	return fill, false, nil
}

// hashPipe hashes filled buffers in order on its own goroutine and hands
// them back.
type hashPipe struct {
	todo chan hashJob
	done chan *[]byte // buffers hashed
	// free are buffers neither being filled nor queued; the pipe holds
	// pipeBuffers in all.
	free     []*[]byte
	finished chan struct{}
	queued   int // buffers in todo or being hashed
}

type hashJob struct {
	buf  *[]byte
	fill int
}

// pipeAfter is how many buffers Copy hashes itself before it hashes on
// another goroutine: a put of a megabyte or less (most text, most images)
// is done before a second goroutine would pay for its start and wake-ups.
const pipeAfter = 4

// pipeBuffers is how many buffers a pipe cycles through: one being filled
// and written, one being hashed, one ready.
const pipeBuffers = 3

func startHashPipe(h hash.Hash) *hashPipe {
	p := &hashPipe{
		todo:     make(chan hashJob, pipeBuffers),
		done:     make(chan *[]byte, pipeBuffers),
		finished: make(chan struct{}),
	}
	for range pipeBuffers - 1 {
		p.free = append(p.free, buffers.Get().(*[]byte))
	}
	go func() {
		defer close(p.finished)
		for j := range p.todo {
			h.Write((*j.buf)[:j.fill])
			p.done <- j.buf
		}
	}()
	return p
}

// send queues a filled buffer for the hasher.
func (p *hashPipe) send(bp *[]byte, fill int) {
	p.todo <- hashJob{bp, fill}
	p.queued++
}

// next returns a buffer to fill: a free one, else the next one the hasher
// is done with.
func (p *hashPipe) next() *[]byte {
	if len(p.free) == 0 {
		p.free = append(p.free, <-p.done)
		p.queued--
	}
	bp := p.free[len(p.free)-1]
	p.free = p.free[:len(p.free)-1]
	return bp
}

// stop waits for the hasher to finish what was queued and returns every
// buffer to the pool.
func (p *hashPipe) stop() {
	close(p.todo)
	<-p.finished
	for ; p.queued > 0; p.queued-- {
		p.free = append(p.free, <-p.done)
	}
	for _, bp := range p.free {
		buffers.Put(bp)
	}
	p.free = nil
}

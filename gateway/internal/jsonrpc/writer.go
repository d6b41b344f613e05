package jsonrpc

import (
	"io"
	"sync"
	"syscall"

	"github.com/mcpx-dev/mcpx/gateway/config"
)

// maxSpareBuffer caps the buffer a LineWriter keeps between writes; a
// larger one (after a big message) is dropped.
const maxSpareBuffer = 1 << 20

// LineWriter writes newline-delimited messages to w from any number of
// goroutines without holding a lock across I/O: a writer appends its
// message to the pending buffer; if no write is in progress it becomes
// the flusher and writes the pending bytes, again and again until none
// are left, while the others return at once. Calls in flight together so
// share write calls, and a slow reader never blocks a caller behind a
// lock.
//
// The pending buffer is bounded (back-pressure): while a write is in
// progress and limit bytes already wait, a writer waits until the
// flusher has taken them, so a peer that does not read holds writers
// up instead of growing memory. A message larger than limit is still
// queued when nothing else waits.
type LineWriter struct {
	w     io.Writer
	limit int
	// raw is w's descriptor when it is non-blocking (a pipe in the
	// runtime's poller): TryWrite writes through it what the peer takes
	// at once. nil: TryWrite leaves all writing to a goroutine.
	raw syscall.RawConn
	// the raw writes' state (writer_unix.go), the flusher's only
	rawFn   func(fd uintptr) bool
	rawBuf  []byte
	rawN    int
	rawErr  error
	rawWait bool

	mu       sync.Mutex
	drained  *sync.Cond // signalled when the flusher takes the pending bytes
	waiting  int        // writers waiting on drained
	buf      []byte     // pending bytes
	spare    []byte     // the last written buffer, for reuse
	flushing bool
	err      error // the first write error; later writes fail with it
}

// NewLineWriter returns a LineWriter on w whose pending bytes are capped
// at limit (DefaultWriteBufferBytes when limit <= 0).
func NewLineWriter(w io.Writer, limit int64) *LineWriter {
	if limit <= 0 {
		limit = config.DefaultWriteBufferBytes
	}
	l := &LineWriter{w: w, limit: int(limit), raw: nonBlocking(w)}
	l.drained = sync.NewCond(&l.mu)
	return l
}

// Write queues msg and a newline and, unless another goroutine is
// writing, writes everything queued. It returns the first write error
// this writer has seen.
func (l *LineWriter) Write(msg []byte) error {
	l.mu.Lock()
	for l.err == nil && l.flushing && len(l.buf) > 0 && len(l.buf)+len(msg) >= l.limit {
		l.waiting++
		l.drained.Wait()
		l.waiting--
	}
	if l.err != nil {
		err := l.err
		l.mu.Unlock()
		return err
	}
	l.buf = append(l.buf, msg...)
	l.buf = append(l.buf, '\n')
	if l.flushing {
		l.mu.Unlock()
		return nil
	}
	l.flushing = true
	l.flushLocked()
	err := l.err
	l.mu.Unlock()
	return err
}

// takeLocked takes the pending bytes for a write, leaving the spare
// buffer to append to meanwhile, and wakes the senders waiting for room.
func (l *LineWriter) takeLocked() []byte {
	b := l.buf
	l.buf = l.spare[:0]
	l.spare = nil
	if l.waiting > 0 {
		l.drained.Broadcast()
	}
	return b
}

// flushLocked writes the pending bytes until none are left, as the
// flusher (flushing set), with mu held but released around each write.
func (l *LineWriter) flushLocked() {
	for len(l.buf) > 0 && l.err == nil {
		b := l.takeLocked()
		l.mu.Unlock()
		var err error
		if l.raw != nil {
			err = l.writeAll(b)
		} else {
			_, err = l.w.Write(b)
		}
		l.mu.Lock()
		if err != nil {
			l.err = err
		}
		if cap(b) <= maxSpareBuffer {
			l.spare = b
		}
	}
	l.flushing = false
	if l.waiting > 0 {
		l.drained.Broadcast() // an error, or waiters may now flush themselves
	}
}

// Offer queues msg like Write, but never waits and never writes on the
// caller's goroutine: with no write in progress, a goroutine of its own
// becomes the flusher. It reports false, queuing nothing, when limit
// bytes already wait. For a caller that must not block (a connection's
// reader: the peer may write on before it reads) and may drop msg.
func (l *LineWriter) Offer(msg []byte) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return true // the peer is gone: nothing will be read
	}
	if len(l.buf) > 0 && len(l.buf)+len(msg) >= l.limit {
		return false
	}
	l.buf = append(l.buf, msg...)
	l.buf = append(l.buf, '\n')
	if !l.flushing {
		l.flushing = true
		go func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.flushLocked()
		}()
	}
	return true
}

// TryWrite queues msg like Write but never waits for the peer, for a
// caller that must go on at once (the reader of a client's requests):
// with no write in progress it writes on the caller's goroutine what the
// peer takes without waiting (raw), and leaves the rest, if any, to a
// goroutine of its own that becomes the flusher. It reports false,
// queuing nothing, when limit bytes already wait (the caller then writes
// with Write elsewhere); err is the first write error this writer has
// seen (the peer is gone).
func (l *LineWriter) TryWrite(msg []byte) (ok bool, err error) {
	l.mu.Lock()
	if l.err != nil {
		err = l.err
		l.mu.Unlock()
		return false, err
	}
	if len(l.buf) > 0 && len(l.buf)+len(msg) >= l.limit {
		l.mu.Unlock()
		return false, nil
	}
	l.buf = append(l.buf, msg...)
	l.buf = append(l.buf, '\n')
	if l.flushing {
		l.mu.Unlock()
		return true, nil
	}
	l.flushing = true
	for l.raw != nil && len(l.buf) > 0 && l.err == nil {
		b := l.takeLocked()
		l.mu.Unlock()
		n, werr := l.writeNow(b)
		l.mu.Lock()
		if werr != nil {
			l.err = werr
			break
		}
		if n < len(b) {
			// the peer takes no more now: the rest goes first
			l.buf = append(b[n:], l.buf...)
			break
		}
		if cap(b) <= maxSpareBuffer {
			l.spare = b
		}
	}
	if len(l.buf) > 0 && l.err == nil {
		go func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.flushLocked()
		}()
	} else {
		l.flushing = false
		if l.waiting > 0 {
			l.drained.Broadcast()
		}
	}
	err = l.err
	l.mu.Unlock()
	return err == nil, err
}

// Pending returns how many bytes wait to be written (tests).
func (l *LineWriter) Pending() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buf)
}

// Send writes msg and ignores the error: for writers whose failure shows
// elsewhere (the peer is gone).
func (l *LineWriter) Send(msg []byte) { _ = l.Write(msg) }

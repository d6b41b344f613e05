package gateway

import (
	"io"
	"sync"
)

// maxSpareBuffer caps the buffer a lineWriter keeps between writes; a
// larger one (after a big message) is dropped.
const maxSpareBuffer = 1 << 20

// lineWriter writes newline-delimited messages to w from any number of
// goroutines without holding a lock across I/O: a writer appends its
// message to the pending buffer; if no write is in progress it becomes
// the flusher and writes the pending bytes, again and again until none
// are left, while the others return at once. Calls in flight together so
// share write calls, and a slow reader never blocks a caller behind a
// lock.
type lineWriter struct {
	w io.Writer

	mu       sync.Mutex
	buf      []byte // pending bytes
	spare    []byte // the last written buffer, for reuse
	flushing bool
	err      error // the first write error; later writes fail with it
}

func newLineWriter(w io.Writer) *lineWriter { return &lineWriter{w: w} }

// write queues msg and a newline and, unless another goroutine is
// writing, writes everything queued. It returns the first write error
// this writer has seen.
func (l *lineWriter) write(msg []byte) error {
	l.mu.Lock()
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
	for len(l.buf) > 0 && l.err == nil {
		b := l.buf
		l.buf = l.spare[:0]
		l.spare = nil
		l.mu.Unlock()
		_, err := l.w.Write(b)
		l.mu.Lock()
		if err != nil {
			l.err = err
		}
		if cap(b) <= maxSpareBuffer {
			l.spare = b
		}
	}
	l.flushing = false
	err := l.err
	l.mu.Unlock()
	return err
}

// send writes msg and ignores the error: for writers whose failure shows
// elsewhere (the peer is gone).
func (l *lineWriter) send(msg []byte) { _ = l.write(msg) }

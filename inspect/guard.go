package inspect

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"
)

// Errors shared by the PDF and archive readers (ErrByteCap is inspect.go's).
var (
	// ErrParserPanic is returned (wrapped) when a parser panicked on
	// malformed input; the panic is recovered.
	ErrParserPanic = errors.New("inspect: parser failed on malformed input")
)

// abandonGrace is how long a parser may run past its deadline before it is
// left behind in its goroutine. Its reads fail from the deadline on, so a
// parser that reads stops soon; one spinning without reading is abandoned.
const abandonGrace = 50 * time.Millisecond

// limitsOrDefault fills Limits' zero fields with their defaults.
func limitsOrDefault(lim Limits) Limits {
	if lim.MaxBytes <= 0 {
		lim.MaxBytes = DefaultMaxBytes
	}
	if lim.Timeout <= 0 {
		lim.Timeout = DefaultTimeout
	}
	if lim.MaxTextBytes <= 0 {
		lim.MaxTextBytes = DefaultMaxTextBytes
	}
	return lim
}

// guardedReaderAt is the reader third-party parsers get: it fails every
// read once ctx is done or once more than max bytes were asked for in all,
// so a parser that loops over its input or inflates a bomb stops reading.
type guardedReaderAt struct {
	ctx  context.Context
	r    io.ReaderAt
	left atomic.Int64
}

func newGuardedReaderAt(ctx context.Context, r io.ReaderAt, max int64) *guardedReaderAt {
	g := &guardedReaderAt{ctx: ctx, r: r}
	g.left.Store(max)
	return g
}

func (g *guardedReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if err := g.ctx.Err(); err != nil {
		return 0, err
	}
	if g.left.Add(-int64(len(p))) < 0 {
		return 0, ErrByteCap
	}
	return g.r.ReadAt(p, off)
}

// exhausted says why reads fail now: "time", "bytes" or "" when they do not.
func (g *guardedReaderAt) exhausted() string {
	switch {
	case g.ctx.Err() != nil:
		return "time"
	case g.left.Load() < 0:
		return "bytes"
	}
	return ""
}

// runGuarded runs fn in its own goroutine, recovering a panic as
// ErrParserPanic, and returns its result; if fn is still running
// abandonGrace after ctx is done, it returns ctx's error and leaves fn
// behind (its reads fail, so it ends on its own).
func runGuarded[T any](ctx context.Context, fn func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				var zero T
				done <- result{zero, fmt.Errorf("%w: %v", ErrParserPanic, p)}
			}
		}()
		v, err := fn()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
	}
	t := time.NewTimer(abandonGrace)
	defer t.Stop()
	select {
	case r := <-done:
		return r.v, r.err
	case <-t.C:
		var zero T
		return zero, fmt.Errorf("inspect: parser still running at the deadline: %w", ctx.Err())
	}
}

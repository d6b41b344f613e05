package upstreamhttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
)

// Defaults of Config's limits.
const (
	// DefaultMaxMessageBytes is Config.MaxMessageBytes's default: the
	// gateway's max_upstream_message_bytes default.
	DefaultMaxMessageBytes = 128 << 20
	// DefaultMaxConnsPerHost is Config.MaxConnsPerHost's default: enough
	// for the calls many sessions have in flight at once; more wait for a
	// connection rather than each opening its own.
	DefaultMaxConnsPerHost = 32
)

var (
	// ErrMessageTooLarge is returned for a message from the server over
	// Config.MaxMessageBytes: the call it answers fails, and a stream
	// carrying it is dropped.
	ErrMessageTooLarge = errors.New("upstream message too large")
	// ErrTimeout is returned when Config.Timeout ends a request, body or
	// stream included. It matches context.DeadlineExceeded too.
	ErrTimeout = fmt.Errorf("no answer within the request timeout: %w", context.DeadlineExceeded)
	// ErrCrossOriginRedirect is returned when the server redirects a
	// request to another origin: the request's headers (authorization),
	// body and session ID would go with it.
	ErrCrossOriginRedirect = errors.New("redirect to another origin refused")
)

// limits are the bounds of one transport, defaults applied.
type limits struct {
	maxMessage int64
	timeout    time.Duration // 0: none beyond the caller's context
}

// tooLarge is the error for something over the message cap.
func (l limits) tooLarge(what string) error {
	return fmt.Errorf("%s of more than %d bytes: %w", what, l.maxMessage, ErrMessageTooLarge)
}

// bodyGrowBound is the most readBody allocates ahead of the bytes it has
// read: a declared Content-Length is a claim, not a reason to allocate.
const bodyGrowBound = 64 << 10

// readBody reads a response body whole, counting the bytes after any
// Content-Encoding is undone (Go's client inflates gzip itself) against
// the message cap: a declared length over it is refused before reading,
// and a body that grows past it is read no further. The body is read in
// place into one buffer grown by jsonrpc.GrowCapped, so a body that
// inflates past the cap holds at most 1.5 times the cap at once.
func (l limits) readBody(resp *http.Response) ([]byte, error) {
	if resp.ContentLength > l.maxMessage {
		return nil, l.tooLarge(fmt.Sprintf("a body declared (Content-Length %d)", resp.ContentLength))
	}
	var buf []byte
	if n := resp.ContentLength; n > 0 {
		buf = make([]byte, 0, min(n, bodyGrowBound))
	}
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) == l.maxMessage {
				// Full at the cap: one byte more is one too many.
				var probe [1]byte
				n, err := io.ReadFull(resp.Body, probe[:])
				if n > 0 {
					return nil, l.tooLarge("a body")
				}
				if errors.Is(err, io.EOF) {
					return buf, nil
				}
				return nil, err
			}
			buf = jsonrpc.GrowCapped(buf, len(buf)+1, l.maxMessage)
		}
		n, err := resp.Body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

package gateway

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
)

// ServeStdio serves one client over newline-delimited JSON-RPC on in and
// out (the MCP stdio transport) until in ends or ctx is done. Requests run
// concurrently; each message is written whole, under a lock.
func (g *Gateway) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	if g.closed.Load() {
		return ErrClosed
	}
	w := &lineWriter{w: bufio.NewWriterSize(out, 64<<10)}
	s := g.NewSession("", w.write)
	defer s.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	lines := make(chan []byte)
	readErr := make(chan error, 1)
	go func() {
		br := bufio.NewReaderSize(in, 64<<10)
		for {
			line, err := br.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				select {
				case lines <- line:
				case <-ctx.Done():
					readErr <- ctx.Err()
					return
				}
			}
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = nil
				}
				readErr <- err
				return
			}
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-readErr:
			cancel() // the client is gone: its calls in flight end
			if err != nil {
				return fmt.Errorf("gateway: read stdin: %w", err)
			}
			return nil
		case line := <-lines:
			if isNotification(line) || bytes.Contains(line, []byte(`"initialize"`)) {
				// in order: initialize and initialized before the next
				// request, cancelled at once
				if resp := s.Handle(ctx, line, nil); resp != nil {
					w.write(resp)
				}
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if resp := s.Handle(ctx, line, nil); resp != nil {
					w.write(resp)
				}
			}()
		}
	}
}

// isNotification is a quick look for a message without an id.
func isNotification(line []byte) bool {
	return !bytes.Contains(line, []byte(`"id"`))
}

// lineWriter writes whole messages, one per line.
type lineWriter struct {
	mu  sync.Mutex
	w   *bufio.Writer
	err error
}

func (l *lineWriter) write(msg []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return
	}
	if _, err := l.w.Write(msg); err != nil {
		l.err = err
		return
	}
	if err := l.w.WriteByte('\n'); err != nil {
		l.err = err
		return
	}
	l.err = l.w.Flush()
}

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
// concurrently; each message is written whole, and messages ready together
// share a write (see lineWriter).
func (g *Gateway) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	if g.closed.Load() {
		return ErrClosed
	}
	w := newLineWriter(out)
	s := g.NewSession("", w.send)
	defer s.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg      sync.WaitGroup
		spawnMu sync.Mutex
		ended   bool
	)
	defer func() {
		spawnMu.Lock()
		ended = true // no request starts after this
		spawnMu.Unlock()
		wg.Wait()
	}()
	pool := newWorkers()
	defer pool.stop()
	readErr := make(chan error, 1)
	// The reader starts each request's goroutine itself: no hop through
	// another goroutine between reading a line and handling it.
	go func() {
		br := bufio.NewReaderSize(in, 64<<10)
		for {
			line, err := br.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 && ctx.Err() == nil {
				if isNotification(line) || bytes.Contains(line, []byte(`"initialize"`)) {
					// in order: initialize and initialized before the
					// next request, cancelled at once
					if resp := s.Handle(ctx, line, nil); resp != nil {
						w.send(resp)
					}
				} else if spawnMu.Lock(); !ended {
					wg.Add(1)
					spawnMu.Unlock()
					pool.run(func() {
						defer wg.Done()
						if resp := s.Handle(ctx, line, nil); resp != nil {
							w.send(resp)
						}
					})
				} else {
					spawnMu.Unlock()
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
	select {
	case <-ctx.Done():
		return nil
	case err := <-readErr:
		cancel() // the client is gone: its calls in flight end
		if err != nil {
			return fmt.Errorf("gateway: read stdin: %w", err)
		}
		return nil
	}
}

// isNotification is a quick look for a message without an id.
func isNotification(line []byte) bool {
	return !bytes.Contains(line, []byte(`"id"`))
}

package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/tidwall/gjson"
	"golang.org/x/sync/semaphore"
)

// ServeStdio serves one client over newline-delimited JSON-RPC on in and
// out (the MCP stdio transport) until in ends or ctx is done. Requests run
// concurrently; each message is written whole, and messages ready together
// share a write (see lineWriter).
func (g *Gateway) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	if g.closed.Load() {
		return ErrClosed
	}
	w := newLineWriter(out, g.limits.WriteBufferBytes)
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
	st := &stdioState{wg: &wg, spawnMu: &spawnMu, ended: &ended, pool: pool, queue: semaphore.NewWeighted(g.limits.LargeRequestBytes)}
	readErr := make(chan error, 1)
	// The reader parses each line and starts its request's goroutine
	// itself: no hop through another goroutine between reading a line and
	// handling it.
	go func() {
		br := bufio.NewReaderSize(in, 64<<10)
		for {
			line, over, err := readLine(br, g.limits.MaxMessageBytes)
			if over {
				w.send(tooLargeResponse(line, g.limits.MaxMessageBytes))
			} else if len(bytes.TrimSpace(line)) > 0 && ctx.Err() == nil {
				g.stdioMessage(ctx, s, w, line, st)
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

// stdioState is what ServeStdio's reader shares with the requests it
// starts.
type stdioState struct {
	wg      *sync.WaitGroup
	spawnMu *sync.Mutex
	ended   *bool // no request starts once set
	pool    *workers
	// queue bounds the bytes of large requests read but still waiting
	// for their share of the gateway's large-request budget: past it the
	// reader stops reading (back-pressure on the client). Waiting happens
	// off the reader otherwise, so that it still reads the client's
	// notifications/cancelled for the request that holds the budget.
	queue *semaphore.Weighted
}

// stdioMessage dispatches one client line on its parsed method.
// Notifications and initialize are handled in order, before the next line
// is read (initialize and initialized before the next request, cancelled
// at once); requests run on the pool. A large request runs once it has
// its share of limits.large_request_bytes.
func (g *Gateway) stdioMessage(ctx context.Context, s *Session, w *lineWriter, line []byte, st *stdioState) {
	m, errResp := parseClientMessage(line)
	if errResp != nil {
		w.send(errResp)
		return
	}
	if !m.isRequest() || m.Method == "initialize" {
		if resp := s.handle(ctx, m, nil); resp != nil {
			w.send(resp)
		}
		return
	}
	weight := int64(0)
	if n := int64(len(line)); n >= g.limits.LargeMessageBytes {
		if err := st.queue.Acquire(ctx, n); err != nil {
			return // the client is gone
		}
		weight = n
	}
	st.spawnMu.Lock()
	if *st.ended {
		st.spawnMu.Unlock()
		st.queue.Release(weight)
		return
	}
	st.wg.Add(1)
	st.spawnMu.Unlock()
	st.pool.run(func() {
		defer st.wg.Done()
		if weight > 0 {
			err := g.large.Acquire(ctx, weight)
			st.queue.Release(weight)
			if err != nil {
				return // the client is gone
			}
			defer g.large.Release(weight)
		}
		if resp := s.handle(ctx, m, nil); resp != nil {
			w.send(resp)
		}
	})
}

// tooLargeResponse answers a client message over the size limit, with
// the request's id when its head names one.
func tooLargeResponse(head []byte, limit int64) []byte {
	var id json.RawMessage
	if v := gjson.GetBytes(head, "id"); v.Type == gjson.Number || v.Type == gjson.String {
		id = json.RawMessage(v.Raw)
	}
	return encodeError(id, &RPCError{Code: CodeInvalidRequest, Message: "invalid request: " + tooLargeError(limit, "limits.max_message_bytes").Error()})
}

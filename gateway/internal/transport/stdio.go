package transport

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

	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
	"github.com/mcpx-dev/mcpx/gateway/internal/session"
)

// ServeStdio serves one client over newline-delimited JSON-RPC on in and
// out (the MCP stdio transport) until in ends or ctx is done, in a
// session of its own (readsStore: the client is the local user who
// started the gateway, session.New). Requests run concurrently; each
// message is written whole, and messages ready together share a write
// (see jsonrpc.LineWriter).
func ServeStdio(ctx context.Context, sh Shared, readsStore bool, in io.Reader, out io.Writer) error {
	w := jsonrpc.NewLineWriter(out, sh.Limits.WriteBufferBytes)
	s := session.New(sh.Rooms, session.Identity{}, w.Send, readsStore)
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
	st := &stdioConn{sh: sh, s: s, w: w, wg: &wg, spawnMu: &spawnMu, ended: &ended, pool: pool, queue: semaphore.NewWeighted(sh.Limits.LargeRequestBytes)}
	readErr := make(chan error, 1)
	// The reader parses each line itself, and a request's task runs on
	// the goroutine that read it: reading moves on to a pooled goroutine
	// first, so there is no hop between reading a request and handling
	// it, and the next read (which finds nothing yet and parks) happens
	// off the request's path rather than before it.
	br := bufio.NewReaderSize(jsonrpc.NewPipeReader(in), 64<<10)
	var readLoop func()
	readLoop = func() {
		for {
			line, over, err := jsonrpc.ReadLine(br, sh.Limits.MaxMessageBytes)
			var task func()
			if over {
				w.Send(tooLargeResponse(line, sh.Limits.MaxMessageBytes))
			} else if len(bytes.TrimSpace(line)) > 0 && ctx.Err() == nil {
				task = st.message(ctx, line)
			}
			if err != nil {
				if task != nil {
					st.pool.run(task)
				}
				if errors.Is(err, io.EOF) {
					err = nil
				}
				readErr <- err
				return
			}
			if task != nil {
				st.pool.run(readLoop)
				task()
				return
			}
		}
	}
	go readLoop()
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

// stdioConn is what ServeStdio's reader shares with the requests it
// starts.
type stdioConn struct {
	sh      Shared
	s       *session.Session
	w       *jsonrpc.LineWriter
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

// message dispatches one client line on its parsed method.
// Notifications and initialize are handled in order, before the next line
// is read (initialize and initialized before the next request, cancelled
// at once). A request is returned as a task for the caller to run
// concurrently with the reading of the next lines; a large one runs once
// it has its share of limits.large_request_bytes.
func (st *stdioConn) message(ctx context.Context, line []byte) func() {
	s, w := st.s, st.w
	m, errResp := jsonrpc.ParseClient(line)
	if errResp != nil {
		w.Send(errResp)
		return nil
	}
	if !m.IsRequest() || m.Method == "initialize" {
		if resp := s.HandleMessage(ctx, m, nil); resp != nil {
			w.Send(resp)
		}
		return nil
	}
	if int64(len(line)) < st.sh.Limits.LargeMessageBytes {
		// A tools/call of a stdio server goes out from here, and its
		// answer comes back without a goroutine waiting
		// (session.StartCall).
		st.spawnMu.Lock()
		if *st.ended {
			st.spawnMu.Unlock()
			return nil
		}
		st.wg.Add(1)
		st.spawnMu.Unlock()
		if s.StartCall(ctx, m, st.pool.run, w.Send, st.wg.Done) {
			return nil
		}
		st.wg.Done()
	}
	weight := int64(0)
	if n := int64(len(line)); n >= st.sh.Limits.LargeMessageBytes {
		if err := st.queue.Acquire(ctx, n); err != nil {
			return nil // the client is gone
		}
		weight = n
	}
	st.spawnMu.Lock()
	if *st.ended {
		st.spawnMu.Unlock()
		st.queue.Release(weight)
		return nil
	}
	st.wg.Add(1)
	st.spawnMu.Unlock()
	return func() {
		defer st.wg.Done()
		if weight > 0 {
			err := st.sh.Large.Acquire(ctx, weight)
			st.queue.Release(weight)
			if err != nil {
				return // the client is gone
			}
			defer st.sh.Large.Release(weight)
		}
		if resp := s.HandleMessage(ctx, m, nil); resp != nil {
			w.Send(resp)
		}
	}
}

// tooLargeResponse answers a client message over the size limit, with
// the request's id when its head names one.
func tooLargeResponse(head []byte, limit int64) []byte {
	var id json.RawMessage
	if v := gjson.GetBytes(head, "id"); v.Type == gjson.Number || v.Type == gjson.String {
		id = json.RawMessage(v.Raw)
	}
	return jsonrpc.EncodeError(id, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "invalid request: " + jsonrpc.TooLargeError(limit, "limits.max_message_bytes").Error()})
}

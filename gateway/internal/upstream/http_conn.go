package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
	"github.com/mcpx-dev/mcpx/gateway/internal/upstreamhttp"
)

// httpConn is a connection to a remote upstream over Streamable HTTP or
// the legacy HTTP+SSE transport (gateway/internal/upstreamhttp).
type httpConn struct {
	name   string
	log    hclog.Logger
	t      upstreamhttp.Transport
	nextID atomic.Int64
	doneCh chan struct{}
	once   sync.Once
	err    atomic.Value // error
}

// upstreamHTTPConfig is the transport configuration of cfg's upstream
// under lim: a message over the cap, a request past the timeout, fail.
func upstreamHTTPConfig(cfg config.ServerConfig, lim config.Limits, log hclog.Logger, h connHandlers) upstreamhttp.Config {
	c := upstreamhttp.Config{
		URL:             cfg.URL,
		Headers:         cfg.Headers,
		MaxConnsPerHost: lim.MaxUpstreamConns,
		MaxMessageBytes: lim.MaxUpstreamMessageBytes,
		Timeout:         cfg.RequestTimeout(),
		Logger:          slogTo(log),
		Handlers:        upstreamhttp.Handlers{Notification: h.notification},
	}
	c.Handlers.MaxAnswering = h.maxAnswering
	if c.Handlers.MaxAnswering <= 0 {
		c.Handlers.MaxAnswering = config.DefaultMaxServerRequestsPerUpstream + AnswerSpare
	}
	c.Handlers.Busy = func(method string) error {
		return jsonrpc.ToRPCError(fmt.Errorf("%s: %w (%d answers in progress on this upstream)", method, jsonrpc.ErrTooManyServerRequests, c.Handlers.MaxAnswering))
	}
	if h.request != nil {
		c.Handlers.Request = func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
			res, err := h.request(ctx, method, params)
			if err != nil {
				return nil, jsonrpc.ToRPCError(err) // its code, not the transport's internal error
			}
			return res, nil
		}
	}
	return c
}

// newHTTPConn wraps t; the connection ends when t does.
func newHTTPConn(name string, log hclog.Logger, t upstreamhttp.Transport) *httpConn {
	c := &httpConn{name: name, log: log, t: t, doneCh: make(chan struct{})}
	go func() {
		<-t.Done()
		err := t.Err()
		if errors.Is(err, upstreamhttp.ErrClosed) {
			c.end(fmt.Errorf("upstream[%s]: connection closed: %w", name, jsonrpc.ErrUpstreamExited))
			return
		}
		c.end(fmt.Errorf("upstream[%s]: %w", name, errors.Join(err, jsonrpc.ErrUpstreamExited)))
	}()
	return c
}

func startHTTP(ctx context.Context, name string, cfg config.ServerConfig, lim config.Limits, log hclog.Logger, h connHandlers) (*httpConn, error) {
	tc := upstreamHTTPConfig(cfg, lim, log, h)
	var t upstreamhttp.Transport
	switch cfg.Kind() {
	case config.TypeSSE:
		sse, err := upstreamhttp.DialLegacy(ctx, tc)
		if err != nil {
			return nil, fmt.Errorf("upstream[%s]: connect %s: %w", name, cfg.URL, errors.Join(err, jsonrpc.ErrUpstreamUnavailable))
		}
		t = sse
	default:
		tc.Listen = true
		sh, err := upstreamhttp.NewStreamable(tc)
		if err != nil {
			return nil, fmt.Errorf("upstream[%s]: %w", name, err)
		}
		t = sh
	}
	return newHTTPConn(name, log, t), nil
}

func (c *httpConn) end(err error) {
	c.once.Do(func() {
		c.err.Store(err)
		close(c.doneCh)
	})
}

func (c *httpConn) call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	return c.callHeader(ctx, method, params, nil)
}

// callHeader is call with HTTP headers of this request (the stateless
// revision's Mcp-Method, Mcp-Name, Mcp-Param-*).
func (c *httpConn) callHeader(ctx context.Context, method string, params json.RawMessage, header http.Header) (json.RawMessage, error) {
	select {
	case <-c.doneCh:
		return nil, c.cause()
	default:
	}
	id := c.nextID.Add(1)
	res, err := c.t.Call(ctx, id, method, params, header)
	if err != nil {
		var re *jsonrpc.Error
		switch {
		case errors.As(err, &re):
			return nil, re
		case ctx.Err() != nil, errors.Is(err, upstreamhttp.ErrTimeout):
			reason := "cancelled by the client"
			if ctx.Err() == nil {
				reason = "timed out"
			}
			cp, _ := json.Marshal(map[string]any{"requestId": id, "reason": reason})
			_ = c.notify(context.Background(), "notifications/cancelled", cp)
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("upstream[%s]: %s: %w", c.name, method, err) // a context.DeadlineExceeded
		case errors.Is(err, upstreamhttp.ErrMessageTooLarge):
			// as a stdio upstream's answer over the cap fails its call
			return nil, fmt.Errorf("upstream[%s]: %s: %w: %w (limits.max_upstream_message_bytes): %w", c.name, method, jsonrpc.ErrUpstreamInvalidJSON, err, jsonrpc.ErrMessageTooLarge)
		}
		return nil, fmt.Errorf("upstream[%s]: %s: %w", c.name, method, errors.Join(err, jsonrpc.ErrUpstreamUnavailable))
	}
	return res, nil
}

func (c *httpConn) notify(ctx context.Context, method string, params json.RawMessage) error {
	if err := c.t.Notify(ctx, method, params); err != nil {
		return fmt.Errorf("upstream[%s]: %s: %w", c.name, method, err)
	}
	return nil
}

func (c *httpConn) setProtocolVersion(v string) { c.t.SetProtocolVersion(v) }

func (c *httpConn) done() <-chan struct{} { return c.doneCh }

func (c *httpConn) cause() error {
	if err, ok := c.err.Load().(error); ok {
		return err
	}
	return nil
}

func (c *httpConn) close() error {
	c.end(fmt.Errorf("upstream[%s]: connection closed: %w", c.name, jsonrpc.ErrUpstreamExited))
	return c.t.Close()
}

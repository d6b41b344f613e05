package upstream

import (
	"context"
	"encoding/json"

	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
)

// conn is one live connection to an upstream server.
type conn interface {
	// call sends a request and waits for its response. A done ctx sends
	// notifications/cancelled upstream and returns ctx's error.
	call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
	// notify sends a notification.
	notify(ctx context.Context, method string, params json.RawMessage) error
	// done is closed when the connection has ended; cause says why.
	done() <-chan struct{}
	cause() error
	close() error
}

// connHandlers receive what an upstream sends on its own.
type connHandlers struct {
	// notification is called in the order the upstream sent them; it must
	// not block for long.
	notification func(method string, params json.RawMessage)
	// request answers a server-to-client request (ping, roots/list, ...).
	request func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
	// arrived, when not nil, runs on a stdio connection's reader as a
	// server request arrives, before request answers it on a goroutine
	// of its own: it records in the request's context what the answer
	// depends on at that moment (the calls in flight, which a call begun
	// later cannot be among).
	arrived func(ctx context.Context) context.Context
	// maxAnswering bounds the requests answered at once on an HTTP
	// connection (upstreamhttp.Handlers.MaxAnswering); 0: the default
	// limits' (a stdio connection takes it from its Limits)
	maxAnswering int
}

var (
	_ conn = (*stdioConn)(nil)
	_ conn = (*httpConn)(nil)
)

// Conn is a connection to a server made outside any Upstream, with no
// handler for what the server asks: the direct baseline the gateway's
// tests and benchmarks compare with.
type Conn interface {
	Call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
	Notify(ctx context.Context, method string, params json.RawMessage) error
	Close() error
}

// DialStdio starts cfg's process (see startStdio) and returns the
// connection to it; lim must have its defaults applied.
func DialStdio(name string, cfg config.ServerConfig, lim config.Limits, log hclog.Logger) (Conn, error) {
	c, err := startStdio(name, cfg, lim, log, connHandlers{})
	if err != nil {
		return nil, err
	}
	return directConn{c}, nil
}

type directConn struct{ c *stdioConn }

func (d directConn) Call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	return d.c.call(ctx, method, params)
}

func (d directConn) Notify(ctx context.Context, method string, params json.RawMessage) error {
	return d.c.notify(ctx, method, params)
}

func (d directConn) Close() error { return d.c.close() }

// connEnded is why c ended.
func connEnded(c conn) error {
	if err := c.cause(); err != nil {
		return err
	}
	return jsonrpc.ErrUpstreamExited
}

func isDone(c conn) bool {
	select {
	case <-c.done():
		return true
	default:
		return false
	}
}

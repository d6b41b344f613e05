// Package upstreamhttp is the gateway's client side of MCP's two HTTP
// transports: Streamable HTTP (MCP 2025-03-26 to 2026-07-28) and the
// legacy HTTP+SSE transport of 2024-11-05. It moves JSON-RPC messages and
// nothing more: what they mean is the gateway's business.
//
// It is the gateway's own so that the mcpx binary does not link
// mcp-go's client/transport package, which links mcp-go's server and
// through it a JSON-Schema library whose package initialisation costs
// every mcpx process ~10 ms of start-up.
package upstreamhttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Transport is a connection to one MCP server over HTTP.
type Transport interface {
	// Call sends request id and waits for its response: the result, a
	// *ResponseError for an error response, or why none came. Header
	// holds extra HTTP headers for this request (2026-07-28's
	// Mcp-Method, Mcp-Name, Mcp-Param-*). A done ctx abandons the call;
	// telling the server (notifications/cancelled) is the caller's part.
	Call(ctx context.Context, id int64, method string, params json.RawMessage, header http.Header) (json.RawMessage, error)
	// Notify sends a notification.
	Notify(ctx context.Context, method string, params json.RawMessage) error
	// SetProtocolVersion sets the MCP-Protocol-Version header of every
	// later request; "" sends none.
	SetProtocolVersion(v string)
	// Done is closed when the connection has ended; Err says why.
	Done() <-chan struct{}
	// Err is why the connection ended: ErrClosed, ErrSessionExpired,
	// ErrConnectionLost; nil while it lasts.
	Err() error
	// Close ends the connection (a Streamable HTTP session is deleted on
	// the server). It is idempotent.
	Close() error
}

// Config configures a transport.
type Config struct {
	// URL is the MCP endpoint (Streamable HTTP) or the SSE stream's URL
	// (legacy HTTP+SSE).
	URL string
	// Headers are sent with every HTTP request (authorization, say).
	Headers map[string]string
	// Client sends the requests. Left nil, the transport opens its own
	// connections, at most MaxConnsPerHost for calls and as many for the
	// rest (see pools). Either way a redirect to another origin than
	// URL's is refused (ErrCrossOriginRedirect).
	Client *http.Client
	// MaxConnsPerHost caps the connections of each of the transport's two
	// pools when Client is nil; more requests wait for one. Defaults to
	// DefaultMaxConnsPerHost.
	MaxConnsPerHost int
	// MaxMessageBytes caps one message from the server, counted after any
	// Content-Encoding is undone: a JSON body (a larger declared
	// Content-Length is refused unread), an SSE line, an SSE event's data.
	// The call it answers fails with ErrMessageTooLarge; a stream carrying
	// it is dropped. Defaults to DefaultMaxMessageBytes.
	MaxMessageBytes int64
	// Timeout bounds each request and the reading of its answer, body or
	// stream included: a call, a notification, the answer to a server's
	// request (ErrTimeout). The long-lived streams (Streamable HTTP's GET
	// stream, the legacy SSE stream) are not bounded. 0: only the
	// caller's context bounds a request.
	Timeout time.Duration
	// Logger gets the transport's own lines. Defaults to none.
	Logger *slog.Logger
	// Handlers receive what the server sends on its own.
	Handlers Handlers
	// Listen opens Streamable HTTP's GET stream once the session is
	// initialized, for the messages a server sends outside any call
	// (list_changed, resource updates). A server answering 405 does not
	// offer one, and that is fine. The legacy transport always listens.
	Listen bool
}

// Handlers receive the messages a server sends on its own.
type Handlers struct {
	// Notification is called for each notification, in the order the
	// server sent them on one stream; it must not block for long. Nil
	// drops them.
	Notification func(method string, params json.RawMessage)
	// Request answers a server-to-client request (ping, roots/list,
	// sampling/createMessage, elicitation/create), on a goroutine of its
	// own: the result, or an error, which goes back as a JSON-RPC error
	// (its code and data when it is a *ResponseError, else an internal
	// error). Nil answers every request with method not found.
	Request func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
	// MaxAnswering bounds the server requests answered at once, each on
	// a goroutine of its own. Past it a request is refused with Busy's
	// error, without calling Request: the refusals queue (refusalQueue)
	// for one goroutine that sends them one by one, and while the queue
	// is full the stream the request came on waits. A server that floods
	// requests costs no goroutines and no connections and slows only its
	// own stream. 0: no bound.
	MaxAnswering int
	// Busy is the error a request refused past MaxAnswering is answered
	// with. Nil: an internal error.
	Busy func(method string) error
}

var (
	// ErrClosed is returned once the transport is closed.
	ErrClosed = errors.New("transport closed")
	// ErrSessionExpired is returned when a Streamable HTTP server answers
	// 404 to a request carrying the session ID: it no longer knows the
	// session, and only a new initialize gets one.
	ErrSessionExpired = errors.New("session expired (HTTP 404): the server no longer knows it")
	// ErrConnectionLost is returned when the legacy transport's SSE
	// stream ends.
	ErrConnectionLost = errors.New("SSE connection lost")
	// ErrNoResponse is returned when a response stream ends without the
	// call's response.
	ErrNoResponse = errors.New("the response stream ended without the response")
)

// StatusError is an HTTP status the transport did not expect, with the
// start of the response body.
type StatusError struct {
	StatusCode int
	Body       string
}

// Error says the status and body.
func (e *StatusError) Error() string {
	if e.Body == "" {
		return fmt.Sprintf("HTTP %d", e.StatusCode)
	}
	return fmt.Sprintf("HTTP %d: %s", e.StatusCode, e.Body)
}

// Header names of the transports.
const (
	headerSessionID       = "Mcp-Session-Id"
	headerProtocolVersion = "MCP-Protocol-Version"
	headerLastEventID     = "Last-Event-ID"
)

// Media types of the transports.
const (
	mediaJSON   = "application/json"
	mediaStream = "text/event-stream"
)

// errBodyLimit caps how much of an error response is read and quoted.
const errBodyLimit = 4 << 10

// base is what both transports share: the HTTP client, the connection's
// life, and the handling of messages the server sends on its own.
type base struct {
	pools
	lim      limits
	headers  map[string]string
	log      *slog.Logger
	h        Handlers
	protocol atomic.Pointer[string]

	// life ends with the connection: every request is bound to it.
	life     context.Context
	stopLife context.CancelFunc

	done    chan struct{}
	endOnce sync.Once
	err     atomic.Pointer[error]

	// reply sends the answer to a server-to-client request.
	reply func(ctx context.Context, msg []byte) error
	// answering holds a slot per request being answered; nil: no bound
	answering chan struct{}
	// refusals wait for refuseLoop, started once
	refusals    chan []byte
	refuseStart sync.Once
}

// refusalQueue is how many refusals may wait to be sent.
const refusalQueue = 1024

// init sets b up for cfg, whose URL is origin.
func (b *base) init(cfg Config, origin *url.URL) {
	b.headers, b.log, b.h = cfg.Headers, cfg.Logger, cfg.Handlers
	b.pools = newPools(cfg, origin)
	b.lim = limits{maxMessage: cfg.MaxMessageBytes, timeout: max(cfg.Timeout, 0)}
	if b.lim.maxMessage <= 0 {
		b.lim.maxMessage = DefaultMaxMessageBytes
	}
	b.done = make(chan struct{})
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	b.life, b.stopLife = context.WithCancel(context.Background())
	if n := cfg.Handlers.MaxAnswering; n > 0 {
		b.answering = make(chan struct{}, n)
		b.refusals = make(chan []byte, refusalQueue)
	}
}

// SetProtocolVersion sets the MCP-Protocol-Version header of later
// requests.
func (b *base) SetProtocolVersion(v string) { b.protocol.Store(&v) }

// Done is closed when the connection has ended.
func (b *base) Done() <-chan struct{} { return b.done }

// Err is why the connection ended, nil while it lasts.
func (b *base) Err() error {
	if p := b.err.Load(); p != nil {
		return *p
	}
	return nil
}

// end records why the connection ended (the first reason wins) and closes
// Done.
func (b *base) end(err error) {
	b.endOnce.Do(func() {
		b.err.Store(&err)
		close(b.done)
	})
}

// bind derives a request's context that also ends when the connection
// does, and at the timeout; stop releases it.
func (b *base) bind(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, untime := b.withTimeout(ctx)
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(b.life, func() { cancel(ErrClosed) })
	return ctx, func() { stop(); cancel(nil); untime() }
}

// withTimeout bounds ctx by Config.Timeout, with ErrTimeout as its cause.
func (b *base) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if b.lim.timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeoutCause(ctx, b.lim.timeout, ErrTimeout)
}

// bindCaller derives a request's context that ends with the connection
// and, until detach is called, with ctx (with ctx's cause); stop releases
// it. A call detaches once it has its response, so that reading the rest
// of the response outlives the caller. Until then the timeout bounds it
// too: the whole call, its body or stream read included.
func (b *base) bindCaller(ctx context.Context) (rctx context.Context, detach, stop func()) {
	rctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	unlife := context.AfterFunc(b.life, func() { cancel(ErrClosed) })
	ctx, untime := b.withTimeout(ctx)
	unwatch := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	return rctx, func() { unwatch(); untime() }, func() { unwatch(); untime(); unlife(); cancel(nil) }
}

// newRequest builds a request with header's entries, then the
// transport's (MCP-Protocol-Version), then the configured ones, each
// replacing what came before.
func (b *base) newRequest(ctx context.Context, method, url string, body []byte, header http.Header) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, url, err)
	}
	for k, v := range header {
		req.Header[k] = slices.Clone(v)
	}
	if body != nil {
		req.Header.Set("Content-Type", mediaJSON)
	}
	if p := b.protocol.Load(); p != nil && *p != "" {
		req.Header.Set(headerProtocolVersion, *p)
	}
	for k, v := range b.headers {
		req.Header.Set(k, v)
	}
	return req, nil
}

// do sends req through client; a failure because the connection closed
// is ErrClosed, one because of the timeout ErrTimeout.
func (b *base) do(client *http.Client, req *http.Request) (*http.Response, error) {
	resp, err := client.Do(req)
	if err != nil {
		return nil, ended(req.Context(), err)
	}
	return resp, nil
}

// ended is err, or when ctx ended because the connection closed or at the
// timeout, that reason.
func ended(ctx context.Context, err error) error {
	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, ErrClosed):
		return ErrClosed
	case errors.Is(cause, ErrTimeout):
		return cause
	}
	return err
}

// serverMessage handles a message the server sent other than the
// response a call waits for.
func (b *base) serverMessage(m *message) {
	switch {
	case m.IsNotification():
		if b.h.Notification != nil {
			b.h.Notification(m.Method, m.Params)
		}
	case m.IsRequest():
		if b.answering == nil {
			go b.answer(m)
			return
		}
		select {
		case b.answering <- struct{}{}:
			go func() {
				defer func() { <-b.answering }()
				b.answer(m)
			}()
		default:
			b.refuse(m)
		}
	default:
		b.log.Debug("a response to no call in flight; dropped", "id", string(m.ID))
	}
}

// answer replies to a server-to-client request.
func (b *base) answer(m *message) {
	var (
		res json.RawMessage
		err error
	)
	if b.h.Request == nil {
		err = &ResponseError{Code: codeMethodNotFound, Message: "method not found: " + m.Method}
	} else {
		res, err = b.h.Request(b.life, m.Method, m.Params)
	}
	if rerr := b.reply(b.life, encodeResponse(m.ID, res, err)); rerr != nil && b.life.Err() == nil {
		b.log.Warn("answering a server request", "method", m.Method, "error", rerr)
	}
}

// refuse queues the answer to a server request past
// Handlers.MaxAnswering; a full queue holds up the stream's reader.
func (b *base) refuse(m *message) {
	var err error = &ResponseError{Code: codeInternalError, Message: "too many server requests in progress"}
	if b.h.Busy != nil {
		err = b.h.Busy(m.Method)
	}
	b.refuseStart.Do(func() { go b.refuseLoop() })
	select {
	case b.refusals <- encodeResponse(m.ID, nil, err):
	case <-b.life.Done():
	}
}

// refuseLoop sends the queued refusals, one at a time, until the
// connection ends.
func (b *base) refuseLoop() {
	for {
		select {
		case msg := <-b.refusals:
			if err := b.reply(b.life, msg); err != nil && b.life.Err() == nil {
				b.log.Warn("refusing a server request", "error", err)
			}
		case <-b.life.Done():
			return
		}
	}
}

// codeMethodNotFound is JSON-RPC's method not found.
const codeMethodNotFound = -32601

// statusError is the error for an unexpected status: the JSON-RPC error
// the body holds, if it holds one (servers answer a request they reject
// with one, under a 4xx), else a *StatusError quoting the body.
func statusError(resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, errBodyLimit))
	if m, err := parseMessage(bytes.TrimSpace(body)); err == nil && m.Error != nil {
		return m.Error
	}
	return &StatusError{StatusCode: resp.StatusCode, Body: string(bytes.TrimSpace(body))}
}

// drain reads what is left of a body (up to a limit, so the connection
// can be reused) and closes it.
func drain(body io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, errBodyLimit))
	_ = body.Close()
}

// eventMessage is the JSON-RPC message an SSE event carries, or nil for
// an event of another kind or one that is not a message (logged).
func (b *base) eventMessage(ev event) *message {
	if ev.name != "message" {
		return nil
	}
	m, err := parseMessage(ev.data)
	if err != nil {
		b.log.Warn("the server sent an event that is not a JSON-RPC message", "error", err)
		return nil
	}
	return m
}

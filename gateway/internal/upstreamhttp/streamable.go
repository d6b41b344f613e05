package upstreamhttp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
)

// Streamable is a Streamable HTTP connection: every message is POSTed to
// the endpoint; a request's response comes back as JSON or as an SSE
// stream that carries the messages related to the request (progress,
// server-to-client requests) before it. The Mcp-Session-Id of initialize's
// response goes with every later request, and Close deletes the session.
type Streamable struct {
	base
	url    string
	listen bool
	retry  time.Duration // the GET stream's wait before reopening: defaultRetry

	mu      sync.Mutex
	session string

	listenOnce sync.Once
	closeOnce  sync.Once
}

var _ Transport = (*Streamable)(nil)

// NewStreamable returns a Streamable HTTP transport for cfg.URL. It
// sends nothing until the first Call.
func NewStreamable(cfg Config) (*Streamable, error) {
	u, err := url.ParseRequestURI(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("streamable HTTP: %w", err)
	}
	c := &Streamable{url: cfg.URL, listen: cfg.Listen, retry: defaultRetry}
	c.init(cfg, u)
	c.reply = func(ctx context.Context, msg []byte) error { return c.post(ctx, msg) }
	return c, nil
}

// SessionID is the session the server gave initialize, "" before or
// without one.
func (c *Streamable) SessionID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session
}

// request builds an HTTP request to the endpoint with the session's
// headers; it returns the session ID it carries.
func (c *Streamable) request(ctx context.Context, method string, body []byte, header http.Header, accept string) (*http.Request, string, error) {
	req, err := c.newRequest(ctx, method, c.url, body, header)
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Accept", accept)
	session := c.SessionID()
	if session != "" {
		req.Header.Set(headerSessionID, session)
	}
	return req, session, nil
}

// expired ends the connection when the server answered 404 to a request
// carrying session: it has forgotten the session.
func (c *Streamable) expired(session string) error {
	err := fmt.Errorf("session %s: %w", session, ErrSessionExpired)
	c.end(err)
	return err
}

// Call POSTs request id and reads its response.
func (c *Streamable) Call(ctx context.Context, id int64, method string, params json.RawMessage, header http.Header) (json.RawMessage, error) {
	select {
	case <-c.done:
		return nil, c.Err()
	default:
	}
	ctx, detach, stop := c.bindCaller(ctx)
	req, session, err := c.request(ctx, http.MethodPost, encodeRequest(id, method, params), header, mediaJSON+", "+mediaStream)
	if err != nil {
		stop()
		return nil, err
	}
	resp, err := c.do(c.calls, req)
	if err != nil {
		stop()
		return nil, err
	}
	// The request's context ends before its body closes: over HTTP/2,
	// closing a body the server has not finished can otherwise wait for
	// the stream's clean-up.
	finish := func() { stop(); _ = resp.Body.Close() }
	defer func() {
		if finish != nil {
			finish()
		}
	}()
	switch {
	case resp.StatusCode == http.StatusNotFound && session != "":
		return nil, c.expired(session)
	case resp.StatusCode != http.StatusOK:
		return nil, statusError(resp)
	}
	if method == "initialize" {
		if s := resp.Header.Get(headerSessionID); s != "" {
			c.mu.Lock()
			c.session = s
			c.mu.Unlock()
		}
	}
	var res json.RawMessage
	mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch mediaType {
	case mediaJSON:
		res, err = c.readJSON(resp, id)
	case mediaStream:
		var last io.Reader
		res, last, err = c.readStream(ctx, resp.Body, id)
		if err == nil {
			// The call has its answer; the stream's end is read after,
			// and the caller's context, which ends as Call returns, no
			// longer ends the request.
			detach()
			go drainStream(last, finish)
			finish = nil
		}
	default:
		return nil, fmt.Errorf("%s: unexpected content type %q", method, resp.Header.Get("Content-Type"))
	}
	if err != nil && ctx.Err() != nil {
		return nil, ended(ctx, err)
	}
	if err == nil && method == "initialize" && c.listen {
		c.listenOnce.Do(func() { go c.listenStream() })
	}
	return res, err
}

// readJSON reads a response sent as one JSON message.
func (c *Streamable) readJSON(resp *http.Response, id int64) (json.RawMessage, error) {
	body, err := c.lim.readBody(resp)
	if err != nil {
		return nil, fmt.Errorf("reading the response: %w", err)
	}
	m, err := parseMessage(body)
	if err != nil {
		return nil, err
	}
	if !m.IsResponse() && !(m.Error != nil && m.ID == nil) {
		return nil, fmt.Errorf("%w: the body is not a response: %q", errNotMessage, jsonrpc.Head(body, 120))
	}
	if m.ID != nil && string(m.ID) != idKey(id) {
		return nil, fmt.Errorf("%w: a response to id %s, not %d", errNotMessage, m.ID, id)
	}
	return outcome(m)
}

// outcome is a response's result, or its error.
func outcome(m *message) (json.RawMessage, error) {
	if m.Error != nil {
		return nil, m.Error
	}
	return m.Result, nil
}

// defaultRetry is how long to wait before reopening a stream when the
// server did not say (its retry field); minRetry is the shortest wait
// taken from one, so that a server asking for none is not polled in a
// tight loop.
const (
	defaultRetry = time.Second
	minRetry     = 10 * time.Millisecond
)

// readStream reads a POST's SSE stream up to the response to id, and
// returns the reader positioned after it. Before 2026-07-28 a server may
// end the stream early once it has sent an event ID; the call then
// resumes it with a GET carrying Last-Event-ID, after the wait the server
// asked for (SEP-1699). From 2026-07-28 on, a stream that ends without
// the response fails the call.
func (c *Streamable) readStream(ctx context.Context, body io.ReadCloser, id int64) (json.RawMessage, io.Reader, error) {
	r := newEventReader(body, c.lim)
	want := idKey(id)
	for {
		for {
			ev, err := r.next()
			if errors.Is(err, ErrMessageTooLarge) {
				return nil, nil, fmt.Errorf("reading the response stream: %w", err)
			}
			if err != nil {
				if !errors.Is(err, io.EOF) || !r.hasID || ctx.Err() != nil || c.stateless() {
					if ctx.Err() != nil {
						return nil, nil, context.Cause(ctx)
					}
					return nil, nil, fmt.Errorf("%w: %w", ErrNoResponse, err)
				}
				break // the server ended the stream: resume it
			}
			m := c.eventMessage(ev)
			if m == nil {
				continue
			}
			if m.IsResponse() && string(m.ID) == want || m.Error != nil && m.ID == nil {
				res, err := outcome(m)
				return res, r.br, err
			}
			c.serverMessage(m)
		}
		var err error
		if body, err = c.resume(ctx, r); err != nil {
			return nil, nil, err
		}
		r.br.Reset(body)
	}
}

// A response stream's end is read after the call returns, so that its
// connection goes back to the pool (one closed early cannot be reused,
// and every call would dial anew): servers end the stream right after the
// response. drainWait and drainBytes bound the wait and the reading for
// one that keeps it open.
const (
	drainWait  = 5 * time.Second
	drainBytes = 64 << 10
)

// drainStream reads what is left of a response stream, then finishes the
// call (its context and body).
func drainStream(r io.Reader, finish func()) {
	t := time.AfterFunc(drainWait, finish)
	_, _ = io.Copy(io.Discard, io.LimitReader(r, drainBytes))
	if t.Stop() {
		finish()
	}
}

// statelessRevision is the first MCP revision without sessions, the GET
// stream or resumption (SEP-2575, SEP-2567).
const statelessRevision = "2026-07-28"

// stateless reports whether the connection speaks statelessRevision or a
// later one (revisions are dates: they compare as strings).
func (c *Streamable) stateless() bool {
	p := c.protocol.Load()
	return p != nil && *p >= statelessRevision
}

// resume reopens a stream the server ended, after the wait it asked for,
// with a GET carrying the last event ID.
func (c *Streamable) resume(ctx context.Context, r *eventReader) (io.ReadCloser, error) {
	delay := defaultRetry
	if r.hasRetry {
		delay = max(r.retry, minRetry)
	}
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	h := http.Header{}
	h.Set(headerLastEventID, r.lastID)
	req, session, err := c.request(ctx, http.MethodGet, nil, h, mediaStream)
	if err != nil {
		return nil, err
	}
	resp, err := c.do(c.calls, req)
	if err != nil {
		return nil, fmt.Errorf("resuming the response stream: %w", err)
	}
	if resp.StatusCode == http.StatusNotFound && session != "" {
		drain(resp.Body)
		return nil, c.expired(session)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); resp.StatusCode != http.StatusOK || mt != mediaStream {
		defer drain(resp.Body)
		return nil, fmt.Errorf("resuming the response stream: %w", statusError(resp))
	}
	// The call closes the first stream's body; a resumed one is closed
	// when the call ends.
	context.AfterFunc(ctx, func() { _ = resp.Body.Close() })
	return resp.Body, nil
}

// listenStream keeps the GET stream open for the messages the server
// sends outside any call, reopening it (with Last-Event-ID) when it ends,
// until the connection does. A server that answers 405, or 404 before
// the stream ever opened, does not offer it.
func (c *Streamable) listenStream() {
	opened := false
	r := newEventReader(nil, c.lim)
	for c.life.Err() == nil {
		h := http.Header{}
		if r.hasID {
			h.Set(headerLastEventID, r.lastID)
		}
		req, session, err := c.request(c.life, http.MethodGet, nil, h, mediaStream)
		if err != nil {
			c.log.Warn("the GET stream", "error", err)
			return
		}
		resp, err := c.do(c.others, req)
		switch {
		case err != nil:
			if c.life.Err() != nil {
				return
			}
			c.log.Warn("opening the GET stream; retrying", "error", err)
		case resp.StatusCode == http.StatusMethodNotAllowed || resp.StatusCode == http.StatusNotFound && !opened:
			drain(resp.Body)
			c.log.Debug("the server offers no GET stream", "status", resp.StatusCode)
			return
		case resp.StatusCode == http.StatusNotFound:
			drain(resp.Body)
			_ = c.expired(session)
			return
		case resp.StatusCode != http.StatusOK:
			c.log.Warn("opening the GET stream; retrying", "error", statusError(resp))
			drain(resp.Body)
		default:
			opened = true
			r.br.Reset(resp.Body)
			c.readListening(r)
			_ = resp.Body.Close()
		}
		delay := c.retry
		if r.hasRetry {
			delay = max(r.retry, minRetry)
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-c.life.Done():
			t.Stop()
			return
		}
	}
}

// readListening hands every message of the GET stream to the handlers
// until it ends.
func (c *Streamable) readListening(r *eventReader) {
	for {
		ev, err := r.next()
		if err != nil {
			switch {
			case c.life.Err() != nil, errors.Is(err, io.EOF):
			case errors.Is(err, ErrMessageTooLarge):
				c.log.Warn("the GET stream carried a message over the cap; dropped and reopening", "error", err)
			default:
				c.log.Debug("the GET stream broke off; reopening", "error", err)
			}
			return
		}
		m := c.eventMessage(ev)
		if m == nil {
			continue
		}
		c.serverMessage(m)
	}
}

// Notify POSTs a notification; the server accepts it with 202.
func (c *Streamable) Notify(ctx context.Context, method string, params json.RawMessage) error {
	return c.post(ctx, encodeRequest(0, method, params))
}

// post sends a notification or a response, which the server answers with
// no message.
func (c *Streamable) post(ctx context.Context, msg []byte) error {
	select {
	case <-c.done:
		return c.Err()
	default:
	}
	ctx, stop := c.bind(ctx)
	defer stop()
	req, session, err := c.request(ctx, http.MethodPost, msg, nil, mediaJSON+", "+mediaStream)
	if err != nil {
		return err
	}
	resp, err := c.do(c.others, req)
	if err != nil {
		return err
	}
	defer drain(resp.Body)
	switch {
	case resp.StatusCode == http.StatusAccepted, resp.StatusCode == http.StatusOK, resp.StatusCode == http.StatusNoContent:
		return nil
	case resp.StatusCode == http.StatusNotFound && session != "":
		return c.expired(session)
	}
	return statusError(resp)
}

// Close ends the connection and deletes the session on the server.
func (c *Streamable) Close() error {
	c.closeOnce.Do(func() {
		expired := errors.Is(c.Err(), ErrSessionExpired)
		c.end(ErrClosed)
		// Ends the GET stream and the calls in flight. Close does not
		// wait for the GET stream's goroutine: it may be in a handler
		// that waits on whoever called Close.
		c.stopLife()
		session := c.SessionID()
		if session == "" || expired {
			return
		}
		// The session outlives the connection's context: DELETE gets a
		// few seconds of its own.
		ctx, cancel := context.WithTimeout(context.Background(), deleteTimeout)
		defer cancel()
		req, _, err := c.request(ctx, http.MethodDelete, nil, nil, mediaJSON+", "+mediaStream)
		if err != nil {
			return
		}
		resp, err := c.others.Do(req)
		if err != nil {
			c.log.Debug("deleting the session", "error", err)
			return
		}
		drain(resp.Body)
		if resp.StatusCode >= 300 && resp.StatusCode != http.StatusMethodNotAllowed {
			c.log.Debug("deleting the session", "status", resp.StatusCode)
		}
	})
	c.closeIdle()
	return nil
}

// deleteTimeout bounds Close's DELETE of the session.
const deleteTimeout = 5 * time.Second

package upstreamhttp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Legacy is a connection over MCP 2024-11-05's HTTP+SSE transport: a GET
// opens an SSE stream whose first event, "endpoint", names the URL to
// POST messages to; the server's responses and its own messages all
// arrive on the stream.
type Legacy struct {
	base
	url *url.URL

	mu       sync.Mutex
	endpoint string // from the endpoint event
	pending  map[string]chan callResult

	closeOnce sync.Once
	readDone  chan struct{} // the stream's reader has returned
}

var _ Transport = (*Legacy)(nil)

type callResult struct {
	res json.RawMessage
	err error
}

// endpointTimeout bounds the wait for the endpoint event.
const endpointTimeout = 30 * time.Second

// DialLegacy opens the SSE stream at cfg.URL and waits for its endpoint
// event (resolved against cfg.URL; one on another host is refused). ctx
// bounds only the wait: the stream lasts until Close or until the server
// ends it.
func DialLegacy(ctx context.Context, cfg Config) (*Legacy, error) {
	u, err := url.ParseRequestURI(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("SSE: %w", err)
	}
	c := &Legacy{url: u, pending: map[string]chan callResult{}, readDone: make(chan struct{})}
	c.init(cfg, u)
	c.reply = c.post
	fail := func(err error) (*Legacy, error) {
		c.end(ErrClosed)
		c.stopLife()
		return nil, err
	}
	// A caller giving up before the endpoint came ends the stream too.
	stopWait := context.AfterFunc(ctx, c.stopLife)
	defer stopWait()
	req, err := c.newRequest(c.life, http.MethodGet, cfg.URL, nil, nil)
	if err != nil {
		return fail(err)
	}
	req.Header.Set("Accept", mediaStream)
	req.Header.Set("Cache-Control", "no-cache")
	resp, err := c.do(c.others, req)
	if err != nil {
		if ctx.Err() != nil {
			return fail(ctx.Err())
		}
		return fail(fmt.Errorf("SSE: %w", err))
	}
	if resp.StatusCode != http.StatusOK {
		defer drain(resp.Body)
		return fail(fmt.Errorf("SSE: %w", statusError(resp)))
	}
	endpoint := make(chan struct{})
	go c.read(newEventReader(resp.Body, c.lim), resp, endpoint)
	t := time.NewTimer(endpointTimeout)
	defer t.Stop()
	select {
	case <-endpoint:
		return c, nil
	case <-c.done:
		err := c.Err()
		c.Close()
		return nil, fmt.Errorf("SSE: before the endpoint event: %w", err)
	case <-ctx.Done():
		return fail(ctx.Err())
	case <-t.C:
		return fail(fmt.Errorf("SSE: no endpoint event within %s", endpointTimeout))
	}
}

// read reads the stream until it ends: the endpoint event first, then the
// messages. The end of the stream ends the connection.
func (c *Legacy) read(r *eventReader, resp *http.Response, endpoint chan<- struct{}) {
	defer close(c.readDone)
	defer resp.Body.Close()
	gotEndpoint := false
	for {
		ev, err := r.next()
		if err != nil {
			if c.life.Err() != nil {
				err = ErrClosed
			}
			c.lost(err)
			return
		}
		switch ev.name {
		case "endpoint":
			if gotEndpoint {
				continue // a proxy's repeat: the first one stands
			}
			e, err := c.url.Parse(strings.TrimSpace(string(ev.data)))
			if err != nil || e.Scheme != c.url.Scheme || e.Host != c.url.Host {
				c.log.Warn("the server's endpoint is not on its own origin; ignored", "endpoint", string(ev.data), "error", err)
				continue
			}
			gotEndpoint = true
			c.mu.Lock()
			c.endpoint = e.String()
			c.mu.Unlock()
			close(endpoint)
		case "message":
			m := c.eventMessage(ev)
			if m == nil {
				continue
			}
			if m.IsResponse() {
				c.deliver(string(m.ID), callResult{res: m.Result, err: errOrNil(m.Error)})
				continue
			}
			if m.Error != nil && m.ID == nil {
				c.log.Warn("the server sent an error for no request", "error", m.Error)
				continue
			}
			c.serverMessage(m)
		}
	}
}

// errOrNil keeps a nil *ResponseError from becoming a non-nil error.
func errOrNil(e *ResponseError) error {
	if e == nil {
		return nil
	}
	return e
}

// lost ends the connection because the stream ended, failing every call
// still waiting.
func (c *Legacy) lost(err error) {
	if !errors.Is(err, ErrClosed) {
		err = fmt.Errorf("%w: %w", ErrConnectionLost, err)
	}
	c.end(err)
	c.mu.Lock()
	pending := c.pending
	c.pending = map[string]chan callResult{}
	c.mu.Unlock()
	for _, ch := range pending {
		ch <- callResult{err: c.Err()}
	}
}

func (c *Legacy) deliver(id string, r callResult) {
	c.mu.Lock()
	ch, ok := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if ok {
		ch <- r
	} else {
		c.log.Debug("a response to no call in flight; dropped", "id", id)
	}
}

// Call POSTs request id to the endpoint and waits for its response on the
// stream.
func (c *Legacy) Call(ctx context.Context, id int64, method string, params json.RawMessage, header http.Header) (json.RawMessage, error) {
	key := idKey(id)
	ch := make(chan callResult, 1)
	c.mu.Lock()
	if err := c.Err(); err != nil {
		c.mu.Unlock()
		return nil, err
	}
	c.pending[key] = ch
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		delete(c.pending, key)
		c.mu.Unlock()
	}
	ctx, untime := c.withTimeout(ctx)
	defer untime()
	if err := c.send(ctx, c.calls, encodeRequest(id, method, params), header); err != nil {
		forget()
		return nil, err
	}
	select {
	case r := <-ch:
		return r.res, r.err
	case <-ctx.Done():
		forget()
		if err := context.Cause(ctx); errors.Is(err, ErrTimeout) {
			return nil, err
		}
		return nil, ctx.Err()
	}
}

// Notify POSTs a notification to the endpoint.
func (c *Legacy) Notify(ctx context.Context, method string, params json.RawMessage) error {
	return c.send(ctx, c.others, encodeRequest(0, method, params), nil)
}

func (c *Legacy) post(ctx context.Context, msg []byte) error { return c.send(ctx, c.others, msg, nil) }

// send POSTs one message to the endpoint; the server accepts it (202) and
// answers, if at all, on the stream. client is the pool it goes through.
func (c *Legacy) send(ctx context.Context, client *http.Client, msg []byte, header http.Header) error {
	select {
	case <-c.done:
		return c.Err()
	default:
	}
	ctx, stop := c.bind(ctx)
	defer stop()
	c.mu.Lock()
	endpoint := c.endpoint
	c.mu.Unlock()
	req, err := c.newRequest(ctx, http.MethodPost, endpoint, msg, header)
	if err != nil {
		return err
	}
	resp, err := c.do(client, req)
	if err != nil {
		return err
	}
	defer drain(resp.Body)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return statusError(resp)
	}
	return nil
}

// Close ends the stream and with it the connection.
func (c *Legacy) Close() error {
	c.closeOnce.Do(func() {
		c.end(ErrClosed)
		c.stopLife()
		<-c.readDone
	})
	c.closeIdle()
	return nil
}

package gateway

// subscriptions/listen downstream (2026-07-28, SEP-2575). A stateless
// client hears of nothing it did not ask for: it opens a stream with a
// filter (tools, prompts and resources list changes; resources by URI),
// the gateway acknowledges what it grants with
// notifications/subscriptions/acknowledged, then sends each granted
// notification on that stream, every one tagged with the request's id in
// _meta (io.modelcontextprotocol/subscriptionId), until the client
// cancels the request or goes away. The stream ends with a result (same
// tag) when the gateway shuts down. Over stdio the stream is the pipe;
// over HTTP the request's SSE response.
//
// Each stream holds a connection and a goroutine, so their number is
// capped: Limits.MaxListenStreamsPerPrincipal for one principal (the
// bearer token's identity; unauthenticated clients, stdio's among them,
// are one principal) and Limits.MaxListenStreams in all. Past either, a
// new stream is refused with ErrTooManyListenStreams: JSON-RPC error
// -32014 (CodeLimitExceeded), over stateless HTTP with status 503 and
// Retry-After (listenRetryAfter), as a full max_sessions answers.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
	"github.com/mcpx-dev/mcpx/gateway/internal/upstream"
)

// Notification methods of the stateless revision's subscriptions.
const (
	methodSubscriptionsListen       = "subscriptions/listen"
	notificationSubscriptionsAcked  = "notifications/subscriptions/acknowledged"
	notificationToolsListChanged    = "notifications/tools/list_changed"
	notificationPromptsListChanged  = "notifications/prompts/list_changed"
	notificationResourcesListChange = "notifications/resources/list_changed"
)

// pathMetaSubscriptionID is the subscription tag's gjson/sjson path.
var pathMetaSubscriptionID = jsonrpc.MetaPath(mcp.MetaKeySubscriptionID)

// listenQueue is how many notifications may wait for a stream's client.
// Past it the stream ends (its client opens another and lists again):
// a client that stops reading must not hold up the upstream, or the
// other clients, whose notification it was to get.
const listenQueue = 256

// errListenerTooSlow ends a stream whose client does not keep up.
var errListenerTooSlow = errors.New("the client did not read its subscriptions/listen stream: more than 256 notifications waited")

// listenRetryAfter is the Retry-After (seconds) of a refused stream over
// HTTP: streams end when their clients go, so a short wait may do.
const listenRetryAfter = "10"

// listenSlots counts the open subscriptions/listen streams, in all and
// by principal. The zero value is ready.
type listenSlots struct {
	mu    sync.Mutex
	total int
	by    map[string]int
}

// take counts a new stream of principal within lim's caps and returns
// its end; over a cap it returns ErrTooManyListenStreams.
func (ls *listenSlots) take(principal string, lim Limits) (func(), error) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	switch {
	case ls.by[principal] >= lim.MaxListenStreamsPerPrincipal:
		return nil, fmt.Errorf("%w: this principal has %d open (limits.max_listen_streams_per_principal)", jsonrpc.ErrTooManyListenStreams, lim.MaxListenStreamsPerPrincipal)
	case ls.total >= lim.MaxListenStreams:
		return nil, fmt.Errorf("%w: %d are open (limits.max_listen_streams)", jsonrpc.ErrTooManyListenStreams, lim.MaxListenStreams)
	}
	if ls.by == nil {
		ls.by = map[string]int{}
	}
	ls.by[principal]++
	ls.total++
	return func() {
		ls.mu.Lock()
		defer ls.mu.Unlock()
		ls.total--
		if ls.by[principal]--; ls.by[principal] <= 0 {
			delete(ls.by, principal)
		}
	}, nil
}

// listener is one client's subscriptions/listen stream. Notifications
// queue for a writer of its own, so that whoever sends one (an
// upstream's reader) never waits for this client.
type listener struct {
	s      *session        // whose stream it is
	id     json.RawMessage // the request's id, the stream's tag
	filter mcp.SubscriptionFilter
	queue  chan []byte
	full   func()      // ends the stream when the queue overflows
	open   atomic.Bool // acknowledged: the ack is the stream's first message
}

// notify queues a notification for the stream, tagged; before the
// acknowledgement there is no stream to send it on yet.
func (l *listener) notify(method string, params json.RawMessage) {
	if !l.open.Load() {
		return
	}
	select {
	case l.queue <- encodeRequest(nil, method, tagSubscription(params, l.id)):
	default:
		l.full()
	}
}

// write sends the queued notifications with emit until stop is closed,
// then what is left, and closes written.
func (l *listener) write(emit func([]byte), stop <-chan struct{}, written chan<- struct{}) {
	defer close(written)
	for {
		select {
		case msg := <-l.queue:
			emit(msg)
		case <-stop:
			for {
				select {
				case msg := <-l.queue:
					emit(msg)
				default:
					return
				}
			}
		}
	}
}

// hears reports whether the stream may hear what a process of from
// sends: its session's rule.
func (l *listener) hears(from upstream.Owner) bool { return l.s.hears(from) }

// wants reports whether the stream asked for a broadcast notification.
func (l *listener) wants(method string) bool {
	switch method {
	case notificationToolsListChanged:
		return l.filter.ToolsListChanged
	case notificationPromptsListChanged:
		return l.filter.PromptsListChanged
	case notificationResourcesListChange:
		return l.filter.ResourcesListChanged
	}
	return false // opt-in is absolute: nothing outside the filter
}

// tagSubscription returns params with the subscription's id in _meta.
func tagSubscription(params, id json.RawMessage) json.RawMessage {
	out := []byte("{}")
	if len(params) > 0 && gjson.ValidBytes(params) && gjson.ParseBytes(params).IsObject() {
		out = append([]byte(nil), params...)
	}
	out, _ = sjson.SetRawBytes(out, pathMetaSubscriptionID, id)
	return out
}

// untagSubscription drops an upstream's subscription tag from params:
// downstream, the client's own stream tags it.
func untagSubscription(params json.RawMessage) json.RawMessage {
	if !gjson.GetBytes(params, pathMetaSubscriptionID).Exists() {
		return params
	}
	out, err := sjson.DeleteBytes(append([]byte(nil), params...), pathMetaSubscriptionID)
	if err != nil {
		return params
	}
	if m := gjson.GetBytes(out, "_meta"); m.IsObject() && len(m.Map()) == 0 {
		out, _ = sjson.DeleteBytes(out, "_meta")
	}
	return out
}

// grantable is what the gateway can announce of what a client asks for:
// the list changes it declares, and updates of any resource (an upstream
// that cannot subscribe refuses the URI).
func (g *Gateway) grantable(want mcp.SubscriptionFilter) mcp.SubscriptionFilter {
	return mcp.SubscriptionFilter{
		ToolsListChanged:      want.ToolsListChanged,
		PromptsListChanged:    want.PromptsListChanged && g.ups.Offer("prompts"),
		ResourcesListChanged:  want.ResourcesListChanged,
		ResourceSubscriptions: want.ResourceSubscriptions,
	}
}

// serveListen serves subscriptions/listen for as long as the client keeps
// the request open.
func (s *session) serveListen(ctx context.Context, m *message, related func([]byte)) (json.RawMessage, error) {
	g := s.g
	var p struct {
		Notifications *mcp.SubscriptionFilter `json:"notifications"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil || p.Notifications == nil {
		return nil, fmt.Errorf("%s: %w: \"notifications\" (an object) is required", m.Method, jsonrpc.ErrBadParams)
	}
	release, err := g.listenSlots.take(s.User, g.limits)
	if err != nil {
		g.log.Warn("subscriptions/listen refused", "session", s.ID, "user", s.User, "error", err)
		return nil, err
	}
	defer release()
	emit := related
	if emit == nil {
		emit = s.send
	}
	ctx, end := context.WithCancelCause(ctx)
	defer end(nil)
	l := &listener{s: s, id: m.ID, filter: g.grantable(*p.Notifications), queue: make(chan []byte, listenQueue), full: func() { end(errListenerTooSlow) }}
	// The writer stops after the stream is unregistered (deferred
	// first, run last), so the result follows every notification.
	stop, written := make(chan struct{}), make(chan struct{})
	go l.write(emit, stop, written)
	defer func() {
		close(stop)
		<-written
	}()
	var subscribed []string
	defer func() {
		for _, uri := range subscribed {
			g.unsubscribe(l, uri)
		}
	}()
	for _, uri := range l.filter.ResourceSubscriptions {
		if uri == "" {
			return nil, fmt.Errorf("%s: %w: an empty resource URI", m.Method, jsonrpc.ErrBadParams)
		}
		if err := g.subscribe(ctx, l, uri); err != nil {
			return nil, &rpcError{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("subscribing to %q: %v", uri, err)}
		}
		subscribed = append(subscribed, uri)
	}
	g.listenMu.Lock()
	g.listeners[l] = struct{}{}
	g.listenMu.Unlock()
	defer func() {
		g.listenMu.Lock()
		delete(g.listeners, l)
		g.listenMu.Unlock()
	}()
	ack, _ := json.Marshal(map[string]any{"notifications": l.filter})
	l.queue <- encodeRequest(nil, notificationSubscriptionsAcked, tagSubscription(ack, l.id)) // the queue is empty
	l.open.Store(true)
	s.g.log.Debug("subscriptions/listen open", "session", s.ID, "user", s.User, "filter", string(ack))
	if !l.filter.IsEmpty() {
		var closing <-chan struct{} // the gateway's shutdown ends every stream
		if ctx := g.ups.Context(); ctx != nil {
			closing = ctx.Done()
		}
		select {
		case <-ctx.Done():
		case <-closing:
		}
	}
	if errors.Is(context.Cause(ctx), errListenerTooSlow) {
		s.g.log.Warn("subscriptions/listen ended: its client does not read", "session", s.ID, "user", s.User, "queued", listenQueue)
	}
	return tagSubscription(nil, m.ID), nil
}

// notifyListeners sends a list change to every stream that asked for it
// and hears from.
func (g *Gateway) notifyListeners(from upstream.Owner, method string, params json.RawMessage) {
	g.listenMu.Lock()
	var to []*listener
	for l := range g.listeners {
		if l.wants(method) && l.hears(from) {
			to = append(to, l)
		}
	}
	g.listenMu.Unlock()
	for _, l := range to {
		l.notify(method, params)
	}
}

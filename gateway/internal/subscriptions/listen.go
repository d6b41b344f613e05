package subscriptions

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
// Retry-After (RetryAfter), as a full max_sessions answers.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
	"github.com/mcpx-dev/mcpx/gateway/internal/router"
	"github.com/mcpx-dev/mcpx/gateway/internal/upstream"
)

// Methods of the stateless revision's subscriptions, and the list
// changes a stream may ask for.
const (
	MethodListen                    = "subscriptions/listen"
	NotificationAcked               = "notifications/subscriptions/acknowledged"
	NotificationToolsListChanged    = "notifications/tools/list_changed"
	NotificationPromptsListChanged  = "notifications/prompts/list_changed"
	NotificationResourcesListChange = "notifications/resources/list_changed"
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

// RetryAfter is the Retry-After (seconds) of a refused stream over HTTP:
// streams end when their clients go, so a short wait may do.
const RetryAfter = "10"

// slots count the open subscriptions/listen streams, in all and by
// principal. The zero value is ready.
type slots struct {
	mu    sync.Mutex
	total int
	by    map[string]int
}

// take counts a new stream of principal within lim's caps and returns
// its end; over a cap it returns ErrTooManyListenStreams.
func (ls *slots) take(principal string, lim config.Limits) (func(), error) {
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
	who    Subscriber      // whose stream it is: what it hears
	id     json.RawMessage // the request's id, the stream's tag
	filter mcp.SubscriptionFilter
	queue  chan []byte
	full   func()      // ends the stream when the queue overflows
	open   atomic.Bool // acknowledged: the ack is the stream's first message
}

// Notify queues a notification for the stream, tagged; before the
// acknowledgement there is no stream to send it on yet.
func (l *listener) Notify(method string, params json.RawMessage) {
	if !l.open.Load() {
		return
	}
	select {
	case l.queue <- jsonrpc.EncodeRequest(nil, method, tagSubscription(params, l.id)):
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

// Hears reports whether the stream may hear what a process of from
// sends: its client's rule.
func (l *listener) Hears(from upstream.Owner) bool { return l.who.Hears(from) }

// wants reports whether the stream asked for a broadcast notification.
func (l *listener) wants(method string) bool {
	switch method {
	case NotificationToolsListChanged:
		return l.filter.ToolsListChanged
	case NotificationPromptsListChanged:
		return l.filter.PromptsListChanged
	case NotificationResourcesListChange:
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

// Untag drops an upstream's subscription tag from params: downstream,
// the client's own stream tags it.
func Untag(params json.RawMessage) json.RawMessage {
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

// Listeners are the open subscriptions/listen streams.
type Listeners struct {
	ups    *router.Upstreams // their run ends every stream; prompts
	table  *Table            // a stream's resource subscriptions
	limits config.Limits     // MaxListenStreams, MaxListenStreamsPerPrincipal
	log    hclog.Logger

	slots slots // the streams' count, capped

	mu  sync.Mutex
	set map[*listener]struct{}
}

// NewListeners returns the streams of a gateway over ups, their resource
// subscriptions kept in table, capped by limits.
func NewListeners(ups *router.Upstreams, table *Table, limits config.Limits, log hclog.Logger) *Listeners {
	return &Listeners{ups: ups, table: table, limits: limits, log: log, set: map[*listener]struct{}{}}
}

// Open is how many streams are open.
func (ls *Listeners) Open() int {
	ls.slots.mu.Lock()
	defer ls.slots.mu.Unlock()
	return ls.slots.total
}

// grantable is what the gateway can announce of what a client asks for:
// the list changes it declares, and updates of any resource (an upstream
// that cannot subscribe refuses the URI).
func (ls *Listeners) grantable(want mcp.SubscriptionFilter) mcp.SubscriptionFilter {
	return mcp.SubscriptionFilter{
		ToolsListChanged:      want.ToolsListChanged,
		PromptsListChanged:    want.PromptsListChanged && ls.ups.Offer("prompts"),
		ResourcesListChanged:  want.ResourcesListChanged,
		ResourceSubscriptions: want.ResourceSubscriptions,
	}
}

// Serve serves subscriptions/listen request m of who (a session, or one
// stateless request: session and user name it in the log, and user is
// the principal whose streams are capped) for as long as the client
// keeps the request open; emit writes the stream.
func (ls *Listeners) Serve(ctx context.Context, who Subscriber, session, user string, m *jsonrpc.Message, emit func([]byte)) (json.RawMessage, error) {
	var p struct {
		Notifications *mcp.SubscriptionFilter `json:"notifications"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil || p.Notifications == nil {
		return nil, fmt.Errorf("%s: %w: \"notifications\" (an object) is required", m.Method, jsonrpc.ErrBadParams)
	}
	release, err := ls.slots.take(user, ls.limits)
	if err != nil {
		ls.log.Warn("subscriptions/listen refused", "session", session, "user", user, "error", err)
		return nil, err
	}
	defer release()
	ctx, end := context.WithCancelCause(ctx)
	defer end(nil)
	l := &listener{who: who, id: m.ID, filter: ls.grantable(*p.Notifications), queue: make(chan []byte, listenQueue), full: func() { end(errListenerTooSlow) }}
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
			ls.table.Unsubscribe(l, uri)
		}
	}()
	for _, uri := range l.filter.ResourceSubscriptions {
		if uri == "" {
			return nil, fmt.Errorf("%s: %w: an empty resource URI", m.Method, jsonrpc.ErrBadParams)
		}
		if err := ls.table.Subscribe(ctx, l, uri); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("subscribing to %q: %v", uri, err)}
		}
		subscribed = append(subscribed, uri)
	}
	ls.mu.Lock()
	ls.set[l] = struct{}{}
	ls.mu.Unlock()
	defer func() {
		ls.mu.Lock()
		delete(ls.set, l)
		ls.mu.Unlock()
	}()
	ack, _ := json.Marshal(map[string]any{"notifications": l.filter})
	l.queue <- jsonrpc.EncodeRequest(nil, NotificationAcked, tagSubscription(ack, l.id)) // the queue is empty
	l.open.Store(true)
	ls.log.Debug("subscriptions/listen open", "session", session, "user", user, "filter", string(ack))
	if !l.filter.IsEmpty() {
		var closing <-chan struct{} // the gateway's shutdown ends every stream
		if run := ls.ups.Context(); run != nil {
			closing = run.Done()
		}
		select {
		case <-ctx.Done():
		case <-closing:
		}
	}
	if errors.Is(context.Cause(ctx), errListenerTooSlow) {
		ls.log.Warn("subscriptions/listen ended: its client does not read", "session", session, "user", user, "queued", listenQueue)
	}
	return tagSubscription(nil, m.ID), nil
}

// Notify sends a list change to every stream that asked for it and
// hears from.
func (ls *Listeners) Notify(from upstream.Owner, method string, params json.RawMessage) {
	ls.mu.Lock()
	var to []*listener
	for l := range ls.set {
		if l.wants(method) && l.Hears(from) {
			to = append(to, l)
		}
	}
	ls.mu.Unlock()
	for _, l := range to {
		l.Notify(method, params)
	}
}

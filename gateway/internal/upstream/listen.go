package upstream

// subscriptions/listen upstream. A connection in 2026-07-28 carries no
// notification outside a request: the server announces list changes and
// resource updates only on a subscriptions/listen stream, whose filter
// names what the listener wants (SEP-2575). The gateway keeps one such
// stream open on an upstream's stateless connection (its lane: the only
// connection of a stateless-only upstream, or the second one stateless
// clients' requests go to), asking for the list changes the upstream's
// capabilities offer and, for a stateless-only upstream, the resources
// someone downstream subscribes to (a session-era upstream gets those as
// resources/subscribe on its session). When that set or the lane changes
// the stream is reopened. What arrives on it goes through
// Host.Notification like a session-era server's notifications, so a
// tool list changed by a stateless client's call on the lane reaches
// every client.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
)

// ListenStream is an upstream's subscriptions/listen stream.
type ListenStream struct {
	name    string
	log     hclog.Logger
	timeout time.Duration // the server's request timeout: for the acknowledgement
	life    *lifetime
	hs      *handshake // the gateway's _meta
	decl    *declared  // the list changes the server offers
	lanes   *lanes     // the lane the stream is on

	open sync.Mutex // held while a stream is (re)opened

	mu     sync.Mutex
	uris   map[string]struct{}    // resources subscribed to, in the upstream's form
	asked  string                 // the open stream's filter (JSON); "" when none is open
	lane   conn                   // the connection the open stream is on
	acked  mcp.SubscriptionFilter // what the upstream agreed to
	cancel context.CancelFunc
	ack    chan mcp.SubscriptionFilter // the ack the stream being opened waits for
	gen    int                         // counts streams, so a late end is told from the current one
}

func newListenStream(name string, cfg config.ServerConfig, log hclog.Logger, life *lifetime, hs *handshake, decl *declared, lanes *lanes) *ListenStream {
	return &ListenStream{name: name, log: log, timeout: cfg.RequestTimeout(), life: life, hs: hs, decl: decl, lanes: lanes}
}

// errListenRefused says an upstream's acknowledgement left out a resource.
var errListenRefused = errors.New("the server did not acknowledge the subscription")

// Add adds uri to the stream and returns once the upstream acknowledged
// it.
func (l *ListenStream) Add(ctx context.Context, uri string) error {
	l.mu.Lock()
	if l.uris == nil {
		l.uris = map[string]struct{}{}
	}
	l.uris[uri] = struct{}{}
	l.mu.Unlock()
	acked, err := l.reopenAcked(ctx)
	if err == nil && !slices.Contains(acked.ResourceSubscriptions, uri) {
		err = errListenRefused
	}
	if err != nil {
		l.mu.Lock()
		delete(l.uris, uri)
		l.mu.Unlock()
		return fmt.Errorf("upstream[%s]: subscriptions/listen for %s: %w", l.name, uri, err)
	}
	return nil
}

// Remove drops uri from the stream, in the background: nothing waits
// for a smaller filter.
func (l *ListenStream) Remove(uri string) {
	l.mu.Lock()
	delete(l.uris, uri)
	l.mu.Unlock()
	go func() {
		if err := l.Reopen(l.life.ctx()); err != nil {
			l.log.Debug("reopening subscriptions/listen without a resource", "uri", uri, "error", err)
		}
	}()
}

// filter is what the stream should ask for now.
func (l *ListenStream) filter() mcp.SubscriptionFilter {
	f := mcp.SubscriptionFilter{
		ToolsListChanged:     l.decl.capabilityFlag("tools", "listChanged"),
		PromptsListChanged:   l.decl.capabilityFlag("prompts", "listChanged"),
		ResourcesListChanged: l.decl.capabilityFlag("resources", "listChanged"),
	}
	l.mu.Lock()
	for uri := range l.uris {
		f.ResourceSubscriptions = append(f.ResourceSubscriptions, uri)
	}
	l.mu.Unlock()
	slices.Sort(f.ResourceSubscriptions)
	return f
}

// Reopen makes the open stream match what it should ask for now: the
// list changes the server offers and the resources added.
func (l *ListenStream) Reopen(ctx context.Context) error {
	_, err := l.reopenAcked(ctx)
	return err
}

// reopenAcked reopens the stream when its filter changed and returns
// what the upstream acknowledged.
func (l *ListenStream) reopenAcked(ctx context.Context) (mcp.SubscriptionFilter, error) {
	l.open.Lock()
	defer l.open.Unlock()
	want := l.filter()
	wantJSON, _ := json.Marshal(want)
	lane := l.lanes.current()
	l.mu.Lock()
	if l.asked == string(wantJSON) && l.lane == lane {
		acked := l.acked
		l.mu.Unlock()
		return acked, nil
	}
	if l.cancel != nil {
		l.cancel()
		l.cancel = nil
	}
	l.asked, l.lane = "", nil
	l.gen++
	gen := l.gen
	l.mu.Unlock()
	if want.IsEmpty() {
		return want, nil
	}
	if lane == nil {
		return mcp.SubscriptionFilter{}, fmt.Errorf("upstream[%s] has no 2026-07-28 connection: %w", l.name, jsonrpc.ErrUpstreamUnavailable)
	}
	params, _ := json.Marshal(map[string]any{"notifications": want, "_meta": json.RawMessage(l.hs.meta())})
	sctx, cancel := context.WithCancel(l.life.ctx())
	ack := make(chan mcp.SubscriptionFilter, 1)
	ended := make(chan error, 1)
	l.mu.Lock()
	l.cancel, l.ack = cancel, ack
	l.mu.Unlock()
	go func() {
		_, err := l.lanes.call(sctx, lane, "subscriptions/listen", params)
		ended <- err
		l.ended(sctx, lane, gen, err)
	}()
	wait := time.NewTimer(l.timeout)
	defer wait.Stop()
	select {
	case acked := <-ack:
		l.mu.Lock()
		if l.gen == gen {
			l.asked, l.acked, l.lane = string(wantJSON), acked, lane
		}
		l.mu.Unlock()
		l.log.Debug("subscriptions/listen open", "filter", string(wantJSON))
		return acked, nil
	case err := <-ended:
		cancel()
		if err == nil {
			err = errors.New("the stream ended before its acknowledgement")
		}
		return mcp.SubscriptionFilter{}, err
	case <-wait.C:
		cancel()
		return mcp.SubscriptionFilter{}, fmt.Errorf("no acknowledgement within the timeout: %w", jsonrpc.ErrUpstreamTimeout)
	case <-ctx.Done():
		cancel()
		return mcp.SubscriptionFilter{}, ctx.Err()
	}
}

// Acknowledged hands the upstream's notifications/subscriptions/acknowledged
// to the stream being opened.
func (l *ListenStream) Acknowledged(params json.RawMessage) {
	var acked mcp.SubscriptionFilter
	if n := gjson.GetBytes(params, "notifications"); n.IsObject() {
		_ = json.Unmarshal([]byte(n.Raw), &acked)
	}
	l.mu.Lock()
	ack := l.ack
	l.ack = nil
	l.mu.Unlock()
	if ack != nil {
		ack <- acked
	}
}

// listenRetry is how long the gateway waits before reopening a stream the
// upstream ended.
const listenRetry = time.Second

// ended runs when a stream's request returns. A stream that was
// acknowledged and that the gateway did not cancel ended upstream (the
// server closed it): it is reopened after a pause. One whose connection
// failed is reopened by the next connection (renewSubscriptions).
func (l *ListenStream) ended(ctx context.Context, lane conn, gen int, err error) {
	if ctx.Err() != nil {
		return
	}
	l.mu.Lock()
	current := l.gen == gen && l.asked != ""
	if current {
		l.asked, l.cancel, l.lane = "", nil, nil
	}
	l.mu.Unlock()
	select {
	case <-lane.done():
		return
	default:
	}
	if !current {
		return
	}
	l.log.Warn("the upstream ended subscriptions/listen; reopening", "error", err, "in", listenRetry)
	time.AfterFunc(listenRetry, func() {
		l.mu.Lock()
		stale := l.gen != gen
		l.mu.Unlock()
		if stale || l.life.ctx().Err() != nil {
			return
		}
		if err := l.Reopen(l.life.ctx()); err != nil {
			l.log.Warn("reopening subscriptions/listen", "error", err)
		}
	})
}

// laneOpened opens the stream on a new stateless connection, in the
// background: the request that opened the lane does not wait for it.
func (l *ListenStream) laneOpened() {
	go func() {
		if err := l.Reopen(l.life.ctx()); err != nil {
			l.log.Debug("opening subscriptions/listen on the stateless connection", "error", err)
		}
	}()
}

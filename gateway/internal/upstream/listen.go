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

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
)

// upstreamListen is an upstream's subscriptions/listen stream.
type upstreamListen struct {
	open sync.Mutex // held while a stream is (re)opened

	mu     sync.Mutex
	uris   map[string]struct{}    // resources subscribed to, in u's form
	filter string                 // the open stream's filter (JSON); "" when none is open
	lane   conn                   // the connection the open stream is on
	acked  mcp.SubscriptionFilter // what the upstream agreed to
	cancel context.CancelFunc
	ack    chan mcp.SubscriptionFilter // the ack the stream being opened waits for
	gen    int                         // counts streams, so a late end is told from the current one
}

// errListenRefused says an upstream's acknowledgement left out a resource.
var errListenRefused = errors.New("the server did not acknowledge the subscription")

// listenFor adds uri to the upstream's stream and returns once the
// upstream acknowledged it.
func (u *Upstream) ListenFor(ctx context.Context, uri string) error {
	l := &u.listen
	l.mu.Lock()
	if l.uris == nil {
		l.uris = map[string]struct{}{}
	}
	l.uris[uri] = struct{}{}
	l.mu.Unlock()
	acked, err := u.relistenAcked(ctx)
	if err == nil && !slices.Contains(acked.ResourceSubscriptions, uri) {
		err = errListenRefused
	}
	if err != nil {
		l.mu.Lock()
		delete(l.uris, uri)
		l.mu.Unlock()
		return fmt.Errorf("upstream[%s]: subscriptions/listen for %s: %w", u.Name, uri, err)
	}
	return nil
}

// unlisten drops uri from the upstream's stream, in the background:
// nothing waits for a smaller filter.
func (u *Upstream) Unlisten(uri string) {
	l := &u.listen
	l.mu.Lock()
	delete(l.uris, uri)
	l.mu.Unlock()
	go func() {
		if err := u.Relisten(u.lifetime()); err != nil {
			u.Log.Debug("reopening subscriptions/listen without a resource", "uri", uri, "error", err)
		}
	}()
}

// listenFilter is what the stream should ask for now.
func (u *Upstream) listenFilter() mcp.SubscriptionFilter {
	f := mcp.SubscriptionFilter{
		ToolsListChanged:     u.capabilityFlag("tools", "listChanged"),
		PromptsListChanged:   u.capabilityFlag("prompts", "listChanged"),
		ResourcesListChanged: u.capabilityFlag("resources", "listChanged"),
	}
	l := &u.listen
	l.mu.Lock()
	for uri := range l.uris {
		f.ResourceSubscriptions = append(f.ResourceSubscriptions, uri)
	}
	l.mu.Unlock()
	slices.Sort(f.ResourceSubscriptions)
	return f
}

// relisten makes the open stream match listenFilter.
func (u *Upstream) Relisten(ctx context.Context) error {
	_, err := u.relistenAcked(ctx)
	return err
}

// relistenAcked reopens the stream when its filter changed and returns
// what the upstream acknowledged.
func (u *Upstream) relistenAcked(ctx context.Context) (mcp.SubscriptionFilter, error) {
	l := &u.listen
	l.open.Lock()
	defer l.open.Unlock()
	want := u.listenFilter()
	wantJSON, _ := json.Marshal(want)
	u.mu.RLock()
	lane := u.lane
	u.mu.RUnlock()
	l.mu.Lock()
	if l.filter == string(wantJSON) && l.lane == lane {
		acked := l.acked
		l.mu.Unlock()
		return acked, nil
	}
	if l.cancel != nil {
		l.cancel()
		l.cancel = nil
	}
	l.filter, l.lane = "", nil
	l.gen++
	gen := l.gen
	l.mu.Unlock()
	if want.IsEmpty() {
		return want, nil
	}
	if lane == nil {
		return mcp.SubscriptionFilter{}, fmt.Errorf("upstream[%s] has no 2026-07-28 connection: %w", u.Name, jsonrpc.ErrUpstreamUnavailable)
	}
	params, _ := json.Marshal(map[string]any{"notifications": want, "_meta": json.RawMessage(u.gatewayMeta())})
	sctx, cancel := context.WithCancel(u.lifetime())
	ack := make(chan mcp.SubscriptionFilter, 1)
	ended := make(chan error, 1)
	l.mu.Lock()
	l.cancel, l.ack = cancel, ack
	l.mu.Unlock()
	go func() {
		_, err := u.callLane(sctx, lane, "subscriptions/listen", params)
		ended <- err
		u.listenEnded(sctx, lane, gen, err)
	}()
	wait := time.NewTimer(u.Config.RequestTimeout())
	defer wait.Stop()
	select {
	case acked := <-ack:
		l.mu.Lock()
		if l.gen == gen {
			l.filter, l.acked, l.lane = string(wantJSON), acked, lane
		}
		l.mu.Unlock()
		u.Log.Debug("subscriptions/listen open", "filter", string(wantJSON))
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

// listenAcknowledged hands the upstream's notifications/subscriptions/acknowledged
// to the stream being opened.
func (u *Upstream) ListenAcknowledged(params json.RawMessage) {
	var acked mcp.SubscriptionFilter
	if n := gjson.GetBytes(params, "notifications"); n.IsObject() {
		_ = json.Unmarshal([]byte(n.Raw), &acked)
	}
	l := &u.listen
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

// listenEnded runs when a stream's request returns. A stream that was
// acknowledged and that the gateway did not cancel ended upstream (the
// server closed it): it is reopened after a pause. One whose connection
// failed is reopened by the next connection (renewSubscriptions).
func (u *Upstream) listenEnded(ctx context.Context, lane conn, gen int, err error) {
	if ctx.Err() != nil {
		return
	}
	l := &u.listen
	l.mu.Lock()
	current := l.gen == gen && l.filter != ""
	if current {
		l.filter, l.cancel, l.lane = "", nil, nil
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
	u.Log.Warn("the upstream ended subscriptions/listen; reopening", "error", err, "in", listenRetry)
	time.AfterFunc(listenRetry, func() {
		l.mu.Lock()
		stale := l.gen != gen
		l.mu.Unlock()
		if stale || u.lifetime().Err() != nil {
			return
		}
		if err := u.Relisten(u.lifetime()); err != nil {
			u.Log.Warn("reopening subscriptions/listen", "error", err)
		}
	})
}

// laneOpened opens the stream on a new stateless connection, in the
// background: the request that opened the lane does not wait for it.
func (u *Upstream) laneOpened() {
	go func() {
		if err := u.Relisten(u.lifetime()); err != nil {
			u.Log.Debug("opening subscriptions/listen on the stateless connection", "error", err)
		}
	}()
}

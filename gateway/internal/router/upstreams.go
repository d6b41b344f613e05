package router

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
	"github.com/mcpx-dev/mcpx/gateway/internal/upstream"
)

// startWaitSlack is how long past an upstream's start-up timeout a client
// waits: long enough for the attempt's own failure to land first.
const startWaitSlack = time.Second

// Upstreams are the gateway's enabled upstreams, by name and in name
// order, and their start: the context they run in, and how long a
// client's first request waits for their first connection attempts.
// The set is filled while the gateway is built (Add) and fixed from
// Start on.
type Upstreams struct {
	byName    map[string]*upstream.Upstream
	order     []*upstream.Upstream // sorted by name
	startWait time.Duration

	ctx     context.Context // the upstreams' run; nil before Start
	cancel  context.CancelFunc
	startAt time.Time // when Start was called
	wg      sync.WaitGroup
	// started: every upstream has made its first connection attempt.
	started atomic.Bool
}

// NewUpstreams returns an empty set whose clients wait at least
// startWait for the first connection attempts (see AwaitStart).
func NewUpstreams(startWait time.Duration) *Upstreams {
	return &Upstreams{byName: map[string]*upstream.Upstream{}, startWait: startWait}
}

// Add puts u in the set; only while the gateway is built.
func (s *Upstreams) Add(u *upstream.Upstream) {
	s.byName[u.Name] = u
	i := sort.Search(len(s.order), func(i int) bool { return s.order[i].Name >= u.Name })
	s.order = append(s.order, nil)
	copy(s.order[i+1:], s.order[i:])
	s.order[i] = u
}

// Named returns the upstream called name, or nil.
func (s *Upstreams) Named(name string) *upstream.Upstream { return s.byName[name] }

// All returns every upstream in name order; the slice is the set's own:
// read it, never write it.
func (s *Upstreams) All() []*upstream.Upstream { return s.order }

// Len is how many upstreams there are.
func (s *Upstreams) Len() int { return len(s.order) }

// Single reports whether there is one upstream: its tools, prompts and
// resources then keep their names.
func (s *Upstreams) Single() bool { return len(s.order) == 1 }

// Only is the one upstream of a single-upstream gateway, else nil.
func (s *Upstreams) Only() *upstream.Upstream {
	if len(s.order) != 1 {
		return nil
	}
	return s.order[0]
}

// Offering returns the upstreams that declared capability name.
func (s *Upstreams) Offering(name string) []*upstream.Upstream {
	var out []*upstream.Upstream
	for _, u := range s.order {
		if u.Capability(name) {
			out = append(out, u)
		}
	}
	return out
}

// Offer reports whether an upstream declared capability name.
func (s *Upstreams) Offer(name string) bool {
	for _, u := range s.order {
		if u.Capability(name) {
			return true
		}
	}
	return false
}

// Start runs every upstream in the background (logEvery: how often a
// starting one says it is still starting; 0, the upstream's default);
// one that fails is retried with backoff and does not stop the others.
func (s *Upstreams) Start(ctx context.Context, logEvery time.Duration) {
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	s.startAt = time.Now()
	for _, u := range s.order {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			u.Run(s.ctx, logEvery)
		}()
	}
}

// Context is the upstreams' run: it ends when the gateway closes; nil
// before Start.
func (s *Upstreams) Context() context.Context { return s.ctx }

// Stop ends the upstreams' run and waits for every upstream to stop, for
// ctx, or for wait; it reports whether they all stopped.
func (s *Upstreams) Stop(ctx context.Context, wait time.Duration) bool {
	if s.cancel != nil {
		s.cancel()
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return true
	case <-time.After(wait):
		return false
	}
}

// WaitReady waits until every upstream has made its first connection
// attempt, or ctx ends.
func (s *Upstreams) WaitReady(ctx context.Context) {
	for _, u := range s.order {
		select {
		case <-u.FirstTry():
		case <-ctx.Done():
			return
		}
	}
}

// AwaitStart lets a request that arrives before the upstreams' first
// connection attempts wait for them: for each, until the larger of the
// start wait and its start-up timeout has passed since Start (a cold "go
// run" or "npx -y" takes minutes, and a client that lists tools before
// must not be told there are none). Initialize waits here, and so does a
// stateless client's first request, which has no initialize to wait in.
// Once every upstream has tried, it costs one atomic load.
func (s *Upstreams) AwaitStart(ctx context.Context) {
	if s.started.Load() {
		return
	}
	for _, u := range s.order {
		wait := time.Until(s.startAt.Add(max(s.startWait, u.Config.StartupTimeout()) + startWaitSlack))
		if wait <= 0 {
			continue
		}
		t := time.NewTimer(wait)
		select {
		case <-u.FirstTry():
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
		if ctx.Err() != nil {
			return
		}
	}
	for _, u := range s.order {
		select {
		case <-u.FirstTry():
		default:
			return
		}
	}
	s.started.Store(true)
}

// Status describes every upstream, in name order.
func (s *Upstreams) Status() []upstream.Status {
	out := make([]upstream.Status, 0, len(s.order))
	for _, u := range s.order {
		out = append(out, u.Status())
	}
	return out
}

// ReadResource returns the resources/read result of uri on server: the
// engine's resourcelink layer reads upstream resources through it
// (engine.ResourceReader), reaching the upstreams by name and nothing
// else of the gateway.
func (s *Upstreams) ReadResource(ctx context.Context, server, uri string) (json.RawMessage, error) {
	u := s.byName[server]
	if u == nil {
		return nil, fmt.Errorf("read %s: server %q: %w", uri, server, jsonrpc.ErrUnknownResource)
	}
	params, _ := json.Marshal(map[string]string{"uri": uri})
	return u.Call(ctx, "resources/read", params)
}

var _ engine.ResourceReader = (*Upstreams)(nil)

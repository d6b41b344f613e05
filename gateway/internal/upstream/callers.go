package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
)

// Caller is the downstream request an upstream call is made for. The
// gateway puts it in the call's context (WithCaller): a server-to-client
// request that arrives while calls are in flight is tied to their
// callers (Callers.Sole), and a stateless caller's call goes to the
// upstream's stateless lane with its own _meta.
type Caller interface {
	// Session identifies the caller's downstream session (comparable).
	Session() any
	// Principal names the principal the request is made for, never
	// empty (auth.Principal.Key: "tenant/user", "local" for the one
	// user of an unauthenticated gateway): a per_user server's calls go
	// to that principal's process.
	Principal() string
	// Seq orders callers by arrival; the latest is asked first.
	Seq() int64
	// StatelessMeta returns a 2026-07-28 request's _meta, and false for a
	// request of the session era.
	StatelessMeta() (meta json.RawMessage, stateless bool)
}

type callerKey struct{}

// WithCaller returns ctx carrying c, for the calls made on c's behalf.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the Caller of ctx, or nil.
func CallerFrom(ctx context.Context) Caller {
	c, _ := ctx.Value(callerKey{}).(Caller)
	return c
}

// Callers are the downstream requests with calls in flight on an
// upstream (on any of its processes), and the server requests relayed
// for them, within the limits on those.
type Callers struct {
	set    callerSet
	limits config.Limits
	log    hclog.Logger
	// asking: the upstream's server requests relayed, unanswered
	asking atomic.Int32
	// warned: when a refusal was last logged at warn (unix seconds), so
	// that a flood logs one line a second, not one a request
	warned atomic.Int64
}

func newCallers(lim config.Limits, log hclog.Logger) *Callers {
	return &Callers{limits: lim, log: log}
}

// enter records a call of c in flight and returns its end.
func (cs *Callers) enter(c Caller) func() { return cs.set.enter(c) }

// Sole returns the latest caller when every call in flight to the
// upstream belongs to one session, and how many sessions have calls in
// flight.
func (cs *Callers) Sole() (Caller, int) { return cs.set.sole() }

// SoleAt is Sole as it was when the server request answered in ctx
// arrived, where its connection recorded that (a stdio connection does,
// on its reader); Sole now otherwise. The request is answered on a
// goroutine of its own, which may run after another session's call has
// begun: a call begun after the request arrived is not what it is for,
// and would make the request look ambiguous.
func (cs *Callers) SoleAt(ctx context.Context) (Caller, int) {
	if a, ok := ctx.Value(arrivalKey{}).(arrival); ok && a.cs == cs {
		return a.sole, a.n
	}
	return cs.Sole()
}

// arrival is what Sole said when a server request arrived.
type arrival struct {
	cs   *Callers
	sole Caller
	n    int
}

type arrivalKey struct{}

// arrived returns ctx with what Sole says now, for SoleAt.
func (cs *Callers) arrived(ctx context.Context) context.Context {
	sole, n := cs.Sole()
	return context.WithValue(ctx, arrivalKey{}, arrival{cs: cs, sole: sole, n: n})
}

// takeSlot increments n unless it is at limit.
func takeSlot(n *atomic.Int32, limit int) bool {
	for {
		v := n.Load()
		if int(v) >= limit {
			return false
		}
		if n.CompareAndSwap(v, v+1) {
			return true
		}
	}
}

// Admit counts a server request of method that the upstream relays for
// a caller whose relayed, unanswered requests perCall counts, within
// Limits.MaxServerRequestsPerUpstream and MaxServerRequestsPerCall, and
// returns its end; over a cap it logs the refusal and returns
// jsonrpc.ErrTooManyServerRequests.
func (cs *Callers) Admit(method string, perCall *atomic.Int32) (func(), error) {
	lim := cs.limits
	if !takeSlot(&cs.asking, lim.MaxServerRequestsPerUpstream) {
		err := fmt.Errorf("%w (limit %d per upstream)", jsonrpc.ErrTooManyServerRequests, lim.MaxServerRequestsPerUpstream)
		cs.refused(method, err)
		return nil, err
	}
	if !takeSlot(perCall, lim.MaxServerRequestsPerCall) {
		cs.asking.Add(-1)
		err := fmt.Errorf("%w (limit %d per call)", jsonrpc.ErrTooManyServerRequests, lim.MaxServerRequestsPerCall)
		cs.refused(method, err)
		return nil, err
	}
	return func() {
		perCall.Add(-1)
		cs.asking.Add(-1)
	}, nil
}

// refused logs a server request the caps turned away: at warn once a
// second per upstream, at debug otherwise.
func (cs *Callers) refused(method string, err error) {
	now := time.Now().Unix()
	if last := cs.warned.Load(); now > last && cs.warned.CompareAndSwap(last, now) {
		cs.log.Warn("server-to-client request refused (more are logged at debug)", "method", method, "error", err)
		return
	}
	cs.log.Debug("server-to-client request refused", "method", method, "error", err)
}

// callerSet counts the calls in flight on one process by caller.
type callerSet struct {
	mu sync.Mutex
	n  map[Caller]int
}

// enter records a call of c in flight and returns its end.
func (cs *callerSet) enter(c Caller) func() {
	cs.mu.Lock()
	if cs.n == nil {
		cs.n = map[Caller]int{}
	}
	cs.n[c]++
	cs.mu.Unlock()
	return func() {
		cs.mu.Lock()
		if cs.n[c]--; cs.n[c] <= 0 {
			delete(cs.n, c)
		}
		cs.mu.Unlock()
	}
}

// sole returns the latest caller when every call in flight counted in
// cs belongs to one session, and how many sessions have calls in flight.
func (cs *callerSet) sole() (Caller, int) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	var latest Caller
	sessions := map[any]struct{}{}
	for c := range cs.n {
		sessions[c.Session()] = struct{}{}
		if latest == nil || c.Seq() > latest.Seq() {
			latest = c
		}
	}
	if len(sessions) != 1 {
		return nil, len(sessions)
	}
	return latest, 1
}

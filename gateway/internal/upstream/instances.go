package upstream

// More than one process of a stdio server (mcpServers.X.mcpx.instances).
// The upstream's own connection (the shared process) runs in every mode:
// it answers initialize for the gateway, the lists, subscriptions and
// notifications. Under "pool", PoolSize-1 more processes start once the
// shared one is ready, each kept up with the same backoff; a call goes
// to the least busy of them all. Under "per_session", a session's first
// call starts a process for that session alone, stopped when the gateway
// says the session ended (EndSession). Only calls (instanceMethods) go to
// the instances: the lists of every process of one command are the
// shared one's.

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
	config "github.com/mcpx-dev/mcpx/internal/gatewayconfig"
)

// instanceMethods are the requests an extra process serves.
var instanceMethods = map[string]bool{
	"tools/call":          true,
	"resources/read":      true,
	"prompts/get":         true,
	"completion/complete": true,
}

// instance is one extra process of the server, initialized.
type instance struct {
	c       conn
	busy    atomic.Int32    // calls in flight
	callers upstreamCallers // their callers, to tie its server requests
}

// sessionInstance is a per_session process, or its start in progress.
type sessionInstance struct {
	ready chan struct{} // closed once inst or err is set
	inst  *instance
	err   error
	ended bool // the session ended while its process started; under instances.mu
}

// instances are an upstream's extra processes.
type instances struct {
	mu       sync.Mutex
	pool     []*instance // ready pool processes besides the shared one
	next     int         // rotates ties among the least busy
	sessions map[any]*sessionInstance
	closed   bool

	primaryBusy atomic.Int32  // calls in flight on the shared process
	up          chan struct{} // closed when the shared process is first ready
	upOnce      sync.Once
	slots       sync.WaitGroup // the pool's supervisors
}

// primaryUp records that the shared process is ready: the pool's
// processes declare what it declared.
func (u *Upstream) primaryUp() {
	u.inst.upOnce.Do(func() { close(u.inst.up) })
}

// runPool keeps PoolSize-1 extra processes up until ctx ends; the
// caller has counted it in u.inst.slots.
func (u *Upstream) runPool(ctx context.Context) {
	defer u.inst.slots.Done()
	n := u.Config.PoolSize() - 1
	if n <= 0 {
		return
	}
	select {
	case <-u.inst.up:
	case <-ctx.Done():
		return
	}
	for i := 0; i < n; i++ {
		u.inst.slots.Add(1)
		go func() {
			defer u.inst.slots.Done()
			u.runSlot(ctx, i+1)
		}()
	}
}

// runSlot keeps one pool process up, restarting it with backoff.
func (u *Upstream) runSlot(ctx context.Context, slot int) {
	log := u.Log.With("instance", slot)
	backoff := restartMin
	for ctx.Err() == nil {
		start := time.Now()
		inst, err := u.startInstance(ctx, "pool")
		if err == nil {
			u.inst.mu.Lock()
			u.inst.pool = append(u.inst.pool, inst)
			u.inst.mu.Unlock()
			select {
			case <-inst.c.done():
				err = connEnded(inst.c)
			case <-ctx.Done():
			}
			u.inst.mu.Lock()
			for i, p := range u.inst.pool {
				if p == inst {
					u.inst.pool = append(u.inst.pool[:i], u.inst.pool[i+1:]...)
					break
				}
			}
			u.inst.mu.Unlock()
			_ = inst.c.close()
			if ctx.Err() != nil {
				return
			}
			if time.Since(start) > restartReset {
				backoff = restartMin
			}
		}
		if ctx.Err() != nil {
			return
		}
		log.Warn("pool process down; retrying", "error", err, "retry_in_ms", backoff.Milliseconds())
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return
		}
		backoff = min(backoff*2, restartMax)
	}
}

// startInstance starts one more process of the server and initializes
// it as the shared one was.
func (u *Upstream) startInstance(ctx context.Context, role string) (*instance, error) {
	inst := &instance{}
	h := connHandlers{
		notification: u.notification,
		request: func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
			// A request of this process is for a call in flight on it:
			// the one session's, when all are one session's.
			if CallerFrom(ctx) == nil {
				if c, _ := inst.callers.sole(); c != nil {
					ctx = WithCaller(ctx, c)
				}
			}
			return u.host.Request(ctx, u, method, params)
		},
		maxAnswering: u.limits.MaxServerRequestsPerUpstream + AnswerSpare,
	}
	c, err := startStdio(u.Name, u.Config, u.limits, u.Log.Named(role), h)
	if err != nil {
		return nil, err
	}
	ictx, cancel := context.WithTimeout(ctx, u.Config.StartupTimeout())
	defer cancel()
	params, _ := json.Marshal(map[string]any{
		"protocolVersion": ProtocolVersion,
		"capabilities":    u.clientCapabilities(),
		"clientInfo":      map[string]any{"name": "mcpx", "version": u.version},
	})
	res, err := c.call(ictx, "initialize", params)
	if err != nil {
		_ = c.close()
		return nil, fmt.Errorf("upstream[%s]: %s process: initialize: %w", u.Name, role, timeoutErr(ictx, err))
	}
	if pv := gjson.GetBytes(res, "protocolVersion").String(); !mcp.IsValidProtocolVersion(pv) {
		_ = c.close()
		return nil, fmt.Errorf("upstream[%s]: %s process: initialize: unsupported protocol version %q", u.Name, role, pv)
	}
	if err := c.notify(ictx, "notifications/initialized", nil); err != nil {
		_ = c.close()
		return nil, fmt.Errorf("upstream[%s]: %s process: initialized: %w", u.Name, role, err)
	}
	inst.c = c
	u.Log.Debug("extra process ready", "role", role)
	return inst, nil
}

// route is where one call goes: an instance, or the shared process.
type route struct {
	c    conn
	busy *atomic.Int32
	cs   *upstreamCallers // nil for the shared process (u.callers counts it)
}

// enter counts the call in flight on r and returns its end.
func (r route) enter(cl Caller) func() {
	var leave func()
	if r.cs != nil && cl != nil {
		leave = r.cs.enter(cl)
	}
	return func() {
		r.busy.Add(-1)
		if leave != nil {
			leave()
		}
	}
}

// routeCall picks the process for a call of method on c, the shared
// process's connection, with its busy count taken; stateless: a
// 2026-07-28 request, which has no session.
func (u *Upstream) routeCall(ctx context.Context, c conn, cl Caller, stateless bool, method string) (route, error) {
	shared := route{c: c, busy: &u.inst.primaryBusy}
	if !instanceMethods[method] || u.statelessOnly.Load() {
		shared.busy.Add(1)
		return shared, nil
	}
	switch u.Config.InstanceMode() {
	case config.InstancesPool:
		u.inst.mu.Lock()
		defer u.inst.mu.Unlock()
		best := shared
		least := shared.busy.Load()
		n := len(u.inst.pool)
		for i := 0; i < n; i++ {
			p := u.inst.pool[(u.inst.next+i)%n]
			if b := p.busy.Load(); b < least {
				best, least = route{c: p.c, busy: &p.busy, cs: &p.callers}, b
			}
		}
		u.inst.next++
		best.busy.Add(1)
		return best, nil
	case config.InstancesPerSession:
		if cl == nil || stateless {
			break
		}
		inst, err := u.sessionInstance(ctx, cl.Session())
		if err != nil {
			return route{}, err
		}
		inst.busy.Add(1)
		return route{c: inst.c, busy: &inst.busy, cs: &inst.callers}, nil
	}
	shared.busy.Add(1)
	return shared, nil
}

// sessionInstance returns the process of session key, starting it on
// the session's first call (or after its process ended).
func (u *Upstream) sessionInstance(ctx context.Context, key any) (*instance, error) {
	u.inst.mu.Lock()
	if u.inst.closed {
		u.inst.mu.Unlock()
		return nil, fmt.Errorf("upstream[%s]: %w", u.Name, jsonrpc.ErrUpstreamUnavailable)
	}
	si := u.inst.sessions[key]
	if si != nil {
		select {
		case <-si.ready:
			if si.inst != nil && isDone(si.inst.c) {
				u.Log.Info("a session's process ended; starting another", "error", connEnded(si.inst.c))
				delete(u.inst.sessions, key)
				si = nil
			}
		default:
		}
	}
	if si == nil {
		if len(u.inst.sessions) >= u.limits.MaxSessionProcesses {
			u.inst.mu.Unlock()
			return nil, fmt.Errorf("upstream[%s]: %w: %d sessions have a process of this per_session server (limits.max_session_processes); retry when one ends", u.Name, jsonrpc.ErrTooManyInstances, u.limits.MaxSessionProcesses)
		}
		if u.inst.sessions == nil {
			u.inst.sessions = map[any]*sessionInstance{}
		}
		si = &sessionInstance{ready: make(chan struct{})}
		u.inst.sessions[key] = si
		// Started apart from this call: a call cancelled while it starts
		// leaves it to the session's next call.
		go u.startSession(key, si)
	}
	u.inst.mu.Unlock()
	select {
	case <-si.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if si.err != nil {
		return nil, si.err
	}
	return si.inst, nil
}

// startSession starts session key's process into si.
func (u *Upstream) startSession(key any, si *sessionInstance) {
	inst, err := u.startInstance(u.lifetime(), "session")
	u.inst.mu.Lock()
	si.inst, si.err = inst, err
	ended := si.ended || u.inst.closed
	if err != nil && u.inst.sessions[key] == si {
		delete(u.inst.sessions, key) // the next call tries again
	}
	u.inst.mu.Unlock()
	close(si.ready)
	if err == nil && ended {
		_ = inst.c.close()
	}
}

// EndSession stops the process of a per_session server that session key
// (a Caller's Session) had; the gateway calls it when a session ends.
func (u *Upstream) EndSession(key any) {
	u.inst.mu.Lock()
	si := u.inst.sessions[key]
	delete(u.inst.sessions, key)
	if si != nil {
		si.ended = true
	}
	u.inst.mu.Unlock()
	if si == nil {
		return
	}
	go func() {
		<-si.ready // a process still starting is closed by startSession
		if si.inst != nil {
			_ = si.inst.c.close()
		}
	}()
}

// closeInstances stops every extra process; Run calls it as it returns.
func (u *Upstream) closeInstances() {
	u.inst.mu.Lock()
	u.inst.closed = true
	sessions := u.inst.sessions
	u.inst.sessions = nil
	u.inst.mu.Unlock()
	var wg sync.WaitGroup
	for _, si := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-si.ready
			if si.inst != nil {
				_ = si.inst.c.close()
			}
		}()
	}
	wg.Wait()
	u.inst.slots.Wait() // each closes its own as Run's context ends
}

// InstancePIDs are the process ids of the server's extra processes now
// (pool and per_session), for status and tests.
func (u *Upstream) InstancePIDs() []int {
	u.inst.mu.Lock()
	defer u.inst.mu.Unlock()
	var pids []int
	add := func(c conn) {
		if sc, ok := c.(*stdioConn); ok && !isDone(sc) {
			pids = append(pids, sc.cmd.Process.Pid)
		}
	}
	for _, p := range u.inst.pool {
		add(p.c)
	}
	for _, si := range u.inst.sessions {
		select {
		case <-si.ready:
			if si.inst != nil {
				add(si.inst.c)
			}
		default:
		}
	}
	return pids
}

func isDone(c conn) bool {
	select {
	case <-c.done():
		return true
	default:
		return false
	}
}

// instanceCount is how many extra processes run now. u.mu may be held.
func (u *Upstream) instanceCount() int {
	u.inst.mu.Lock()
	defer u.inst.mu.Unlock()
	n := len(u.inst.pool)
	for _, si := range u.inst.sessions {
		select {
		case <-si.ready:
			if si.inst != nil {
				n++
			}
		default:
		}
	}
	return n
}

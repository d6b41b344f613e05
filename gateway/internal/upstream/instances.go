package upstream

// More than one process of a stdio server (mcpServers.X.mcpx.instances).
// The upstream's own connection (the shared process) runs in every mode:
// it answers initialize for the gateway, the lists, subscriptions and
// notifications. Under "pool", PoolSize-1 more processes start once the
// shared one is ready, each kept up with the same backoff; a call goes
// to the least busy of them all. Under "per_session" and "per_user" a
// process has an Owner and serves nobody else: a session's first call
// starts one for that session, stopped when the gateway says the
// session ended (EndSession); a principal's first call, in any of its
// sessions or stateless, starts one for that principal, stopped once it
// has had no call for limits.user_process_idle_timeout. Only calls
// (instanceMethods) go to the instances: the lists of every process of
// one command are the shared one's.
//
// Under per_user no user's state reaches another user:
//
//   - every call a principal makes (tools/call, resources/read,
//     prompts/get, completion/complete) goes to its own process,
//     stateless ones too: they skip the shared stateless lane;
//   - the shared process serves only lists, subscriptions and the
//     gateway's own requests, never a principal's call, so it holds no
//     user's state, and what it announces (list changes,
//     resources/updated, log messages) holds none either: those reach
//     everyone, as under "shared";
//   - what an owned process sends on its own (notifications, and
//     requests outside any call, such as roots/list as it starts) names
//     its Owner (Host), and the gateway delivers it to that owner's
//     sessions and streams only, never to "the one session with a call
//     in flight" of another owner.
//
// Subscriptions stay the shared process's (as for per_session): a
// resource that only a user's process changes is announced to that
// user when the process says so on its own, and the gateway's cached
// reads are per session, so none crosses users either.

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

// Owner is whom an extra process serves alone: one downstream session
// (per_session: a Caller's Session) or one principal (per_user: a
// Caller's Principal). The zero Owner is everyone: the shared process,
// its stateless lane and a pool's processes.
type Owner struct {
	Session   any
	Principal string
}

// ownedProcess is a per_session or per_user process, or its start in
// progress.
type ownedProcess struct {
	owner Owner
	ready chan struct{} // closed once inst or err is set
	inst  *instance
	err   error
	// Under instances.mu:
	ended bool // stopped while it started: startOwned closes it
	holds int  // calls that chose it and have not ended
	// idleSince and idle are per_user's idle clock: since when no call
	// holds it, and the timer that stops it after
	// limits.user_process_idle_timeout.
	idleSince time.Time
	idle      *time.Timer
}

// role names p's kind in logs.
func (p *ownedProcess) role() string {
	if p.owner.Principal != "" {
		return "user"
	}
	return "session"
}

// instances are an upstream's extra processes.
type instances struct {
	mu     sync.Mutex
	pool   []*instance // ready pool processes besides the shared one
	next   int         // rotates ties among the least busy
	owned  map[Owner]*ownedProcess
	closed bool

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
		inst, err := u.startInstance(ctx, "pool", Owner{})
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

// startInstance starts one more process of the server for owner and
// initializes it as the shared one was.
func (u *Upstream) startInstance(ctx context.Context, role string, owner Owner) (*instance, error) {
	inst := &instance{}
	h := connHandlers{
		notification: func(method string, params json.RawMessage) {
			u.host.Notification(u, owner, method, params)
		},
		request: func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
			// A request of this process is for a call in flight on it:
			// the one session's, when all are one session's.
			if CallerFrom(ctx) == nil {
				if c, _ := inst.callers.sole(); c != nil {
					ctx = WithCaller(ctx, c)
				}
			}
			return u.host.Request(ctx, u, owner, method, params)
		},
		maxAnswering: u.limits.MaxServerRequestsPerUpstream + AnswerSpare,
	}
	c, err := startStdio(u.Name, u.Config, u.limits, u.Log.Named(role), h)
	if err != nil {
		return nil, err
	}
	ictx, cancel := context.WithTimeout(ctx, u.Config.StartupTimeout())
	defer cancel()
	if u.statelessOnly.Load() {
		// Never initialized, as the shared process was not: server/discover
		// says it serves 2026-07-28 (stateless_only.go).
		if _, err := u.discover(ictx, c); err != nil {
			_ = c.close()
			return nil, fmt.Errorf("upstream[%s]: %s process: server/discover: %w", u.Name, role, timeoutErr(ictx, err))
		}
		inst.c = c
		u.Log.Debug("extra process ready", "role", role)
		return inst, nil
	}
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
	// release ends the call's hold on an owned process; nil for others
	release func()
}

// enter counts the call in flight on r and returns its end; a nil cl
// counts no caller.
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
		if r.release != nil {
			r.release()
		}
	}
}

// startsProcess reports whether a call of method may start a process
// of its own (per_session, per_user).
func (u *Upstream) startsProcess(method string) bool {
	switch u.Config.InstanceMode() {
	case config.InstancesPerSession, config.InstancesPerUser:
		return instanceMethods[method]
	}
	return false
}

// perUserCall reports whether a call of method goes to its principal's
// process, whatever its era.
func (u *Upstream) perUserCall(method string) bool {
	return instanceMethods[method] && u.Config.InstanceMode() == config.InstancesPerUser
}

// routeCall picks the process for a call of method on c, the shared
// process's connection, with its busy count taken; stateless: a
// 2026-07-28 request, which has no session.
func (u *Upstream) routeCall(ctx context.Context, c conn, cl Caller, stateless bool, method string) (route, error) {
	shared := route{c: c, busy: &u.inst.primaryBusy}
	// A server that speaks only 2026-07-28 has no initialized processes
	// for a pool or sessions; a user's process needs none.
	if !instanceMethods[method] || u.statelessOnly.Load() && !u.perUserCall(method) {
		shared.busy.Add(1)
		return shared, nil
	}
	var owner Owner
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
		if cl != nil && !stateless {
			owner = Owner{Session: cl.Session()}
		}
	case config.InstancesPerUser:
		if cl != nil {
			owner = Owner{Principal: cl.Principal()}
		}
	}
	if owner == (Owner{}) {
		shared.busy.Add(1)
		return shared, nil
	}
	p, err := u.ownedProcess(ctx, owner)
	if err != nil {
		return route{}, err
	}
	p.inst.busy.Add(1)
	return route{c: p.inst.c, busy: &p.inst.busy, cs: &p.inst.callers, release: func() { u.release(p) }}, nil
}

// ownedProcess returns owner's process, held for one call (release
// ends the hold), starting it on the owner's first call (or after its
// process ended).
func (u *Upstream) ownedProcess(ctx context.Context, owner Owner) (*ownedProcess, error) {
	u.inst.mu.Lock()
	if u.inst.closed {
		u.inst.mu.Unlock()
		return nil, fmt.Errorf("upstream[%s]: %w", u.Name, jsonrpc.ErrUpstreamUnavailable)
	}
	p := u.inst.owned[owner]
	if p != nil {
		select {
		case <-p.ready:
			if p.inst != nil && isDone(p.inst.c) {
				u.Log.Info("a "+p.role()+"'s process ended; starting another", "error", connEnded(p.inst.c))
				delete(u.inst.owned, owner)
				p.ended = true
				p = nil
			}
		default:
		}
	}
	if p == nil {
		if err := u.ownedCap(owner); err != nil {
			u.inst.mu.Unlock()
			return nil, err
		}
		if u.inst.owned == nil {
			u.inst.owned = map[Owner]*ownedProcess{}
		}
		p = &ownedProcess{owner: owner, ready: make(chan struct{})}
		u.inst.owned[owner] = p
		// Started apart from this call: a call cancelled while it starts
		// leaves it to the owner's next call.
		go u.startOwned(p)
	}
	p.holds++
	if p.idle != nil {
		p.idle.Stop()
	}
	u.inst.mu.Unlock()
	select {
	case <-p.ready:
	case <-ctx.Done():
		u.release(p)
		return nil, ctx.Err()
	}
	if p.err != nil {
		u.release(p)
		return nil, p.err
	}
	return p, nil
}

// ownedCap refuses a process for owner when the server runs as many
// as its limit allows; u.inst.mu is held.
func (u *Upstream) ownedCap(owner Owner) error {
	n := len(u.inst.owned)
	if owner.Principal != "" {
		if n >= u.limits.MaxUserProcesses {
			return fmt.Errorf("upstream[%s]: %w: %d users have a process of this per_user server (limits.max_user_processes); retry when one has had no call for %s (limits.user_process_idle_timeout)", u.Name, jsonrpc.ErrTooManyInstances, u.limits.MaxUserProcesses, time.Duration(u.limits.UserProcessIdleTimeout))
		}
		return nil
	}
	if n >= u.limits.MaxSessionProcesses {
		return fmt.Errorf("upstream[%s]: %w: %d sessions have a process of this per_session server (limits.max_session_processes); retry when one ends", u.Name, jsonrpc.ErrTooManyInstances, u.limits.MaxSessionProcesses)
	}
	return nil
}

// startOwned starts p's process.
func (u *Upstream) startOwned(p *ownedProcess) {
	inst, err := u.startInstance(u.lifetime(), p.role(), p.owner)
	u.inst.mu.Lock()
	p.inst, p.err = inst, err
	ended := p.ended || u.inst.closed
	if err != nil && u.inst.owned[p.owner] == p {
		delete(u.inst.owned, p.owner) // the next call tries again
	}
	u.inst.mu.Unlock()
	close(p.ready)
	if err == nil && ended {
		_ = inst.c.close()
	}
}

// release ends one call's hold on p. A per_user process that no call
// holds starts its idle clock; per_session processes end with their
// session.
func (u *Upstream) release(p *ownedProcess) {
	u.inst.mu.Lock()
	defer u.inst.mu.Unlock()
	p.holds--
	if p.holds > 0 || p.owner.Principal == "" || u.inst.owned[p.owner] != p {
		return
	}
	idle := time.Duration(u.limits.UserProcessIdleTimeout)
	p.idleSince = time.Now()
	if p.idle == nil {
		p.idle = time.AfterFunc(idle, func() { u.stopIdle(p) })
	} else {
		p.idle.Reset(idle)
	}
}

// stopIdle stops p's process when no call has held it for
// limits.user_process_idle_timeout; a call that came meanwhile keeps
// it (the timer may fire as a call takes it).
func (u *Upstream) stopIdle(p *ownedProcess) {
	idle := time.Duration(u.limits.UserProcessIdleTimeout)
	u.inst.mu.Lock()
	if p.holds > 0 || u.inst.owned[p.owner] != p || time.Since(p.idleSince) < idle {
		u.inst.mu.Unlock()
		return
	}
	delete(u.inst.owned, p.owner)
	p.ended = true
	u.inst.mu.Unlock()
	u.Log.Info("stopping a user's process: no call for limits.user_process_idle_timeout", "principal", p.owner.Principal, "idle", idle)
	stopOwned(p)
}

// stopOwned closes p's process once it has started (one still starting
// is closed by startOwned, which sees p.ended).
func stopOwned(p *ownedProcess) {
	go func() {
		<-p.ready
		if p.inst != nil {
			_ = p.inst.c.close()
		}
	}()
}

// EndSession stops the process of a per_session server that session key
// (a Caller's Session) had; the gateway calls it when a session ends.
func (u *Upstream) EndSession(key any) {
	owner := Owner{Session: key}
	u.inst.mu.Lock()
	p := u.inst.owned[owner]
	delete(u.inst.owned, owner)
	if p != nil {
		p.ended = true
	}
	u.inst.mu.Unlock()
	if p != nil {
		stopOwned(p)
	}
}

// closeInstances stops every extra process; Run calls it as it returns.
func (u *Upstream) closeInstances() {
	u.inst.mu.Lock()
	u.inst.closed = true
	owned := u.inst.owned
	u.inst.owned = nil
	for _, p := range owned {
		p.ended = true
		if p.idle != nil {
			p.idle.Stop()
		}
	}
	u.inst.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range owned {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-p.ready
			if p.inst != nil {
				_ = p.inst.c.close()
			}
		}()
	}
	wg.Wait()
	u.inst.slots.Wait() // each closes its own as Run's context ends
}

// InstancePIDs are the process ids of the server's extra processes now
// (pool, per_session and per_user), for status and tests.
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
	for _, p := range u.inst.owned {
		select {
		case <-p.ready:
			if p.inst != nil {
				add(p.inst.c)
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
	for _, p := range u.inst.owned {
		select {
		case <-p.ready:
			if p.inst != nil {
				n++
			}
		default:
		}
	}
	return n
}

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
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
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
	busy    atomic.Int32 // calls in flight
	callers callerSet    // their callers, to tie its server requests
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

// started is p's process once it has started, nil while it starts or
// when it failed to.
func (p *ownedProcess) started() *instance {
	select {
	case <-p.ready:
		return p.inst
	default:
		return nil
	}
}

// role names p's kind in logs.
func (p *ownedProcess) role() string {
	if p.owner.Principal != "" {
		return "user"
	}
	return "session"
}

// Instances are an upstream's extra processes, and the choice of the
// process a call goes to (route).
type Instances struct {
	name   string
	cfg    config.ServerConfig
	limits config.Limits
	log    hclog.Logger
	life   *lifetime
	hs     *handshake // an extra process declares what the shared one did
	// statelessOnly: the server speaks only 2026-07-28 (lanes)
	statelessOnly func() bool
	// handlers are what a process of an owner hands the gateway
	// (Upstream.handlers)
	handlers func(Owner, *callerSet) connHandlers

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

func newInstances(name string, cfg config.ServerConfig, lim config.Limits, log hclog.Logger, life *lifetime, hs *handshake, statelessOnly func() bool, handlers func(Owner, *callerSet) connHandlers) *Instances {
	return &Instances{
		name: name, cfg: cfg, limits: lim, log: log, life: life, hs: hs,
		statelessOnly: statelessOnly, handlers: handlers,
		up: make(chan struct{}),
	}
}

// primaryUp records that the shared process is ready: the pool's
// processes declare what it declared.
func (in *Instances) primaryUp() {
	in.upOnce.Do(func() { close(in.up) })
}

// runPool starts the supervisor of a pool's PoolSize-1 extra processes,
// which keeps them up until ctx ends.
func (in *Instances) runPool(ctx context.Context) {
	n := in.cfg.PoolSize() - 1
	if n <= 0 {
		return
	}
	in.slots.Add(1)
	go func() {
		defer in.slots.Done()
		select {
		case <-in.up:
		case <-ctx.Done():
			return
		}
		for i := 0; i < n; i++ {
			in.slots.Add(1)
			go func() {
				defer in.slots.Done()
				in.runSlot(ctx, i+1)
			}()
		}
	}()
}

// runSlot keeps one pool process up, restarting it with backoff.
func (in *Instances) runSlot(ctx context.Context, slot int) {
	if ctx.Err() != nil {
		return
	}
	log := in.log.With("instance", slot)
	keepUp(ctx, func() (bool, error) {
		inst, err := in.start(ctx, "pool", Owner{})
		if err != nil {
			return false, err
		}
		in.mu.Lock()
		in.pool = append(in.pool, inst)
		in.mu.Unlock()
		select {
		case <-inst.c.done():
			err = connEnded(inst.c)
		case <-ctx.Done():
		}
		in.mu.Lock()
		for i, p := range in.pool {
			if p == inst {
				in.pool = append(in.pool[:i], in.pool[i+1:]...)
				break
			}
		}
		in.mu.Unlock()
		_ = inst.c.close()
		return true, err
	}, func(err error, wait time.Duration) {
		log.Warn("pool process down; retrying", "error", err, "retry_in_ms", wait.Milliseconds())
	})
}

// start starts one more process of the server for owner and makes it
// ready as the shared one was: initialize declaring what it declared,
// or, for a server that speaks only 2026-07-28, server/discover.
func (in *Instances) start(ctx context.Context, role string, owner Owner) (*instance, error) {
	inst := &instance{}
	c, err := startStdio(in.name, in.cfg, in.limits, in.log.Named(role), in.handlers(owner, &inst.callers))
	if err != nil {
		return nil, err
	}
	ictx, cancel := context.WithTimeout(ctx, in.cfg.StartupTimeout())
	defer cancel()
	if in.statelessOnly() {
		// Never initialized, as the shared process was not: server/discover
		// says it serves 2026-07-28 (stateless_only.go).
		if _, err := in.hs.discover(ictx, c); err != nil {
			_ = c.close()
			return nil, fmt.Errorf("upstream[%s]: %s process: server/discover: %w", in.name, role, timeoutErr(ictx, err))
		}
		inst.c = c
		in.log.Debug("extra process ready", "role", role)
		return inst, nil
	}
	res, err := c.call(ictx, "initialize", in.hs.initializeParams(in.hs.capabilities()))
	if err != nil {
		_ = c.close()
		return nil, fmt.Errorf("upstream[%s]: %s process: initialize: %w", in.name, role, timeoutErr(ictx, err))
	}
	if _, err := in.hs.initialized(ictx, c, res); err != nil {
		_ = c.close()
		return nil, fmt.Errorf("upstream[%s]: %s process: %w", in.name, role, err)
	}
	inst.c = c
	in.log.Debug("extra process ready", "role", role)
	return inst, nil
}

// route is where one call goes: an instance, or the shared process.
type route struct {
	c    conn
	busy *atomic.Int32
	cs   *callerSet // nil for the shared process (Upstream.callers counts it)
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
func (in *Instances) startsProcess(method string) bool {
	switch in.cfg.InstanceMode() {
	case config.InstancesPerSession, config.InstancesPerUser:
		return instanceMethods[method]
	}
	return false
}

// perUserCall reports whether a call of method goes to its principal's
// process, whatever its era.
func (in *Instances) perUserCall(method string) bool {
	return instanceMethods[method] && in.cfg.InstanceMode() == config.InstancesPerUser
}

// route picks the process for a call of method on c, the shared
// process's connection, with its busy count taken; stateless: a
// 2026-07-28 request, which has no session.
func (in *Instances) route(ctx context.Context, c conn, cl Caller, stateless bool, method string) (route, error) {
	shared := route{c: c, busy: &in.primaryBusy}
	// A server that speaks only 2026-07-28 has no initialized processes
	// for a pool or sessions; a user's process needs none.
	if !instanceMethods[method] || in.statelessOnly() && !in.perUserCall(method) {
		shared.busy.Add(1)
		return shared, nil
	}
	var owner Owner
	switch in.cfg.InstanceMode() {
	case config.InstancesPool:
		in.mu.Lock()
		defer in.mu.Unlock()
		best := shared
		least := shared.busy.Load()
		n := len(in.pool)
		for i := 0; i < n; i++ {
			p := in.pool[(in.next+i)%n]
			if b := p.busy.Load(); b < least {
				best, least = route{c: p.c, busy: &p.busy, cs: &p.callers}, b
			}
		}
		in.next++
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
	p, err := in.ownedProcess(ctx, owner)
	if err != nil {
		return route{}, err
	}
	p.inst.busy.Add(1)
	return route{c: p.inst.c, busy: &p.inst.busy, cs: &p.inst.callers, release: func() { in.release(p) }}, nil
}

// ownedProcess returns owner's process, held for one call (release
// ends the hold), starting it on the owner's first call (or after its
// process ended).
func (in *Instances) ownedProcess(ctx context.Context, owner Owner) (*ownedProcess, error) {
	in.mu.Lock()
	if in.closed {
		in.mu.Unlock()
		return nil, fmt.Errorf("upstream[%s]: %w", in.name, jsonrpc.ErrUpstreamUnavailable)
	}
	p := in.owned[owner]
	if p != nil {
		if inst := p.started(); inst != nil && isDone(inst.c) {
			in.log.Info("a "+p.role()+"'s process ended; starting another", "error", connEnded(inst.c))
			delete(in.owned, owner)
			p.ended = true
			p = nil
		}
	}
	if p == nil {
		if err := in.ownedCap(owner); err != nil {
			in.mu.Unlock()
			return nil, err
		}
		if in.owned == nil {
			in.owned = map[Owner]*ownedProcess{}
		}
		p = &ownedProcess{owner: owner, ready: make(chan struct{})}
		in.owned[owner] = p
		// Started apart from this call: a call cancelled while it starts
		// leaves it to the owner's next call.
		go in.startOwned(p)
	}
	p.holds++
	if p.idle != nil {
		p.idle.Stop()
	}
	in.mu.Unlock()
	select {
	case <-p.ready:
	case <-ctx.Done():
		in.release(p)
		return nil, ctx.Err()
	}
	if p.err != nil {
		in.release(p)
		return nil, p.err
	}
	return p, nil
}

// ownedCap refuses a process for owner when the server runs as many
// as its limit allows; in.mu is held.
func (in *Instances) ownedCap(owner Owner) error {
	n := len(in.owned)
	if owner.Principal != "" {
		if n >= in.limits.MaxUserProcesses {
			return fmt.Errorf("upstream[%s]: %w: %d users have a process of this per_user server (limits.max_user_processes); retry when one has had no call for %s (limits.user_process_idle_timeout)", in.name, jsonrpc.ErrTooManyInstances, in.limits.MaxUserProcesses, time.Duration(in.limits.UserProcessIdleTimeout))
		}
		return nil
	}
	if n >= in.limits.MaxSessionProcesses {
		return fmt.Errorf("upstream[%s]: %w: %d sessions have a process of this per_session server (limits.max_session_processes); retry when one ends", in.name, jsonrpc.ErrTooManyInstances, in.limits.MaxSessionProcesses)
	}
	return nil
}

// startOwned starts p's process.
func (in *Instances) startOwned(p *ownedProcess) {
	inst, err := in.start(in.life.ctx(), p.role(), p.owner)
	in.mu.Lock()
	p.inst, p.err = inst, err
	ended := p.ended || in.closed
	if err != nil && in.owned[p.owner] == p {
		delete(in.owned, p.owner) // the next call tries again
	}
	in.mu.Unlock()
	close(p.ready)
	if err == nil && ended {
		_ = inst.c.close()
	}
}

// release ends one call's hold on p. A per_user process that no call
// holds starts its idle clock; per_session processes end with their
// session.
func (in *Instances) release(p *ownedProcess) {
	in.mu.Lock()
	defer in.mu.Unlock()
	p.holds--
	if p.holds > 0 || p.owner.Principal == "" || in.owned[p.owner] != p {
		return
	}
	idle := time.Duration(in.limits.UserProcessIdleTimeout)
	p.idleSince = time.Now()
	if p.idle == nil {
		p.idle = time.AfterFunc(idle, func() { in.stopIdle(p) })
	} else {
		p.idle.Reset(idle)
	}
}

// stopIdle stops p's process when no call has held it for
// limits.user_process_idle_timeout; a call that came meanwhile keeps
// it (the timer may fire as a call takes it).
func (in *Instances) stopIdle(p *ownedProcess) {
	idle := time.Duration(in.limits.UserProcessIdleTimeout)
	in.mu.Lock()
	if p.holds > 0 || in.owned[p.owner] != p || time.Since(p.idleSince) < idle {
		in.mu.Unlock()
		return
	}
	delete(in.owned, p.owner)
	p.ended = true
	in.mu.Unlock()
	in.log.Info("stopping a user's process: no call for limits.user_process_idle_timeout", "principal", p.owner.Principal, "idle", idle)
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
func (in *Instances) EndSession(key any) {
	owner := Owner{Session: key}
	in.mu.Lock()
	p := in.owned[owner]
	delete(in.owned, owner)
	if p != nil {
		p.ended = true
	}
	in.mu.Unlock()
	if p != nil {
		stopOwned(p)
	}
}

// close stops every extra process; Run calls it as it returns.
func (in *Instances) close() {
	in.mu.Lock()
	in.closed = true
	owned := in.owned
	in.owned = nil
	for _, p := range owned {
		p.ended = true
		if p.idle != nil {
			p.idle.Stop()
		}
	}
	in.mu.Unlock()
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
	in.slots.Wait() // each closes its own as Run's context ends
}

// PIDs are the process ids of the server's extra processes now (pool,
// per_session and per_user), for status and tests.
func (in *Instances) PIDs() []int {
	in.mu.Lock()
	defer in.mu.Unlock()
	var pids []int
	add := func(c conn) {
		if sc, ok := c.(*stdioConn); ok && !isDone(sc) {
			pids = append(pids, sc.pid())
		}
	}
	for _, p := range in.pool {
		add(p.c)
	}
	for _, p := range in.owned {
		if inst := p.started(); inst != nil {
			add(inst.c)
		}
	}
	return pids
}

// count is how many extra processes run now.
func (in *Instances) count() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	n := len(in.pool)
	for _, p := range in.owned {
		if p.started() != nil {
			n++
		}
	}
	return n
}

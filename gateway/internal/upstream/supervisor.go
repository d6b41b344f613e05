package upstream

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
)

// Restart backoff of a crashed stdio upstream: the first retry waits
// restartMin, each further one twice as long up to restartMax; a
// connection that lived restartReset resets it.
const (
	restartMin   = 200 * time.Millisecond
	restartMax   = 30 * time.Second
	restartReset = 60 * time.Second
)

// startLogInterval is how often an upstream that is still starting says
// so in the log.
const startLogInterval = 5 * time.Second

// supervisor keeps an upstream's shared connection up: it makes one
// (run's connect), waits until it ends, and makes the next after a
// backoff; it holds the connection while it is ready, and what Status
// and a call refused meanwhile say of it.
type supervisor struct {
	name      string
	log       hclog.Logger
	startup   time.Duration // the server's startup timeout, as logged
	startWait time.Duration // Options.StartWait

	firstTry chan struct{} // closed after the first connection attempt
	once     sync.Once

	// clock is when the connection attempt in progress started, less
	// any wait for the first client; waiting is set during that wait,
	// which is no slowness of the server's
	clockMu sync.Mutex
	clock   time.Time
	waiting bool

	mu        sync.RWMutex
	c         conn // nil unless ready
	state     string
	lastErr   error
	restarts  int
	nextRetry time.Time
}

func newSupervisor(name string, cfg config.ServerConfig, startWait time.Duration, log hclog.Logger) *supervisor {
	return &supervisor{
		name:      name,
		log:       log,
		startup:   cfg.StartupTimeout(),
		startWait: startWait,
		firstTry:  make(chan struct{}),
		state:     StateStarting,
	}
}

// run keeps a connection made by connect up until ctx ends; closing
// runs when ctx ends with the connection up, after it is closed.
func (s *supervisor) run(ctx context.Context, logEvery time.Duration, connect func(context.Context) (conn, error), closing func()) {
	keepUp(ctx, func() (bool, error) {
		s.restartClock(false)
		stopLog := s.logStarting(logEvery)
		c, err := connect(ctx)
		stopLog()
		s.once.Do(func() { close(s.firstTry) })
		if err != nil {
			s.down(err)
			return false, err
		}
		select {
		case <-c.done():
		case <-ctx.Done():
			_ = c.close()
			closing()
			return true, nil
		}
		err = c.cause()
		s.down(err)
		if err == nil {
			// a connection that ended without saying why
			err = fmt.Errorf("upstream[%s]: connection ended: %w", s.name, jsonrpc.ErrUpstreamExited)
		}
		return true, err
	}, func(err error, wait time.Duration) {
		s.mu.Lock()
		s.restarts++
		s.nextRetry = time.Now().Add(wait)
		s.state = StateRestarting
		s.mu.Unlock()
		s.log.Warn("upstream down; retrying", "error", err, "retry_in_ms", wait.Milliseconds())
	})
	s.mu.Lock()
	s.c, s.state, s.lastErr = nil, StateClosed, nil
	s.mu.Unlock()
}

// keepUp runs up until ctx ends: up starts something (a connection, a
// process) and returns once it has ended, connected false when it did
// not start. Each end is told to retry with the wait before the next
// start: restartMin, twice as long after each further end up to
// restartMax, restartMin again after one that ran restartReset.
func keepUp(ctx context.Context, up func() (connected bool, err error), retry func(err error, wait time.Duration)) {
	wait := restartMin
	for {
		start := time.Now()
		connected, err := up()
		if ctx.Err() != nil {
			return
		}
		if connected && time.Since(start) > restartReset {
			wait = restartMin
		}
		retry(err, wait)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return
		}
		wait = min(wait*2, restartMax)
	}
}

// restartClock starts the clock of the connection attempt again: at its
// start, and once the first client arrived (waiting false); waiting for
// that client (waiting true) stops it.
func (s *supervisor) restartClock(waiting bool) {
	s.clockMu.Lock()
	s.clock, s.waiting = time.Now(), waiting
	s.clockMu.Unlock()
}

// waitingForClient stops the clock of the connection attempt while its
// initialize waits for the first client (handshake.declare), and returns
// what starts it again.
func (s *supervisor) waitingForClient() (arrived func()) {
	s.restartClock(true)
	return func() { s.restartClock(false) }
}

// logStarting says in the log, every startLogInterval until the returned
// func is called, that the upstream is still starting and for how long it
// may: a first "go run" or "npx -y" takes minutes, and clients wait for
// it meanwhile. Past StartWait it says so as a warning. A wait for the
// first client is not counted and is said at debug: the server started.
func (s *supervisor) logStarting(every time.Duration) (stop func()) {
	done := make(chan struct{})
	if every <= 0 {
		every = startLogInterval
	}
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				s.clockMu.Lock()
				start, waiting := s.clock, s.waiting
				s.clockMu.Unlock()
				if waiting {
					s.log.Debug(fmt.Sprintf("upstream %s started; its initialize waits for the first client", s.name), "waited", time.Since(start).Round(time.Second))
					continue
				}
				so := time.Since(start).Round(time.Second)
				msg := fmt.Sprintf("waiting for upstream %s to start (%d s so far, up to %d s)", s.name, int(so.Seconds()), int(s.startup.Seconds()))
				if so <= s.startWait {
					s.log.Info(msg, "waited", so, "startup_timeout", s.startup)
				} else { // past what a client's initialize waits at least: worth seeing at the default level
					s.log.Warn(msg, "waited", so, "startup_timeout", s.startup)
				}
			}
		}
	}()
	return func() { close(done) }
}

// ready makes c the connection calls go to.
func (s *supervisor) ready(c conn) {
	s.mu.Lock()
	s.c, s.state, s.lastErr = c, StateReady, nil
	s.mu.Unlock()
}

// down records that the connection failed or ended, and why.
func (s *supervisor) down(err error) {
	s.mu.Lock()
	s.c, s.state, s.lastErr = nil, StateFailed, err
	s.mu.Unlock()
}

// conn is the ready connection, nil when there is none.
func (s *supervisor) conn() conn {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.c
}

// available is the ready connection, or why there is none (wrapping
// jsonrpc.ErrUpstreamUnavailable): the state, when the next attempt
// comes, and the last error.
func (s *supervisor) available() (conn, error) {
	s.mu.RLock()
	c, state, lastErr, retry := s.c, s.state, s.lastErr, s.nextRetry
	s.mu.RUnlock()
	if c != nil {
		return c, nil
	}
	msg := fmt.Sprintf("upstream[%s] is %s", s.name, state)
	if state == StateRestarting && !retry.IsZero() {
		msg += fmt.Sprintf(" (next attempt in %s)", time.Until(retry).Round(time.Millisecond))
	}
	if lastErr != nil {
		msg += ": " + lastErr.Error()
	}
	return nil, fmt.Errorf("%s: %w", msg, jsonrpc.ErrUpstreamUnavailable)
}

// status is what Status reports of the connection.
func (s *supervisor) status() (state string, restarts int, lastErr error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.state, s.restarts, s.lastErr
}

// stdio is the ready connection when it is a process's, else nil.
func (s *supervisor) stdio() *stdioConn {
	c, _ := s.conn().(*stdioConn)
	return c
}

package upstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
)

// stderrTailLines is how many of an upstream's last stderr lines an exit
// error quotes.
const stderrTailLines = 8

// maxStderrLine caps one logged stderr line.
const maxStderrLine = 4096

// stdioConn runs an upstream as a subprocess speaking newline-delimited
// JSON-RPC on stdin/stdout. Its stderr is always read to the end (into the
// log), so a chatty server never blocks on a full pipe.
type stdioConn struct {
	name string
	log  hclog.Logger
	h    connHandlers
	cmd  *exec.Cmd

	stdin io.WriteCloser
	lw    *jsonrpc.LineWriter // on stdin

	mu      sync.Mutex
	pending map[int64]waiter
	nextID  atomic.Int64
	due     deadlines // of started calls, under mu

	tailMu sync.Mutex
	tail   []string

	maxLine      int64         // limits.max_upstream_message_bytes
	stderrPerSec int           // limits.stderr_lines_per_second
	stopGrace    time.Duration // limits.stop_grace
	killGrace    time.Duration // limits.kill_grace

	// answering holds a slot per server request being answered (each on
	// a goroutine of its own); with none free the request is refused at
	// once, so a flood costs no goroutines
	answering chan struct{}
	dropped   atomic.Int64 // refusals dropped: the upstream reads nothing

	doneCh   chan struct{}
	exitErr  error
	closing  atomic.Bool
	stopOnce sync.Once
}

type callResult struct {
	raw json.RawMessage
	err error
}

// waiter is what waits for the answer to one request: a goroutine in
// call (ch), or start's callback (fn), which the goroutine that has the
// answer runs.
type waiter struct {
	ch   chan callResult
	fn   func(json.RawMessage, error)
	stop func() bool // fn's: unregisters its context's AfterFunc
}

// complete hands r to w.
func (w waiter) complete(r callResult) {
	if w.fn == nil {
		w.ch <- r
		return
	}
	if w.stop != nil {
		w.stop()
	}
	w.fn(r.raw, r.err)
}

// startStdio starts the process of cfg. It gets the allowlisted part of
// mcpx's environment and cfg.Env (see upstreamEnv); lim must have its
// defaults applied.
func startStdio(name string, cfg config.ServerConfig, lim config.Limits, log hclog.Logger, h connHandlers) (*stdioConn, error) {
	cmd := exec.Command(cfg.Command, cfg.Args...)
	cmd.Dir = cfg.Cwd
	cmd.Env = upstreamEnv(cfg, os.Environ())
	configureCmd(cmd)
	// os.Pipe rather than cmd.StdinPipe: its write end is the *os.File
	// itself, non-blocking in the runtime's poller, so that a request can
	// be written without waiting for the server to read (LineWriter.TryWrite)
	childIn, stdin, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("upstream[%s]: stdin pipe: %w", name, err)
	}
	cmd.Stdin = childIn
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		_, _ = childIn.Close(), stdin.Close()
		return nil, fmt.Errorf("upstream[%s]: stdout pipe: %w", name, err)
	}
	stderr, closeChildStderr, err := stderrPipe(cmd)
	if err != nil {
		_, _ = childIn.Close(), stdin.Close()
		return nil, fmt.Errorf("upstream[%s]: stderr pipe: %w", name, err)
	}
	err = cmd.Start()
	closeChildStderr() // the child has its copies
	_ = childIn.Close()
	if err != nil {
		_, _ = stderr.Close(), stdin.Close()
		return nil, fmt.Errorf("upstream[%s]: start %q: %w", name, cfg.Command, err)
	}
	c := &stdioConn{
		name:    name,
		log:     log,
		h:       h,
		cmd:     cmd,
		stdin:   stdin,
		lw:      jsonrpc.NewLineWriter(stdin, lim.WriteBufferBytes),
		pending: map[int64]waiter{},
		doneCh:  make(chan struct{}),

		maxLine:      lim.MaxUpstreamMessageBytes,
		stderrPerSec: lim.StderrLinesPerSecond,
		answering:    make(chan struct{}, lim.MaxServerRequestsPerUpstream+AnswerSpare),
		stopGrace:    time.Duration(lim.StopGrace),
		killGrace:    time.Duration(lim.KillGrace),
	}
	log.Debug("process started", "pid", cmd.Process.Pid, "command", cfg.Command)
	var readers sync.WaitGroup
	readers.Add(2)
	go func() { defer readers.Done(); c.readStdout(stdout) }()
	go func() {
		defer readers.Done()
		c.drainStderr(stderr)
		_ = stderr.Close()
	}()
	go func() {
		readers.Wait()
		werr := cmd.Wait()
		c.finish(werr)
	}()
	return c, nil
}

// finish records why the process ended and fails every call in flight.
func (c *stdioConn) finish(werr error) {
	var err error
	switch {
	case c.closing.Load():
		err = fmt.Errorf("upstream[%s]: connection closed: %w", c.name, jsonrpc.ErrUpstreamExited)
	default:
		status := "exited"
		if werr != nil {
			status = werr.Error()
		}
		err = fmt.Errorf("upstream[%s]: process %s%s: %w", c.name, status, c.tailText(), jsonrpc.ErrUpstreamExited)
	}
	c.mu.Lock()
	c.exitErr = err
	pending := c.pending
	c.pending = map[int64]waiter{}
	c.due.stop()
	c.mu.Unlock()
	for _, w := range pending {
		w.complete(callResult{err: err})
	}
	close(c.doneCh)
}

// stderrTail is the last lines the process wrote to stderr.
func (c *stdioConn) stderrTail() string {
	c.tailMu.Lock()
	defer c.tailMu.Unlock()
	return strings.Join(c.tail, "\n")
}

// pid is the process's id, the leader of its process group.
func (c *stdioConn) pid() int { return c.cmd.Process.Pid }

func (c *stdioConn) tailText() string {
	c.tailMu.Lock()
	defer c.tailMu.Unlock()
	if len(c.tail) == 0 {
		return ""
	}
	return "; last stderr: " + strings.Join(c.tail, " | ")
}

func (c *stdioConn) readStdout(r io.Reader) {
	br := bufio.NewReaderSize(jsonrpc.NewPipeReader(r), 64<<10)
	woke := false // a goroutine waiting in call has its answer
	for {
		line, over, err := jsonrpc.ReadLine(br, c.maxLine)
		if over {
			c.skipTooLarge(line)
		} else if len(bytes.TrimSpace(line)) > 0 {
			woke = c.dispatch(line) || woke
		}
		if woke && err == nil && br.Buffered() == 0 {
			// The call just answered is ready to run on this thread,
			// while the next read would find nothing and park this
			// goroutine first: let the answer go on now and read
			// after it (one call at a time, this moves a failed read
			// and a park off the response's path). An
			// answer to start has run already, on this goroutine.
			woke = false
			runtime.Gosched()
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !c.closing.Load() {
				c.log.Warn("reading stdout", "error", err)
			}
			// a process whose stdout is gone cannot answer: stop it, and
			// what it started, as close does (not from this goroutine:
			// the stop waits for it to end)
			go c.stop()
			return
		}
	}
}

// skipTooLarge fails the call that a line over the size limit answered,
// when its head names the id; the line itself is already dropped and the
// connection goes on.
func (c *stdioConn) skipTooLarge(head []byte) {
	id := gjson.GetBytes(head, "id")
	c.log.Warn("upstream wrote a message over the size limit; dropped", "limit_bytes", c.maxLine, "id", id.Raw)
	if id.Type != gjson.Number {
		return
	}
	if n, perr := strconv.ParseInt(id.Raw, 10, 64); perr == nil {
		err := jsonrpc.TooLargeError(c.maxLine, "limits.max_upstream_message_bytes")
		c.deliver(n, callResult{err: fmt.Errorf("upstream[%s]: %w: %w", c.name, jsonrpc.ErrUpstreamInvalidJSON, err)})
	}
}

// dispatch handles one message of the upstream; it reports whether it
// woke a goroutine waiting in call.
func (c *stdioConn) dispatch(line []byte) (woke bool) {
	m, err := jsonrpc.Parse(line)
	if err != nil {
		c.log.Warn("upstream wrote a line that is not a JSON-RPC message", "error", err)
		if m != nil && m.ID != nil {
			if id, perr := strconv.ParseInt(jsonrpc.IDKey(m.ID), 10, 64); perr == nil {
				return c.deliver(id, callResult{err: fmt.Errorf("upstream[%s]: %w: %w", c.name, jsonrpc.ErrUpstreamInvalidJSON, err)})
			}
		}
		return false
	}
	switch {
	case m.IsResponse():
		id, perr := strconv.ParseInt(jsonrpc.IDKey(m.ID), 10, 64)
		if perr != nil {
			c.log.Warn("response to an id the gateway never sent", "id", string(m.ID))
			return false
		}
		if m.Error != nil {
			return c.deliver(id, callResult{err: m.Error})
		}
		return c.deliver(id, callResult{raw: m.Result})
	case m.IsNotification():
		if c.h.notification != nil {
			c.h.notification(m.Method, m.Params)
		}
	case m.IsRequest():
		select {
		case c.answering <- struct{}{}:
			ctx := context.Background()
			if c.h.arrived != nil {
				ctx = c.h.arrived(ctx)
			}
			go func() {
				defer func() { <-c.answering }()
				c.answer(ctx, m)
			}()
		default:
			err := fmt.Errorf("%s: %w (%d answers in progress on this upstream)", m.Method, jsonrpc.ErrTooManyServerRequests, cap(c.answering))
			// Queued without waiting: the reader must go on reading
			// while an upstream that writes its requests before it
			// reads does not read its stdin.
			if !c.lw.Offer(jsonrpc.EncodeError(m.ID, err)) && c.dropped.Add(1) == 1 {
				c.log.Warn("the upstream floods requests and reads none of limits.write_buffer_bytes of answers: refusals dropped", "method", m.Method)
			}
		}
	}
	return false
}

// AnswerSpare is how many answers beyond limits.max_server_requests_per_upstream
// relayed ones may be in progress at once: quick ones (ping, roots from
// the config, refusals) while the relayed requests wait.
const AnswerSpare = 16

// deliver hands r to the waiter of request id, if any; it reports
// whether that woke a goroutine waiting in call (a callback of start
// runs here, on the caller's goroutine).
func (c *stdioConn) deliver(id int64, r callResult) (woke bool) {
	w, ok := c.take(id)
	if ok {
		w.complete(r)
	}
	return ok && w.fn == nil
}

// take removes and returns the waiter of request id: whoever takes it
// completes it, once.
func (c *stdioConn) take(id int64) (waiter, bool) {
	c.mu.Lock()
	w, ok := c.pending[id]
	delete(c.pending, id)
	c.due.drop(c.pending)
	c.mu.Unlock()
	return w, ok
}

// answer replies to a server-to-client request.
func (c *stdioConn) answer(ctx context.Context, m *jsonrpc.Message) {
	var out []byte
	if c.h.request == nil {
		out = jsonrpc.EncodeError(m.ID, fmt.Errorf("%w: %s", jsonrpc.ErrMethodNotFound, m.Method))
	} else if res, err := c.h.request(ctx, m.Method, m.Params); err != nil {
		out = jsonrpc.EncodeError(m.ID, err)
	} else {
		out = jsonrpc.EncodeResult(m.ID, res)
	}
	if err := c.write(out); err != nil {
		c.log.Debug("answering a server request", "method", m.Method, "error", err)
	}
}

// stderrBatchDelay is how long drainStderr waits before each read of
// an upstream's stderr that would block.
const stderrBatchDelay = 5 * time.Millisecond

func (c *stdioConn) drainStderr(r io.Reader) {
	br := bufio.NewReaderSize(r, 16<<10)
	var long []byte
	// A chatty upstream could fill the log at the speed of its pipe: at
	// most stderrPerSec lines per second are logged, the rest counted
	// and reported in one line. The tail keeps every line.
	var (
		window     time.Time
		logged     int
		suppressed int
	)
	reportSuppressed := func() {
		if suppressed > 0 {
			c.log.Info("stderr lines suppressed", "lines", suppressed, "limit_per_second", c.stderrPerSec)
			suppressed = 0
		}
	}
	defer reportSuppressed()
	for {
		if br.Buffered() == 0 {
			// Nothing left to take without a read: wait a moment
			// first, so that the lines a chatty server writes meanwhile
			// (the go-sdk examples log every message) arrive in one
			// read and one wake-up of this goroutine rather than one
			// per line, which on the hot path costs the relay a thread
			// wake-up per message. The pipe holds 64 KiB, so
			// the server does not block on a pause this short.
			time.Sleep(stderrBatchDelay)
		}
		chunk, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(long) < maxStderrLine {
				long = append(long, chunk...)
			}
			continue
		}
		line := chunk
		if long != nil {
			line = append(long, chunk...)
			long = nil
		}
		if s := strings.TrimRight(string(line), "\r\n"); s != "" {
			if len(s) > maxStderrLine {
				s = s[:maxStderrLine] + "..."
			}
			if now := time.Now(); now.Sub(window) >= time.Second {
				reportSuppressed()
				window, logged = now, 0
			}
			if logged < c.stderrPerSec {
				logged++
				c.log.Info("stderr", "line", s)
			} else {
				suppressed++
			}
			c.tailMu.Lock()
			c.tail = append(c.tail, s)
			if len(c.tail) > stderrTailLines {
				c.tail = c.tail[len(c.tail)-stderrTailLines:]
			}
			c.tailMu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// write sends one message and its newline; see lineWriter.
func (c *stdioConn) write(b []byte) error {
	if err := c.lw.Write(b); err != nil {
		return fmt.Errorf("upstream[%s]: write: %w", c.name, errors.Join(err, jsonrpc.ErrUpstreamExited))
	}
	return nil
}

func (c *stdioConn) call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	id := c.nextID.Add(1)
	ch := make(chan callResult, 1)
	c.mu.Lock()
	if c.exitErr != nil {
		err := c.exitErr
		c.mu.Unlock()
		return nil, err
	}
	c.pending[id] = waiter{ch: ch}
	c.mu.Unlock()
	if err := c.write(jsonrpc.EncodeRequest(jsonrpc.IntID(id), method, params)); err != nil {
		c.take(id)
		return nil, err
	}
	select {
	case r := <-ch:
		return r.raw, r.err
	case <-ctx.Done():
		c.take(id)
		c.cancelUpstream(id, cancelReason(ctx))
		return nil, ctx.Err()
	}
}

// start is call without a goroutine waiting for the answer: done gets
// what call would return, once, on the goroutine that has it (the
// connection's reader for the answer, the one that notices the end of
// ctx, of timeout or of the process otherwise). timeout bounds the call
// as a deadline on ctx would, without a timer of its own: the calls of
// one connection share one (deadlines). start itself never waits for
// the server: a request the server does not read yet is left to a
// goroutine to write (LineWriter.TryWrite). cancel ends the call as the
// end of ctx would, without a context of its own per call: the caller
// that can cancel one call (a client's notifications/cancelled) need not
// make one (call_start.go in the gateway).
func (c *stdioConn) start(ctx context.Context, timeout time.Duration, method string, params json.RawMessage, done func(json.RawMessage, error)) (cancel func()) {
	if err := ctx.Err(); err != nil {
		done(nil, err) // as call would answer, with nothing sent
		return func() {}
	}
	id := c.nextID.Add(1)
	req := jsonrpc.EncodeRequest(jsonrpc.IntID(id), method, params)
	c.mu.Lock()
	if c.exitErr != nil {
		err := c.exitErr
		c.mu.Unlock()
		done(nil, err)
		return func() {}
	}
	// The answer finds the stop of ctx's function. mu is not held while
	// the request is written: the server may answer before this thread
	// runs again, and its reader must not wait for mu then.
	c.pending[id] = waiter{fn: done, stop: context.AfterFunc(ctx, func() {
		if _, ok := c.take(id); ok {
			c.cancelUpstream(id, cancelReason(ctx))
			done(nil, ctx.Err())
		}
	})}
	if timeout > 0 {
		c.due.add(id, timeout, c.pending, c.expire)
	}
	c.mu.Unlock()
	switch ok, err := c.lw.TryWrite(req); {
	case err != nil:
		c.fail(id, fmt.Errorf("upstream[%s]: write: %w", c.name, errors.Join(err, jsonrpc.ErrUpstreamExited)))
	case !ok:
		// limits.write_buffer_bytes wait already: this request waits for
		// room on a goroutine of its own, as a caller of call would
		go func() {
			if err := c.write(req); err != nil {
				c.fail(id, err)
			}
		}()
	}
	return func() {
		if w, ok := c.take(id); ok {
			c.cancelUpstream(id, "cancelled by the client")
			w.complete(callResult{err: context.Canceled})
		}
	}
}

// expire fails the started calls past their deadline, as a deadline on
// their context would: context.DeadlineExceeded, and a cancellation
// upstream.
func (c *stdioConn) expire() {
	c.mu.Lock()
	ids := c.due.expired(time.Now(), c.pending, c.expire)
	c.mu.Unlock()
	for _, id := range ids {
		if w, ok := c.take(id); ok {
			c.cancelUpstream(id, "timed out in mcpx")
			w.complete(callResult{err: context.DeadlineExceeded})
		}
	}
}

// fail completes request id with err, unless it is complete already.
func (c *stdioConn) fail(id int64, err error) {
	if w, ok := c.take(id); ok {
		w.complete(callResult{err: err})
	}
}

// cancelReason is why a call gives up on a request when ctx ends, as
// the upstream is told it.
func cancelReason(ctx context.Context) string {
	if errors.Is(context.Cause(ctx), jsonrpc.ErrUpstreamTimeout) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return "timed out in mcpx"
	}
	return "cancelled by the client"
}

// cancelUpstream tells the upstream to stop working on request id.
func (c *stdioConn) cancelUpstream(id int64, reason string) {
	params, _ := json.Marshal(map[string]any{"requestId": id, "reason": reason})
	_ = c.write(jsonrpc.EncodeRequest(nil, "notifications/cancelled", params))
}

func (c *stdioConn) notify(_ context.Context, method string, params json.RawMessage) error {
	return c.write(jsonrpc.EncodeRequest(nil, method, params))
}

func (c *stdioConn) done() <-chan struct{} { return c.doneCh }

func (c *stdioConn) cause() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.exitErr
}

// close closes stdin (the MCP stdio shutdown), then ends the process
// group as clients do: SIGTERM after limits.stop_grace, SIGKILL after
// limits.kill_grace more (stopProcess).
func (c *stdioConn) close() error {
	c.closing.Store(true)
	c.stop()
	<-c.doneCh
	return nil
}

// stop closes stdin and ends the process group (stopProcess), once; a
// second caller waits for the first.
func (c *stdioConn) stop() {
	c.stopOnce.Do(func() {
		_ = c.stdin.Close()
		stopProcess(c.cmd, c.doneCh, c.stopGrace, c.killGrace, c.log)
	})
}

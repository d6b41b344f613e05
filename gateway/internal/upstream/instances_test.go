package upstream

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
	"github.com/mcpx-dev/mcpx/store"
)

// pidStubEnv makes the test binary a stdio MCP server with one tool,
// "pid": it sleeps sleep_ms, or waits until the file named gate exists,
// then answers its process id. It answers one request at a time, as
// most Python servers do.
const pidStubEnv = "MCPX_UPSTREAM_TEST_PID_STUB"

func TestMain(m *testing.M) {
	if os.Getenv(pidStubEnv) != "" {
		runPIDStub()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func runPIDStub() {
	in := bufio.NewReader(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	answer := func(id json.RawMessage, result string) {
		fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", id, result)
		out.Flush()
	}
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			return
		}
		id := json.RawMessage(gjson.GetBytes(line, "id").Raw)
		switch gjson.GetBytes(line, "method").String() {
		case "initialize":
			answer(id, `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"pid","version":"1"}}`)
		case "tools/list":
			answer(id, `{"tools":[{"name":"pid","inputSchema":{"type":"object"}}]}`)
		case "tools/call":
			time.Sleep(time.Duration(gjson.GetBytes(line, "params.arguments.sleep_ms").Int()) * time.Millisecond)
			if gate := gjson.GetBytes(line, "params.arguments.gate").String(); gate != "" {
				for _, err := os.Stat(gate); err != nil; _, err = os.Stat(gate) {
					time.Sleep(time.Millisecond)
				}
			}
			answer(id, fmt.Sprintf(`{"content":[{"type":"text","text":"%d"}]}`, os.Getpid()))
		default:
			if len(id) > 0 {
				fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"no"}}`+"\n", id)
				out.Flush()
			}
		}
	}
}

type nopHost struct{}

func (nopHost) Request(context.Context, *Upstream, Owner, string, json.RawMessage) (json.RawMessage, error) {
	return nil, errors.New("no client")
}
func (nopHost) Notification(*Upstream, Owner, string, json.RawMessage) {}
func (nopHost) Ready(*Upstream)                                        {}
func (nopHost) ClientCapabilities(*Upstream) json.RawMessage           { return json.RawMessage(`{}`) }

// testCaller is a downstream request of session for principal ("local"
// when empty), of the 2026-07-28 era when stateless.
type testCaller struct {
	session, principal string
	stateless          bool
}

func (c *testCaller) Session() any { return c.session }
func (c *testCaller) Principal() string {
	if c.principal == "" {
		return "local"
	}
	return c.principal
}
func (c *testCaller) Seq() int64 { return 0 }
func (c *testCaller) StatelessMeta() (json.RawMessage, bool) {
	if c.stateless {
		return json.RawMessage(`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`), true
	}
	return nil, false
}

// startPIDUpstream runs the pid stub under opts and waits for it (and a
// pool's processes) to be ready.
func startPIDUpstream(t *testing.T, opts config.ServerOptions, lim config.Limits) *Upstream {
	t.Helper()
	return startPIDUpstreamWith(t, config.ServerConfig{Mcpx: opts}, lim)
}

// startPIDUpstreamWith is startPIDUpstream with cfg's settings (its
// command is the stub's).
func startPIDUpstreamWith(t *testing.T, cfg config.ServerConfig, lim config.Limits) *Upstream {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Command, cfg.Env = exe, map[string]string{pidStubEnv: "1"}
	if err := cfg.Validate("pid"); err != nil {
		t.Fatal(err)
	}
	u := New(Options{Name: "pid", Config: cfg, Limits: lim.WithDefaults(), Log: hclog.NewNullLogger(), Host: nopHost{}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); u.Run(ctx, time.Hour) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	// Ready (calls go to the process) comes before the shared process's
	// tools/list is answered; up, after it: a test that counts the calls
	// in flight must not count that one.
	up := func() bool {
		select {
		case <-u.inst.up:
			return true
		default:
			return false
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for !up() || u.Status().State != StateReady || len(u.Instances().PIDs()) < cfg.PoolSize()-1 {
		if time.Now().After(deadline) {
			t.Fatalf("not ready: %+v, %d instances", u.Status(), len(u.Instances().PIDs()))
		}
		time.Sleep(10 * time.Millisecond)
	}
	return u
}

// callPID calls the pid tool as session and returns the process that answered.
func callPID(ctx context.Context, u *Upstream, session string, sleep time.Duration) (int, error) {
	return callPIDAs(ctx, u, &testCaller{session: session}, sleep)
}

// callPIDAs calls the pid tool as cl and returns the process that answered.
func callPIDAs(ctx context.Context, u *Upstream, cl *testCaller, sleep time.Duration) (int, error) {
	ctx = WithCaller(ctx, cl)
	res, err := u.Call(ctx, "tools/call", json.RawMessage(fmt.Sprintf(`{"name":"pid","arguments":{"sleep_ms":%d}}`, sleep.Milliseconds())))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(gjson.GetBytes(res, "content.0.text").String())
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// TestPerSessionInstances: under instances "per_session" two sessions are
// answered by two processes (neither the shared one), a session keeps
// its own, a third session past limits.max_session_processes gets
// ErrTooManyInstances, and ending a session stops its process and frees
// its place.
func TestPerSessionInstances(t *testing.T) {
	u := startPIDUpstream(t, config.ServerOptions{Instances: config.InstancesPerSession}, config.Limits{MaxSessionProcesses: 2})
	ctx := context.Background()
	shared := u.PID()
	a, err := callPID(ctx, u, "A", 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := callPID(ctx, u, "B", 0)
	if err != nil {
		t.Fatal(err)
	}
	if a == b || a == shared || b == shared {
		t.Fatalf("sessions A and B answered by pids %d and %d (shared %d): want two processes of their own", a, b, shared)
	}
	if again, err := callPID(ctx, u, "A", 0); err != nil || again != a {
		t.Fatalf("session A's second call: pid %d, %v; want %d", again, err, a)
	}
	if got := u.Status().Instances; got != 2 {
		t.Errorf("Status().Instances = %d, want 2", got)
	}
	_, err = callPID(ctx, u, "C", 0)
	if !errors.Is(err, jsonrpc.ErrTooManyInstances) {
		t.Fatalf("a third session past max_session_processes 2: %v, want ErrTooManyInstances", err)
	}
	if rpc := jsonrpc.ToRPCError(err); rpc.Code != jsonrpc.CodeLimitExceeded {
		t.Errorf("its code %d, want %d", rpc.Code, jsonrpc.CodeLimitExceeded)
	}
	u.Instances().EndSession("A")
	deadline := time.Now().Add(5 * time.Second)
	for alive(a) {
		if time.Now().After(deadline) {
			t.Fatalf("session A ended; its process %d still runs", a)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !alive(b) || !alive(shared) {
		t.Fatal("ending session A stopped another process")
	}
	c, err := callPID(ctx, u, "C", 0)
	if err != nil || c == a || c == b || c == shared {
		t.Fatalf("session C after A ended: pid %d, %v; want a new process", c, err)
	}
}

// TestPoolSpreadsCalls: under instances "pool" with pool_size 3,
// concurrent calls to a server that answers one at a time are answered by
// the three processes at once, not queued behind each other.
func TestPoolSpreadsCalls(t *testing.T) {
	u := startPIDUpstream(t, config.ServerOptions{Instances: config.InstancesPool, PoolSize: 3}, config.Limits{})
	const calls, sleep = 6, 400 * time.Millisecond
	var (
		mu   sync.Mutex
		pids = map[int]int{}
		wg   sync.WaitGroup
	)
	start := time.Now()
	for i := 0; i < calls; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pid, err := callPID(context.Background(), u, fmt.Sprint("s", i), sleep)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			pids[pid]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	took := time.Since(start)
	if len(pids) != 3 {
		t.Fatalf("calls answered by %v: want 3 processes", pids)
	}
	for pid, n := range pids {
		if n != 2 {
			t.Errorf("process %d answered %d of %d calls, want 2 (least busy first): %v", pid, n, calls, pids)
		}
	}
	// one process would take calls*sleep = 2.4 s
	if took > calls*sleep/2 {
		t.Errorf("%d calls of %s took %s: not spread", calls, sleep, took)
	}
}

// TestPerUserInstances: under instances "per_user" two principals are
// answered by two processes (neither the shared one); two sessions of
// one principal and its stateless (2026-07-28) requests share its
// process; a third principal past limits.max_user_processes gets
// ErrTooManyInstances (-32014) naming the limit; ending a session stops
// no principal's process.
func TestPerUserInstances(t *testing.T) {
	u := startPIDUpstream(t, config.ServerOptions{Instances: config.InstancesPerUser}, config.Limits{MaxUserProcesses: 2})
	ctx := context.Background()
	shared := u.PID()
	call := func(cl *testCaller) int {
		t.Helper()
		pid, err := callPIDAs(ctx, u, cl, 0)
		if err != nil {
			t.Fatalf("%+v: %v", cl, err)
		}
		return pid
	}
	alice := call(&testCaller{session: "s1", principal: "acme/alice"})
	bob := call(&testCaller{session: "s2", principal: "acme/bob"})
	if alice == bob || alice == shared || bob == shared {
		t.Fatalf("alice and bob answered by pids %d and %d (shared %d): want a process each", alice, bob, shared)
	}
	for _, cl := range []*testCaller{
		{session: "s1", principal: "acme/alice"},
		{session: "s3", principal: "acme/alice"},
		{principal: "acme/alice", stateless: true},
	} {
		if got := call(cl); got != alice {
			t.Errorf("%+v answered by pid %d, want alice's %d", cl, got, alice)
		}
	}
	if got := u.Status().Instances; got != 2 {
		t.Errorf("Status().Instances = %d, want 2", got)
	}
	_, err := callPIDAs(ctx, u, &testCaller{session: "s4", principal: "acme/carol"}, 0)
	const want = "upstream[pid]: mcpx: too many upstream processes: 2 users have a process of this per_user server (limits.max_user_processes); retry when one has had no call for 10m0s (limits.user_process_idle_timeout)"
	if !errors.Is(err, jsonrpc.ErrTooManyInstances) || err.Error() != want {
		t.Fatalf("a third principal past max_user_processes 2: %v\nwant %s", err, want)
	}
	if rpc := jsonrpc.ToRPCError(err); rpc.Code != jsonrpc.CodeLimitExceeded {
		t.Errorf("its code %d, want %d", rpc.Code, jsonrpc.CodeLimitExceeded)
	}
	u.Instances().EndSession("s1")
	if got := call(&testCaller{session: "s3", principal: "acme/alice"}); got != alice || !alive(alice) {
		t.Errorf("after one of alice's sessions ended her call went to pid %d (alive %v), want %d", got, alive(alice), alice)
	}
}

// TestPerUserIdleStop: a per_user process stops once no call has held it
// for limits.user_process_idle_timeout, never under a call that lasts
// longer than that, and its place under max_user_processes is free
// again; the principal's next call starts another.
func TestPerUserIdleStop(t *testing.T) {
	const idle = 300 * time.Millisecond
	u := startPIDUpstream(t, config.ServerOptions{Instances: config.InstancesPerUser}, config.Limits{MaxUserProcesses: 1, UserProcessIdleTimeout: store.Duration(idle)})
	ctx := context.Background()
	alice := &testCaller{session: "s1", principal: "acme/alice"}
	first, err := callPIDAs(ctx, u, alice, 3*idle) // held past the idle timeout
	if err != nil {
		t.Fatalf("a call of 3 idle timeouts: %v", err)
	}
	if again, err := callPIDAs(ctx, u, alice, 0); err != nil || again != first {
		t.Fatalf("the next call at once: pid %d, %v; want %d", again, err, first)
	}
	deadline := time.Now().Add(10 * time.Second)
	for alive(first) || u.Status().Instances != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("alice's process %d still runs (%d instances) 10 s after her last call; idle timeout %s", first, u.Status().Instances, idle)
		}
		time.Sleep(10 * time.Millisecond)
	}
	bob, err := callPIDAs(ctx, u, &testCaller{session: "s2", principal: "acme/bob"}, 0)
	if err != nil || bob == first {
		t.Fatalf("bob after alice's process stopped (max_user_processes 1): pid %d, %v", bob, err)
	}
}

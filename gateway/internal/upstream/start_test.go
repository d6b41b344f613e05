package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
	"github.com/mcpx-dev/mcpx/store"
)

// outcome is what Start's done got.
type outcome struct {
	pid int
	err error
}

// startPID starts a call of the pid stub's tool as session and returns
// where its outcome arrives; done running twice fails t.
func startPID(t *testing.T, ctx context.Context, u *Upstream, session string, sleep time.Duration, pad int) <-chan outcome {
	t.Helper()
	return startPIDArgs(t, ctx, u, session, fmt.Sprintf(`{"sleep_ms":%d,"pad":"%s"}`, sleep.Milliseconds(), strings.Repeat("p", pad)))
}

// startPIDArgs is startPID with the tool's arguments as given.
func startPIDArgs(t *testing.T, ctx context.Context, u *Upstream, session, args string) <-chan outcome {
	t.Helper()
	ch := make(chan outcome, 1)
	var calls atomic.Int32
	params := `{"name":"pid","arguments":` + args + `}`
	u.Start(WithCaller(ctx, &testCaller{session: session}), "tools/call", json.RawMessage(params), func(res json.RawMessage, err error) {
		if calls.Add(1) > 1 {
			t.Error("done ran twice")
			return
		}
		pid, _ := strconv.Atoi(gjson.GetBytes(res, "content.0.text").String())
		ch <- outcome{pid, err}
	})
	return ch
}

func wait(t *testing.T, ch <-chan outcome, within time.Duration) outcome {
	t.Helper()
	select {
	case o := <-ch:
		return o
	case <-time.After(within):
		t.Fatalf("no outcome within %s", within)
		return outcome{}
	}
}

// TestStartAnswers: Start's done gets the answer of the process, and the
// call no longer counts as in flight (busy, callers) once it has.
func TestStartAnswers(t *testing.T) {
	u := startPIDUpstream(t, config.ServerOptions{}, config.Limits{})
	if !u.Starts("tools/call") {
		t.Fatal("Starts is false for a stdio server")
	}
	o := wait(t, startPID(t, context.Background(), u, "A", 0, 0), 10*time.Second)
	if o.err != nil || o.pid != u.PID() {
		t.Fatalf("outcome %+v; want pid %d", o, u.PID())
	}
	if busy := u.inst.primaryBusy.Load(); busy != 0 {
		t.Errorf("%d calls still busy", busy)
	}
	if _, n := u.Callers().Sole(); n != 0 {
		t.Errorf("%d sessions still have calls in flight", n)
	}
}

// TestStartCancelledAndTimedOut: a done context ends a started call at
// once with its error, as Call does; so does the upstream's timeout,
// named as ErrUpstreamTimeout.
func TestStartCancelledAndTimedOut(t *testing.T) {
	u := startPIDUpstreamWith(t, config.ServerConfig{Timeout: store.Duration(300 * time.Millisecond)}, config.Limits{})
	o := wait(t, startPID(t, context.Background(), u, "A", 10*time.Second, 0), 5*time.Second)
	if !errors.Is(o.err, jsonrpc.ErrUpstreamTimeout) {
		t.Fatalf("a call past the timeout: %v, want ErrUpstreamTimeout", o.err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ch := startPID(t, ctx, u, "A", 10*time.Second, 0)
	time.AfterFunc(50*time.Millisecond, cancel)
	if o := wait(t, ch, 5*time.Second); !errors.Is(o.err, context.Canceled) {
		t.Fatalf("a cancelled call: %v, want context.Canceled", o.err)
	}
	if o := wait(t, startPID(t, ctx, u, "A", 0, 0), 5*time.Second); !errors.Is(o.err, context.Canceled) {
		t.Fatalf("a call started with a done context: %v, want context.Canceled", o.err)
	}
}

// TestStartDoesNotWaitForTheServer: while the server reads nothing (it
// answers one request at a time and sleeps in the first), Start returns
// at once even when the requests queued are more than its stdin pipe
// holds; every call is answered once the server reads again.
func TestStartDoesNotWaitForTheServer(t *testing.T) {
	u := startPIDUpstream(t, config.ServerOptions{}, config.Limits{})
	const sleep = 1500 * time.Millisecond
	first := startPID(t, context.Background(), u, "A", sleep, 0)
	began := time.Now()
	var rest []<-chan outcome
	for range 64 {
		rest = append(rest, startPID(t, context.Background(), u, "A", 0, 16<<10)) // 1 MiB in all
	}
	if took := time.Since(began); took > sleep/2 {
		t.Fatalf("64 Starts took %s while the server slept %s: Start waited for it", took, sleep)
	}
	for _, ch := range append(rest, first) {
		if o := wait(t, ch, 20*time.Second); o.err != nil || o.pid != u.PID() {
			t.Fatalf("outcome %+v", o)
		}
	}
}

// TestStartPool: started calls of a pool go to its least busy process,
// as calls do. Every call waits on one gate, opened once all six are
// routed, so none ends (and frees its process) before the last is
// routed however slow the machine.
func TestStartPool(t *testing.T) {
	u := startPIDUpstream(t, config.ServerOptions{Instances: config.InstancesPool, PoolSize: 3}, config.Limits{})
	gate := filepath.Join(t.TempDir(), "gate")
	args, _ := json.Marshal(map[string]string{"gate": gate})
	var chs []<-chan outcome
	for i := range 6 {
		chs = append(chs, startPIDArgs(t, context.Background(), u, fmt.Sprint("s", i), string(args)))
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	pids := map[int]int{}
	for _, ch := range chs {
		o := wait(t, ch, 10*time.Second)
		if o.err != nil {
			t.Fatal(o.err)
		}
		pids[o.pid]++
	}
	if len(pids) != 3 {
		t.Fatalf("calls answered by %v: want 3 processes", pids)
	}
}

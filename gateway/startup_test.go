package gateway

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/gateway/internal/subscriptions"
	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

// syncBuffer is a log sink the gateway's goroutines may write at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startGateway is newGatewayWith for the start-up tests: the log goes to
// log, and a starting upstream says so every logEvery.
func startGateway(t *testing.T, o Options, log *syncBuffer, logEvery time.Duration) *Gateway {
	t.Helper()
	o.Engine = engine.Options{Store: memstore.New(memstore.Config{})}
	o.Logger = hclog.New(&hclog.LoggerOptions{Name: "test", Level: hclog.Debug, Output: log})
	g, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	g.startLogEvery = logEvery
	g.Start(context.Background())
	t.Cleanup(func() {
		_ = g.Close(context.Background())
		if t.Failed() {
			t.Logf("gateway log:\n%s", log.String())
		}
	})
	return g
}

// slowStub is the stub, sleeping sleep before it serves as a cold "go
// run" compiles first.
func slowStub(t *testing.T, sleep time.Duration) config.ServerConfig {
	c := stubServer(t)
	c.Env = map[string]string{stubEnv: "1", stubSleepEnv: sleep.String(), "GORACE": "atexit_sleep_ms=0"}
	return c
}

// TestSlowUpstreamWaitedForPastStartWait is the quickstart's first run on
// a new machine: the upstream takes longer to start than StartWait (here
// lowered to 100 ms; "go run" compiling took 33-223 s against 15 s). The
// client's initialize waits for it, as its start-up timeout allows, the
// log says so meanwhile, and the first tools/list has its tools (before,
// it had none and tools/call answered "unknown tool").
func TestSlowUpstreamWaitedForPastStartWait(t *testing.T) {
	const sleep = 1500 * time.Millisecond
	var log syncBuffer
	g := startGateway(t, Options{Servers: map[string]config.ServerConfig{"slow": slowStub(t, sleep)}, StartWait: 100 * time.Millisecond}, &log, 300*time.Millisecond)
	start := time.Now()
	c := connect(t, g)
	if took := time.Since(start); took < sleep-200*time.Millisecond {
		t.Errorf("initialize answered after %s, before the upstream could have started (%s)", took, sleep)
	}
	tools := c.result("tools/list", "{}").Get("tools.#.name").String()
	if !strings.Contains(tools, `"echo"`) {
		t.Fatalf("tools/list after initialize: %s, want the slow upstream's tools", tools)
	}
	res := c.result("tools/call", toolCall("echo", `{"v":"hi"}`))
	if res.Get("isError").Bool() {
		t.Fatalf("echo: %s", res.Raw)
	}
	want := "waiting for upstream slow to start ("
	if l := log.String(); !strings.Contains(l, want) || !strings.Contains(l, "s so far, up to 120 s)") {
		t.Errorf("log lacks %q with the start-up timeout:\n%s", want, l)
	}
}

// TestLateUpstreamAnnouncesListChanged: an upstream whose first start
// outlasts its start-up timeout comes up on the retry, after the client
// has initialized and listed nothing; the client is told
// notifications/tools/list_changed (and resources/list_changed, as the
// upstream has resources), and the next tools/list has the tools.
func TestLateUpstreamAnnouncesListChanged(t *testing.T) {
	t.Parallel()
	cfg := resourceStub(t, "late")
	cfg.Env[stubSleepEnv] = "10s"
	cfg.Env[stubSleepOnceEnv] = filepath.Join(t.TempDir(), "slept")
	cfg.Env["GORACE"] = "atexit_sleep_ms=0"
	cfg.Mcpx.StartupTimeout = store.Duration(500 * time.Millisecond)
	var log syncBuffer
	g := startGateway(t, Options{
		Servers:   map[string]config.ServerConfig{"late": cfg},
		StartWait: 100 * time.Millisecond,
		Limits:    config.Limits{StopGrace: store.Duration(100 * time.Millisecond), KillGrace: store.Duration(time.Second)},
	}, &log, time.Hour)
	c := connect(t, g)
	// Before the upstream is up only the artifact tools are listed.
	if tools := c.result("tools/list", "{}").Get("tools.#.name").String(); tools != `["`+config.DefaultQueryToolName+`","`+config.DefaultSearchToolName+`"]` {
		t.Fatalf("tools/list before the upstream is up lists %s, want the artifact tools only (the test's premise)", tools)
	}
	seen := map[string]bool{}
	deadline := time.After(20 * time.Second)
	for !seen[subscriptions.NotificationToolsListChanged] || !seen[subscriptions.NotificationResourcesListChange] {
		select {
		case n := <-c.notes:
			seen[gjson.GetBytes(n, "method").String()] = true
		case <-deadline:
			t.Fatalf("notifications seen: %v; want tools and resources list_changed", seen)
		}
	}
	tools := c.result("tools/list", "{}").Get("tools.#.name").String()
	if !strings.Contains(tools, `"echo"`) {
		t.Fatalf("tools/list after list_changed: %s, want the late upstream's tools", tools)
	}
	if !strings.Contains(log.String(), "initialize: no answer within the timeout") {
		t.Errorf("the first start did not fail on the start-up timeout (the test's premise):\n%s", log.String())
	}
}

// TestStartupTimeoutDefaults: a stdio upstream gets at least
// DefaultStdioStartupTimeout, a remote one its request timeout; the
// setting wins over both.
func TestStartupTimeoutDefaults(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  config.ServerConfig
		want time.Duration
	}{
		{"stdio", config.ServerConfig{Command: "x"}, config.DefaultStdioStartupTimeout},
		{"stdio with a longer timeout", config.ServerConfig{Command: "x", Timeout: store.Duration(5 * time.Minute)}, 5 * time.Minute},
		{"remote", config.ServerConfig{URL: "http://127.0.0.1:1/mcp"}, config.DefaultTimeout},
		{"set", config.ServerConfig{Command: "x", Mcpx: config.ServerOptions{StartupTimeout: store.Duration(10 * time.Second)}}, 10 * time.Second},
	} {
		if got := tc.cfg.StartupTimeout(); got != tc.want {
			t.Errorf("%s: startup timeout %s, want %s", tc.name, got, tc.want)
		}
	}
	bad := config.ServerConfig{Command: "x", Mcpx: config.ServerOptions{StartupTimeout: store.Duration(-time.Second)}}
	if err := bad.Validate("x"); err == nil || !strings.Contains(err.Error(), "mcpx.startup_timeout") {
		t.Errorf("negative startup_timeout: %v", err)
	}
}

// TestWaitForFirstClientIsNotSlow: an upstream whose initialize waits
// for the first client's capabilities started at once; the wait is no
// slowness of the server's. The log says so at debug, not "waiting for
// upstream to start (N s so far)" at warn past StartWait, and once the
// client came the start-up is counted from its arrival.
func TestWaitForFirstClientIsNotSlow(t *testing.T) {
	var log syncBuffer
	g := startGateway(t, Options{Servers: map[string]config.ServerConfig{"quick": stubServer(t)}, StartWait: 100 * time.Millisecond, WaitForClientCapabilities: true}, &log, 100*time.Millisecond)
	const said = "upstream quick started; its initialize waits for the first client"
	deadline := time.Now().Add(20 * time.Second)
	for strings.Count(log.String(), said) < 5 {
		if time.Now().After(deadline) {
			t.Fatalf("log lacks %q five times:\n%s", said, log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	c := connect(t, g)
	if tools := c.result("tools/list", "{}").Get("tools.#.name").String(); !strings.Contains(tools, `"echo"`) {
		t.Fatalf("tools/list: %s", tools)
	}
	for _, line := range strings.Split(log.String(), "\n") {
		if strings.Contains(line, "waiting for upstream quick to start") {
			t.Errorf("the wait for the first client logged as a slow start: %s", line)
		}
	}
}

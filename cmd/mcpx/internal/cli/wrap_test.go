package cli

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	gatewayconfig "github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/internal/syncbuf"
	"github.com/mcpx-dev/mcpx/store"
)

// wrapStubEnv makes the test binary a small stdio MCP server (runWrapStub)
// for the wrap tests; wrap passes its whole environment on.
const wrapStubEnv = "MCPX_WRAP_TEST_STUB"

func TestMain(m *testing.M) {
	if os.Getenv(uiUpstreamEnv) == "1" {
		runUIUpstream()
		os.Exit(0)
	}
	if os.Getenv(mcpxMainEnv) == "1" {
		os.Exit(Run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	if os.Getenv(wrapStubEnv) == "1" {
		runWrapStub()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runWrapStub serves two tools: hang (never answers) and env (answers
// the value of MCPX_WRAP_TEST_VALUE).
func runWrapStub() {
	in := bufio.NewReader(os.Stdin)
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			return
		}
		id := gjson.GetBytes(line, "id").Raw
		answer := func(res string) { os.Stdout.WriteString(`{"jsonrpc":"2.0","id":` + id + `,"result":` + res + "}\n") }
		switch gjson.GetBytes(line, "method").String() {
		case "initialize":
			answer(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"wrapstub","version":"1"}}`)
		case "tools/list":
			answer(`{"tools":[{"name":"hang","inputSchema":{"type":"object"}},{"name":"env","inputSchema":{"type":"object"}}]}`)
		case "tools/call":
			if gjson.GetBytes(line, "params.name").String() == "env" {
				answer(`{"content":[{"type":"text","text":"value=` + os.Getenv("MCPX_WRAP_TEST_VALUE") + `"}]}`)
			}
		default:
			if id != "" {
				answer(`{}`)
			}
		}
	}
}

// wrapSession runs "mcpx wrap" with args and initializes it; call sends
// a request and returns its response.
func wrapSession(t *testing.T, args ...string) (call func(method, params string) gjson.Result, stderr *syncbuf.Buffer) {
	t.Helper()
	t.Setenv(wrapStubEnv, "1")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	stderr = &syncbuf.Buffer{}
	done := make(chan int, 1)
	full := append(append([]string{"wrap", "--store", t.TempDir()}, args...), "--", exe, "-test.run=^$")
	go func() { done <- Run(full, inR, outW, stderr); outW.Close() }()
	t.Cleanup(func() {
		inW.Close()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Errorf("wrap did not exit after stdin closed")
		}
	})
	lines := bufio.NewReader(outR)
	next := 0
	call = func(method, params string) gjson.Result {
		t.Helper()
		next++
		id := next
		msg := `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"` + method + `","params":` + params + "}\n"
		if _, err := io.WriteString(inW, msg); err != nil {
			t.Fatal(err)
		}
		for {
			line, err := lines.ReadBytes('\n')
			if err != nil {
				t.Fatalf("%s: %v; stderr:\n%s", method, err, stderr.String())
			}
			if gjson.GetBytes(line, "id").Int() == int64(id) {
				return gjson.ParseBytes(line)
			}
		}
	}
	call("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)
	io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	return call, stderr
}

// TestWrapNameAndTimeout: --name names the server (not "gateway", the
// test binary's base name) and --timeout bounds its calls (a call that
// took 93 s failed at wrap's fixed 60 s). The call may not fail before
// 400 ms; after, the bound is the default timeout it replaces, which no
// load stretches 400 ms to.
func TestWrapNameAndTimeout(t *testing.T) {
	isolate(t)
	call, _ := wrapSession(t, "--name", "devtools", "--timeout", "400ms")
	start := time.Now()
	res := call("tools/call", `{"name":"hang","arguments":{}}`)
	took := time.Since(start)
	if !strings.Contains(res.Raw, `on devtools`) || !strings.Contains(res.Raw, "timeout") {
		t.Fatalf("hang through wrap --name devtools --timeout 400ms: %s", res.Raw)
	}
	if took < 400*time.Millisecond || took >= gatewayconfig.DefaultTimeout {
		t.Errorf("the call failed after %s, want 400ms or a little more", took)
	}
}

// TestWrapConfigEntry: with --config, the mcpServers entry named --name
// gives the wrapped command its env and timeout; --timeout wins over the
// entry's.
func TestWrapConfigEntry(t *testing.T) {
	isolate(t)
	cfg := filepath.Join(t.TempDir(), "mcpx.json")
	if err := os.WriteFile(cfg, []byte(`{"mcpServers": {"devtools": {"command": "ignored", "timeout": "300ms", "env": {"MCPX_WRAP_TEST_VALUE": "from-config"}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	call, _ := wrapSession(t, "--name", "devtools", "--config", cfg)
	if got := call("tools/call", `{"name":"env","arguments":{}}`).Get("result.content.0.text").String(); got != "value=from-config" {
		t.Errorf("env tool: %q, want the entry's env (value=from-config)", got)
	}
	start := time.Now()
	res := call("tools/call", `{"name":"hang","arguments":{}}`)
	if took := time.Since(start); !strings.Contains(res.Raw, "timeout") || took < 300*time.Millisecond || took >= gatewayconfig.DefaultTimeout {
		t.Errorf("hang with the entry's 300ms timeout: %s after %s", res.Raw, took)
	}

	// an entry of another name is ignored, and said to be
	call, stderr := wrapSession(t, "--name", "other", "--config", cfg)
	if got := call("tools/call", `{"name":"env","arguments":{}}`).Get("result.content.0.text").String(); got != "value=" {
		t.Errorf("env tool of an unmatched name: %q, want no value", got)
	}
	if !strings.Contains(stderr.String(), "no entry for the wrapped server") {
		t.Errorf("no warning that the config has no entry named other:\n%s", stderr.String())
	}
}

// TestWrapServer: the entry named NAME gives env, cwd, timeout and the
// mcpx section; the command, InheritEnv and --timeout are wrap's.
func TestWrapServer(t *testing.T) {
	t.Parallel()
	rt := true
	entries := map[string]gatewayconfig.ServerConfig{"chrome": {
		Command: "npx", Args: []string{"old"}, Env: map[string]string{"K": "v"}, Cwd: "/w",
		Timeout: store.Duration(2 * time.Minute), Disabled: true,
		Mcpx: gatewayconfig.ServerOptions{ResourceTools: &rt, StartupTimeout: store.Duration(time.Minute)},
	}}
	got, found := wrapServer("chrome", []string{"node", "srv.js"}, entries, 0)
	want := gatewayconfig.ServerConfig{Command: "node", Args: []string{"srv.js"}, Env: map[string]string{"K": "v"}, Cwd: "/w",
		Timeout: store.Duration(2 * time.Minute), InheritEnv: true, Mcpx: entries["chrome"].Mcpx}
	if !found || !reflect.DeepEqual(got, want) {
		t.Errorf("wrapServer with an entry: %+v (found %v), want %+v", got, found, want)
	}
	got, _ = wrapServer("chrome", []string{"node"}, entries, 93*time.Second)
	if time.Duration(got.Timeout) != 93*time.Second {
		t.Errorf("--timeout 93s: timeout %s", got.Timeout)
	}
	got, found = wrapServer("x", []string{"node"}, entries, 0)
	if found || !reflect.DeepEqual(got, gatewayconfig.ServerConfig{Command: "node", Args: []string{}, InheritEnv: true}) {
		t.Errorf("wrapServer without an entry: %+v (found %v)", got, found)
	}
}

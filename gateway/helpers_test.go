package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	_ "github.com/mcpx-dev/mcpx/layers"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

// stubEnv makes the test binary act as a small stdio MCP server (see
// runStub): the upstream of the failure tests.
const stubEnv = "MCPX_GATEWAY_TEST_STUB"

func TestMain(m *testing.M) {
	if os.Getenv(stubEnv) != "" {
		runStub()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runStub serves tools whose behaviour the failure tests need: echo,
// crash (exits mid-call), hang (never answers), badjson (answers a
// broken line), flood (writes 1 MiB to stderr first), image (a PNG).
func runStub() {
	in := bufio.NewReader(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	write := func(s string) { out.WriteString(s + "\n"); out.Flush() }
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			return
		}
		id := gjson.GetBytes(line, "id").Raw
		switch gjson.GetBytes(line, "method").String() {
		case "initialize":
			write(`{"jsonrpc":"2.0","id":` + id + `,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"stub","version":"1"}}}`)
		case "tools/list":
			write(`{"jsonrpc":"2.0","id":` + id + `,"result":{"tools":[` +
				`{"name":"echo","inputSchema":{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","title":"Echo","properties":{"v":{"anyOf":[{"type":"string"},{"type":"null"}]}}},"outputSchema":{"type":"object"}},` +
				`{"name":"whoami","inputSchema":{"type":"object","properties":{"username":{"type":"string"}}}},` +
				`{"name":"crash","inputSchema":{"type":"object"}},{"name":"hang","inputSchema":{"type":"object"}},` +
				`{"name":"badjson","inputSchema":{"type":"object"}},{"name":"flood","inputSchema":{"type":"object"}},` +
				`{"name":"image","inputSchema":{"type":"object"}}]}}`)
		case "tools/call":
			name := gjson.GetBytes(line, "params.name").String()
			args := gjson.GetBytes(line, "params.arguments").Raw
			if args == "" {
				args = "{}"
			}
			switch name {
			case "echo", "whoami":
				text, _ := json.Marshal(args)
				write(`{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":` + string(text) + `,"annotations":{"audience":["user"]}}],"structuredContent":` + args + `,"_meta":{"k":"v"}}}`)
			case "crash":
				os.Stderr.WriteString("stub: crashing on purpose\n")
				os.Exit(3)
			case "hang":
			case "badjson":
				write(`{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"unterminated`)
			case "flood":
				chunk := strings.Repeat("x", 1023) + "\n"
				for range 1024 {
					os.Stderr.WriteString(chunk)
				}
				write(`{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"flooded"}]}}`)
			case "image":
				write(`{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"image","mimeType":"image/png","data":"` + pngB64 + `"}]}}`)
			}
		case "ping":
			write(`{"jsonrpc":"2.0","id":` + id + `,"result":{}}`)
		}
	}
}

// pngB64 is a 1x1 PNG.
const pngB64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="

// stubServer is the ServerConfig that runs the stub.
func stubServer(t testing.TB) ServerConfig {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return ServerConfig{Command: exe, Args: []string{"-test.run=^$"}, Env: map[string]string{stubEnv: "1"}}
}

// newTestGateway starts a gateway over servers with a memory store.
func newTestGateway(t testing.TB, servers map[string]ServerConfig, eo engine.Options) *Gateway {
	t.Helper()
	if eo.Store == nil {
		eo.Store = memstore.New(memstore.NewConfig())
	}
	log := hclog.NewNullLogger()
	if testing.Verbose() {
		log = hclog.New(&hclog.LoggerOptions{Name: "test", Level: hclog.Debug, Output: os.Stderr})
	}
	g, err := New(Options{Servers: servers, Engine: eo, Logger: log, StartWait: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	g.Start(context.Background())
	t.Cleanup(func() { _ = g.Close(context.Background()) })
	return g
}

// client is a raw JSON-RPC client of ServeStdio, in process.
type client struct {
	t     testing.TB
	w     io.WriteCloser
	mu    sync.Mutex
	resp  map[string]chan json.RawMessage
	notes chan json.RawMessage
	next  int
	done  chan error
}

// connect serves a new stdio session of g and initializes it.
func connect(t testing.TB, g *Gateway) *client {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &client{t: t, w: inW, resp: map[string]chan json.RawMessage{}, notes: make(chan json.RawMessage, 4096), done: make(chan error, 1)}
	go func() {
		err := g.ServeStdio(context.Background(), inR, outW)
		outW.Close()
		c.done <- err
	}()
	go func() {
		br := bufio.NewReaderSize(outR, 1<<20)
		for {
			line, err := br.ReadBytes('\n')
			if err != nil {
				return
			}
			line = bytes.TrimSpace(line)
			if gjson.GetBytes(line, "method").Exists() {
				select {
				case c.notes <- line:
				default:
				}
				continue
			}
			key := gjson.GetBytes(line, "id").Raw
			c.mu.Lock()
			ch := c.resp[key]
			delete(c.resp, key)
			c.mu.Unlock()
			if ch != nil {
				ch <- line
			}
		}
	}()
	t.Cleanup(func() { inW.Close() })
	res := c.call("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"1"}}`)
	if e := gjson.GetBytes(res, "error"); e.Exists() {
		t.Fatalf("initialize: %s", e.Raw)
	}
	c.notify("notifications/initialized", "")
	return c
}

func (c *client) send(line string) {
	if _, err := io.WriteString(c.w, line+"\n"); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

func (c *client) notify(method, params string) {
	msg := `{"jsonrpc":"2.0","method":"` + method + `"`
	if params != "" {
		msg += `,"params":` + params
	}
	c.send(msg + "}")
}

// start sends a request and returns its id and the channel of its response.
func (c *client) start(method, params string) (string, chan json.RawMessage) {
	c.mu.Lock()
	c.next++
	id := strconv.Itoa(c.next)
	ch := make(chan json.RawMessage, 1)
	c.resp[id] = ch
	c.mu.Unlock()
	msg := `{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `"`
	if params != "" {
		msg += `,"params":` + params
	}
	c.send(msg + "}")
	return id, ch
}

// call sends a request and waits (bounded) for the whole response.
func (c *client) call(method, params string) json.RawMessage {
	c.t.Helper()
	_, ch := c.start(method, params)
	select {
	case r := <-ch:
		return r
	case <-time.After(60 * time.Second):
		c.t.Fatalf("%s: no response in 60s", method)
		return nil
	}
}

// result calls and fails the test on an error response.
func (c *client) result(method, params string) gjson.Result {
	c.t.Helper()
	r := c.call(method, params)
	if e := gjson.GetBytes(r, "error"); e.Exists() {
		c.t.Fatalf("%s %s: %s", method, params, e.Raw)
	}
	return gjson.GetBytes(r, "result")
}

// waitNote waits (bounded) for a notification matching method.
func (c *client) waitNote(method string, d time.Duration) (gjson.Result, bool) {
	deadline := time.After(d)
	for {
		select {
		case n := <-c.notes:
			if gjson.GetBytes(n, "method").String() == method {
				return gjson.GetBytes(n, "params"), true
			}
		case <-deadline:
			return gjson.Result{}, false
		}
	}
}

func toolCall(name, args string) string {
	if args == "" {
		args = "{}"
	}
	return fmt.Sprintf(`{"name":%q,"arguments":%s}`, name, args)
}

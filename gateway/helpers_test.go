package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
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
	"github.com/mcpx-dev/mcpx/gateway/config"
	_ "github.com/mcpx-dev/mcpx/layers"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

// stubEnv makes the test binary act as a small stdio MCP server (see
// runStub): the upstream of the failure tests.
const stubEnv = "MCPX_GATEWAY_TEST_STUB"

func TestMain(m *testing.M) {
	sleepFirst() // startup_stub_test.go
	switch os.Getenv(stubEnv) {
	case stubChild:
		runChildStub()
		os.Exit(0)
	case stubFamily:
		startFamilyChild()
	}
	if os.Getenv(stubEnv) == stubAsker {
		runAskerStub()
		os.Exit(0)
	}
	if os.Getenv(stubEnv) == stubModern {
		runModernStub()
		os.Exit(0)
	}
	if os.Getenv(stubEnv) == stubMemo {
		runMemoStub()
		os.Exit(0)
	}
	if os.Getenv(stubEnv) != "" {
		runStub()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Stub modes, the values of stubEnv: "1" serves tools only; "resources"
// also declares resources (two pages of resources and of templates, a
// URI every such stub shares, subscriptions). stubNameEnv names the stub
// in its URIs and texts.
const (
	stubResources = "resources"
	stubNameEnv   = "MCPX_GATEWAY_TEST_STUB_NAME"
)

// runStub serves tools whose behaviour the failure tests need: echo,
// whoami (declares "username"), crash (exits mid-call), hang (never
// answers; says "stub: hanging" on stderr), badjson (answers a broken line), flood (writes 1 MiB to
// stderr first), image (a PNG), progress (steps progress notifications
// for the call's token, then answers), log (a notifications/message
// first), grow (adds the tool "extra" and announces tools/list_changed),
// touch (announces resources/updated for its "uri"), big (an image of
// "bytes" bytes).
func runStub() {
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriterSize(os.Stdout, 1<<20)
	write := func(s string) { out.WriteString(s + "\n"); out.Flush() }
	resources := os.Getenv(stubEnv) == stubResources
	name := os.Getenv(stubNameEnv)
	if name == "" {
		name = "stub"
	}
	grown := false
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			return
		}
		id := gjson.GetBytes(line, "id").Raw
		result := func(res string) { write(`{"jsonrpc":"2.0","id":` + id + `,"result":` + res + `}`) }
		switch gjson.GetBytes(line, "method").String() {
		case "initialize":
			caps := `{"tools":{"listChanged":true},"logging":{}}`
			if resources {
				caps = `{"tools":{"listChanged":true},"logging":{},"resources":{"subscribe":true,"listChanged":true}}`
			}
			result(`{"protocolVersion":"2025-11-25","capabilities":` + caps + `,"serverInfo":{"name":"stub","version":"1"}}`)
		case "tools/list":
			extra := ""
			if grown {
				extra = `,{"name":"extra","inputSchema":{"type":"object"}}`
			}
			result(`{"tools":[` +
				`{"name":"echo","inputSchema":{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","title":"Echo","properties":{"v":{"anyOf":[{"type":"string"},{"type":"null"}]}}},"outputSchema":{"type":"object"}},` +
				`{"name":"whoami","inputSchema":{"type":"object","properties":{"username":{"type":"string"}}}},` +
				`{"name":"crash","inputSchema":{"type":"object"}},{"name":"hang","inputSchema":{"type":"object"}},` +
				`{"name":"badjson","inputSchema":{"type":"object"}},{"name":"flood","inputSchema":{"type":"object"}},` +
				`{"name":"image","inputSchema":{"type":"object"}},{"name":"progress","inputSchema":{"type":"object"}},` +
				`{"name":"log","inputSchema":{"type":"object"}},{"name":"grow","inputSchema":{"type":"object"}},` +
				`{"name":"touch","inputSchema":{"type":"object"}},{"name":"big","inputSchema":{"type":"object"}},` +
				`{"name":"env","inputSchema":{"type":"object"}},{"name":"huge","inputSchema":{"type":"object"}}` + extra + `]}`)
		case "tools/call":
			tool := gjson.GetBytes(line, "params.name").String()
			args := gjson.GetBytes(line, "params.arguments").Raw
			if args == "" {
				args = "{}"
			}
			switch tool {
			case "echo", "whoami", "extra":
				text, _ := json.Marshal(args)
				result(`{"content":[{"type":"text","text":` + string(text) + `,"annotations":{"audience":["user"]}}],"structuredContent":` + args + `,"_meta":{"k":"v"}}`)
			case "crash":
				os.Stderr.WriteString("stub: crashing on purpose\n")
				os.Exit(3)
			case "hang":
				os.Stderr.WriteString("stub: hanging\n") // tests wait for it: the call has arrived
			case "badjson":
				write(`{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"unterminated`)
			case "flood":
				chunk := strings.Repeat("x", 1023) + "\n"
				for range 1024 {
					os.Stderr.WriteString(chunk)
				}
				result(`{"content":[{"type":"text","text":"flooded"}]}`)
			case "image":
				result(`{"content":[{"type":"image","mimeType":"image/png","data":"` + pngB64 + `"}]}`)
			case "progress":
				tok := gjson.GetBytes(line, "params._meta.progressToken").Raw
				steps := int(gjson.Get(args, "steps").Int())
				delay := time.Duration(gjson.Get(args, "delay_ms").Int()) * time.Millisecond
				for i := 1; i <= steps && tok != ""; i++ {
					write(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%s,"progress":%d,"total":%d,"message":"step %d"}}`, tok, i, steps, i))
					time.Sleep(delay)
				}
				result(fmt.Sprintf(`{"content":[{"type":"text","text":"done in %d steps"}]}`, steps))
			case "log":
				write(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"warning","data":{"note":"from the stub"}}}`)
				result(`{"content":[{"type":"text","text":"logged"}]}`)
			case "grow":
				grown = true
				write(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
				result(`{"content":[{"type":"text","text":"grown"}]}`)
			case "touch":
				uri, _ := json.Marshal(gjson.Get(args, "uri").String())
				write(`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":` + string(uri) + `}}`)
				result(`{"content":[{"type":"text","text":"touched"}]}`)
			case "env":
				env, _ := json.Marshal(os.Environ())
				result(`{"content":[{"type":"text","text":"env"}],"structuredContent":{"env":` + string(env) + `}}`)
			case "huge":
				// an answer of "bytes" bytes on one line
				n := int(gjson.Get(args, "bytes").Int())
				out.WriteString(`{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"`)
				chunk := strings.Repeat("x", 64<<10)
				for n > 0 {
					out.WriteString(chunk[:min(n, len(chunk))])
					n -= len(chunk)
				}
				write(`"}]}}`)
			case "big":
				result(`{"content":[{"type":"image","mimeType":"image/png","data":"` + bigImageB64(int(gjson.Get(args, "bytes").Int())) + `"}]}`)
			}
		case "resources/list":
			switch gjson.GetBytes(line, "params.cursor").String() {
			case "":
				result(`{"resources":[{"uri":"stub://` + name + `/r1","name":"r1 of ` + name + `","mimeType":"text/plain"},{"uri":"shared://readme","name":"readme of ` + name + `","mimeType":"text/plain"}],"nextCursor":"p2"}`)
			default:
				result(`{"resources":[{"uri":"stub://` + name + `/r2","name":"r2 of ` + name + `","mimeType":"text/plain"}]}`)
			}
		case "resources/templates/list":
			switch gjson.GetBytes(line, "params.cursor").String() {
			case "":
				result(`{"resourceTemplates":[{"uriTemplate":"stub://` + name + `/t1/{x}","name":"t1 of ` + name + `"}],"nextCursor":"p2"}`)
			default:
				result(`{"resourceTemplates":[{"uriTemplate":"stub://` + name + `/t2/{x}","name":"t2 of ` + name + `"}]}`)
			}
		case "resources/read":
			uri := gjson.GetBytes(line, "params.uri").String()
			text, _ := json.Marshal("from " + name + ": " + uri)
			quri, _ := json.Marshal(uri)
			result(`{"contents":[{"uri":` + string(quri) + `,"mimeType":"text/plain","text":` + string(text) + `}]}`)
		case "resources/subscribe", "resources/unsubscribe", "logging/setLevel":
			result(`{}`)
		case "ping":
			result(`{}`)
		default: // a request it does not serve (server/discover: the stub is of the 2025-11-25 era)
			if id := gjson.GetBytes(line, "id").Raw; id != "" {
				write(`{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32601,"message":"method not found"}}`)
			}
		}
	}
}

// bigImageB64 is the base64 of an n-byte "PNG": the PNG signature, then
// bytes that do not compress.
func bigImageB64(n int) string {
	b := make([]byte, max(n, 8))
	var x uint64 = 0x9E3779B97F4A7C15
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	copy(b, "\x89PNG\r\n\x1a\n")
	return base64.StdEncoding.EncodeToString(b)
}

// pngB64 is a 1x1 PNG.
const pngB64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="

// stubServer is the ServerConfig that runs the stub.
func stubServer(t testing.TB) config.ServerConfig {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return config.ServerConfig{Command: exe, Args: []string{"-test.run=^$"}, Env: map[string]string{stubEnv: "1"}}
}

// resourceStub is a stub that also serves resources, named name in its
// URIs.
func resourceStub(t testing.TB, name string) config.ServerConfig {
	c := stubServer(t)
	c.Env = map[string]string{stubEnv: stubResources, stubNameEnv: name}
	return c
}

// newTestGateway starts a gateway over servers with a memory store.
func newTestGateway(t testing.TB, servers map[string]config.ServerConfig, eo engine.Options) *Gateway {
	t.Helper()
	return newGatewayWith(t, Options{Servers: servers, Engine: eo})
}

// newGatewayWith starts a gateway with o, filling in a memory store, a
// logger (to stderr with -v) and a generous StartWait.
func newGatewayWith(t testing.TB, o Options) *Gateway {
	t.Helper()
	if o.Engine.Store == nil {
		o.Engine.Store = memstore.New(memstore.Config{})
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
		if testing.Verbose() {
			o.Logger = hclog.New(&hclog.LoggerOptions{Name: "test", Level: hclog.Debug, Output: os.Stderr})
		}
	}
	if o.StartWait == 0 {
		o.StartWait = 30 * time.Second
	}
	g, err := New(o)
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
	return connectWith(t, g, "{}")
}

// connectWith is connect with the client capabilities caps.
func connectWith(t testing.TB, g *Gateway, caps string) *client {
	t.Helper()
	c := connectStateless(t, g)
	res := c.call("initialize", `{"protocolVersion":"2025-11-25","capabilities":`+caps+`,"clientInfo":{"name":"test","version":"1"}}`)
	if e := gjson.GetBytes(res, "error"); e.Exists() {
		t.Fatalf("initialize: %s", e.Raw)
	}
	c.notify("notifications/initialized", "")
	return c
}

// connectStateless serves a new stdio connection of g without
// initialize, as a 2026-07-28 client has it.
func connectStateless(t testing.TB, g *Gateway) *client {
	t.Helper()
	// OS pipes, as an MCP client's stdio: writes land in the kernel's
	// buffer instead of waiting for the gateway to read them.
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &client{t: t, w: inW, resp: map[string]chan json.RawMessage{}, notes: make(chan json.RawMessage, 4096), done: make(chan error, 1)}
	go func() {
		err := g.ServeStdio(context.Background(), inR, outW)
		outW.Close()
		inR.Close()
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

// isResponse reports whether a JSON-RPC message is a response.
func isResponse(b []byte) bool {
	return gjson.GetBytes(b, "id").Exists() && !gjson.GetBytes(b, "method").Exists()
}

// quote is s as a JSON string.
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func toolCall(name, args string) string {
	if args == "" {
		args = "{}"
	}
	return fmt.Sprintf(`{"name":%q,"arguments":%s}`, name, args)
}

// stubRequest is one message a test stub read, with the means to answer.
type stubRequest struct {
	line  []byte
	id    string       // the request's id; "" for a notification
	write func(string) // writes one line to the gateway
}

func (r stubRequest) method() string { return gjson.GetBytes(r.line, "method").String() }

// result answers the request with res.
func (r stubRequest) result(res string) {
	r.write(`{"jsonrpc":"2.0","id":` + r.id + `,"result":` + res + `}`)
}

// notFound answers a request with -32601; a notification gets nothing.
func (r stubRequest) notFound() {
	if r.id != "" {
		r.write(`{"jsonrpc":"2.0","id":` + r.id + `,"error":{"code":-32601,"message":"method not found"}}`)
	}
}

// serveStub hands handle each line of stdin until it ends: the loop of a
// stdio test stub.
func serveStub(handle func(r stubRequest)) {
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriterSize(os.Stdout, 1<<20)
	write := func(s string) { out.WriteString(s + "\n"); out.Flush() }
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			return
		}
		handle(stubRequest{line: line, id: gjson.GetBytes(line, "id").Raw, write: write})
	}
}

package gateway

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway/config"
)

// serveProc is a running "mcpx serve --listen 127.0.0.1:0".
type serveProc struct {
	url    string // http://127.0.0.1:PORT/mcp
	mu     sync.Mutex
	stderr bytes.Buffer
}

func (p *serveProc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

var listenLine = regexp.MustCompile(`MCP at (http://127\.0\.0\.1:\d+/mcp)`)

// startServe runs the CLI's serve command with config on a free loopback
// port and returns once it listens.
func startServe(t *testing.T, config string) *serveProc {
	t.Helper()
	mcpx := buildMCPX(t)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "mcpx.json")
	if err := os.WriteFile(cfgPath, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(mcpx, "serve", "--config", cfgPath, "--listen", "127.0.0.1:0", "--store", filepath.Join(dir, "store"))
	cmd.Env = append(os.Environ(), "MCPX_LOG_LEVEL=debug")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &serveProc{}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.stderr.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			if m := listenLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("mcpx serve stderr:\n%s", p.log())
		}
	})
	select {
	case p.url = <-found:
	case <-time.After(60 * time.Second):
		t.Fatalf("mcpx serve did not listen in 60s:\n%s", p.log())
	}
	return p
}

// httpClient talks streamable HTTP to one MCP endpoint.
type httpClient struct {
	t       *testing.T
	url     string
	token   string
	origin  string
	session string
	next    int
	hc      *http.Client
}

func (c *httpClient) request(method, body string, hdr map[string]string) *http.Response {
	c.t.Helper()
	req, err := http.NewRequest(method, c.url, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.origin != "" {
		req.Header.Set("Origin", c.origin)
	}
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, c.url, err)
	}
	return resp
}

// rpc posts a request and returns its JSON-RPC response (from a JSON body
// or the last event of an SSE stream).
func (c *httpClient) rpc(method, params string) gjson.Result {
	c.t.Helper()
	c.next++
	msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q`, c.next, method)
	if params != "" {
		msg += `,"params":` + params
	}
	resp := c.request(http.MethodPost, msg+"}", nil)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		c.t.Fatalf("%s: status %d: %s", method, resp.StatusCode, b)
	}
	if method == "initialize" {
		c.session = resp.Header.Get("Mcp-Session-Id")
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		evs := readEvents(c.t, resp.Body, -1)
		return gjson.Parse(evs[len(evs)-1].data)
	}
	b, _ := io.ReadAll(resp.Body)
	return gjson.ParseBytes(b)
}

func (c *httpClient) result(method, params string) gjson.Result {
	c.t.Helper()
	r := c.rpc(method, params)
	if e := r.Get("error"); e.Exists() {
		c.t.Fatalf("%s %s: %s", method, params, e.Raw)
	}
	return r.Get("result")
}

func (c *httpClient) initialize() {
	c.t.Helper()
	c.result("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"1"}}`)
	if c.session == "" {
		c.t.Fatal("initialize gave no Mcp-Session-Id")
	}
	resp := c.request(http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		c.t.Fatalf("notifications/initialized: status %d", resp.StatusCode)
	}
}

type event struct{ id, data string }

// readEvents reads SSE events until the stream ends, n events were read
// (n >= 0), or a JSON-RPC response arrives.
func readEvents(t *testing.T, r io.Reader, n int) []event {
	t.Helper()
	var out []event
	br := bufio.NewReader(r)
	var cur event
	for n < 0 || len(out) < n {
		line, err := br.ReadString('\n')
		line = strings.TrimRight(line, "\r\n")
		switch {
		case strings.HasPrefix(line, "id: "):
			cur.id = line[4:]
		case strings.HasPrefix(line, "data: "):
			cur.data += line[6:]
		case line == "" && cur.data != "":
			out = append(out, cur)
			if isResponse([]byte(cur.data)) {
				return out
			}
			cur = event{}
		}
		if err != nil {
			return out
		}
	}
	return out
}

func (p *serveProc) client(t *testing.T, token string) *httpClient {
	return &httpClient{t: t, url: p.url, token: token, hc: &http.Client{Timeout: 60 * time.Second}}
}

// TestServeHTTP runs "mcpx serve --listen" on loopback in front of the
// stub and drives it over streamable HTTP: authentication, Origin checks,
// a tools/call through the engine with a signed download, username
// injection from the bearer token's identity, sessions bound to their
// identity, progress on an SSE stream replayed from the event store after
// the client lost it, and DELETE.
func TestServeHTTP(t *testing.T) {
	stub := stubServer(t)
	cfg, _ := json.Marshal(map[string]any{
		"mcpServers": map[string]any{"stub": map[string]any{"command": stub.Command, "args": stub.Args, "env": stub.Env}},
		"serve": map[string]any{
			"tokens":          map[string]string{"tok-alice": "alice", "tok-bob": "bob"},
			"allowed_origins": []string{"https://app.example"},
		},
	})
	p := startServe(t, string(cfg))
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

	t.Run("bearer token required", func(t *testing.T) {
		for _, tok := range []string{"", "tok-mallory"} {
			resp := p.client(t, tok).request(http.MethodPost, init, nil)
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("token %q: status %d, WWW-Authenticate %q", tok, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
			}
		}
	})

	t.Run("origin", func(t *testing.T) {
		for origin, want := range map[string]int{"https://evil.example": http.StatusForbidden, "http://localhost:3000": http.StatusForbidden, "https://app.example": http.StatusOK} {
			c := p.client(t, "tok-alice")
			c.origin = origin
			resp := c.request(http.MethodPost, init, nil)
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("Origin %s: status %d, want %d", origin, resp.StatusCode, want)
			}
		}
	})

	alice := p.client(t, "tok-alice")
	alice.initialize()

	t.Run("tools/call through the engine", func(t *testing.T) {
		res := alice.result("tools/call", toolCall("image", ""))
		if strings.Contains(res.Raw, pngB64) {
			t.Fatalf("base64 reached the model: %s", res.Raw)
		}
		link := res.Get(`content.#(type=="resource_link").uri`).String()
		if !strings.HasPrefix(link, "mcpx://artifacts/") {
			t.Fatalf("no artifact link: %s", res.Raw)
		}
		u := res.Get(`_meta.mcpx/artifacts.0.artifact.url`).String()
		if !strings.HasPrefix(u, strings.TrimSuffix(p.url, "/mcp")+"/artifacts/") || !strings.HasSuffix(res.Get("content.0.text").String(), " "+u) {
			t.Fatalf("no signed download URL in %s", res.Raw)
		}
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want, _ := base64.StdEncoding.DecodeString(pngB64); resp.StatusCode != http.StatusOK || !bytes.Equal(body, want) {
			t.Errorf("download: status %d, %d bytes", resp.StatusCode, len(body))
		}
	})

	t.Run("username from the identity", func(t *testing.T) {
		if v := alice.result("tools/call", toolCall("whoami", `{"username":"mallory"}`)).Get("structuredContent.username").String(); v != "alice" {
			t.Errorf("whoami got username %q, want alice", v)
		}
		if v := alice.result("tools/call", toolCall("whoami", `{}`)).Get("structuredContent.username").String(); v != "alice" {
			t.Errorf("whoami without username got %q, want alice", v)
		}
		// a tool whose schema does not declare it is left alone
		if v := alice.result("tools/call", toolCall("echo", `{"username":"someone"}`)).Get("structuredContent.username").String(); v != "someone" {
			t.Errorf("echo's username changed to %q", v)
		}
	})

	t.Run("session bound to its identity", func(t *testing.T) {
		bob := p.client(t, "tok-bob")
		bob.session = alice.session
		resp := bob.request(http.MethodPost, `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`, nil)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("bob on alice's session: status %d", resp.StatusCode)
		}
	})

	t.Run("progress replayed after a lost stream", func(t *testing.T) {
		resp := alice.request(http.MethodPost, `{"jsonrpc":"2.0","id":50,"method":"tools/call","params":{"name":"progress","arguments":{"steps":4,"delay_ms":150},"_meta":{"progressToken":"p-1"}}}`, nil)
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
			t.Fatalf("a call with a progress token answered %s", ct)
		}
		first := readEvents(t, resp.Body, 1)
		resp.Body.Close() // the connection drops after the first event
		if len(first) != 1 || gjson.Get(first[0].data, "params.progress").Int() != 1 {
			t.Fatalf("first event: %v", first)
		}
		replay := alice.request(http.MethodGet, "", map[string]string{"Accept": "text/event-stream", "Last-Event-ID": first[0].id})
		defer replay.Body.Close()
		if replay.StatusCode != http.StatusOK {
			t.Fatalf("GET with Last-Event-ID: status %d", replay.StatusCode)
		}
		rest := readEvents(t, replay.Body, -1)
		var progress []int64
		for _, ev := range rest[:max(len(rest)-1, 0)] {
			if gjson.Get(ev.data, "params.progressToken").String() != "p-1" {
				t.Errorf("event %s: %s", ev.id, ev.data)
			}
			progress = append(progress, gjson.Get(ev.data, "params.progress").Int())
		}
		if fmt.Sprint(progress) != "[2 3 4]" {
			t.Errorf("replayed progress %v, want [2 3 4] (the last one included)", progress)
		}
		if len(rest) == 0 || gjson.Get(rest[len(rest)-1].data, "id").Int() != 50 || gjson.Get(rest[len(rest)-1].data, "result.content.0.text").String() != "done in 4 steps" {
			t.Fatalf("replay did not end with the response: %v", rest)
		}
	})

	t.Run("delete", func(t *testing.T) {
		c := p.client(t, "tok-bob")
		c.initialize()
		resp := c.request(http.MethodDelete, "", nil)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("DELETE: status %d", resp.StatusCode)
		}
		resp = c.request(http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, nil)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("a deleted session: status %d", resp.StatusCode)
		}
	})
}

// TestHTTPOriginDefault: without allowed origins, browser requests from
// loopback origins pass and any other origin is refused (DNS rebinding);
// a request without Origin (not a browser) passes.
func TestHTTPOriginDefault(t *testing.T) {
	g := newTestGateway(t, map[string]config.ServerConfig{"stub": stubServer(t)}, engine.Options{})
	srv := httptest.NewServer(g.HTTPHandler(HTTPOptions{})) // 127.0.0.1
	defer srv.Close()
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	for origin, want := range map[string]int{
		"":                          http.StatusOK,
		"http://localhost:5173":     http.StatusOK,
		"http://127.0.0.1:8080":     http.StatusOK,
		"http://[::1]:3000":         http.StatusOK,
		"https://evil.example":      http.StatusForbidden,
		"http://127.0.0.1.evil.net": http.StatusForbidden,
		"null":                      http.StatusForbidden,
	} {
		c := &httpClient{t: t, url: srv.URL + "/mcp", origin: origin, hc: srv.Client()}
		resp := c.request(http.MethodPost, init, nil)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Origin %q: status %d, want %d", origin, resp.StatusCode, want)
		}
	}
}

package gateway

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway/config"
)

// goEverything finds the go-sdk's example server, the Go upstream of the
// HTTP benchmarks:
//
//	go install github.com/modelcontextprotocol/go-sdk/examples/server/everything@v1.8.0
//
// MCPX_BENCH_EVERYTHING may name the binary.
func goEverything(b *testing.B) string {
	if p := os.Getenv("MCPX_BENCH_EVERYTHING"); p != "" {
		return p
	}
	if out, err := exec.Command("go", "env", "GOBIN", "GOPATH").Output(); err == nil {
		var candidates []string
		for i, dir := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
			switch {
			case dir == "":
			case i == 0:
				candidates = append(candidates, filepath.Join(dir, "everything"))
			default:
				candidates = append(candidates, filepath.Join(dir, "bin", "everything"))
			}
		}
		for _, p := range candidates {
			if st, err := os.Stat(p); err == nil && !st.IsDir() {
				return p
			}
		}
	}
	b.Skip("the go-sdk everything server is not installed: go install github.com/modelcontextprotocol/go-sdk/examples/server/everything@v1.8.0")
	return ""
}

// startGoEverything runs it on a free loopback port and returns its MCP
// endpoint.
func startGoEverything(b *testing.B) string {
	bin := goEverything(b)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "-http", addr)
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for i := 0; ; i++ {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		if i == 200 {
			b.Fatalf("everything did not listen on %s", addr)
		}
		time.Sleep(25 * time.Millisecond)
	}
	return "http://" + addr + "/mcp"
}

// mcpHTTPClient is a minimal streamable HTTP client for benchmarks: one
// session, requests answered as JSON or as an SSE stream.
type mcpHTTPClient struct {
	url     string
	session string
	hc      *http.Client
	next    atomic.Int64
	// stateless: 2026-07-28 requests (the revision's headers, no session)
	stateless bool
}

func newMCPHTTPClient(url string, tr http.RoundTripper) (*mcpHTTPClient, error) {
	c := &mcpHTTPClient{url: url, hc: &http.Client{Transport: tr, Timeout: 60 * time.Second}}
	if _, err := c.call("initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}`); err != nil {
		return nil, err
	}
	if _, err := c.post([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *mcpHTTPClient) call(method, params string) ([]byte, error) {
	id := c.next.Add(1)
	body := `{"jsonrpc":"2.0","id":` + strconv.FormatInt(id, 10) + `,"method":"` + method + `","params":` + params + `}`
	resp, err := c.post([]byte(body))
	if err != nil {
		return nil, err
	}
	if e := gjson.GetBytes(resp, "error"); e.Exists() {
		return nil, fmt.Errorf("%s: %s", method, e.Raw)
	}
	return resp, nil
}

func (c *mcpHTTPClient) post(body []byte) ([]byte, error) {
	req, err := http.NewRequest(http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.stateless {
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", gjson.GetBytes(body, "method").String())
		if n := gjson.GetBytes(body, "params.name"); n.Exists() {
			req.Header.Set("Mcp-Name", n.String())
		}
	} else if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if s := resp.Header.Get("Mcp-Session-Id"); s != "" {
		c.session = s
	}
	switch {
	case resp.StatusCode == http.StatusAccepted:
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil, nil
	case resp.StatusCode != http.StatusOK:
		b, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("status %d: %s", resp.StatusCode, b)
	case strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"):
		br := bufio.NewReader(resp.Body)
		for {
			line, err := br.ReadBytes('\n')
			if data, ok := bytes.CutPrefix(line, []byte("data: ")); ok && isResponse(data) {
				_, _ = io.Copy(io.Discard, resp.Body)
				return bytes.TrimSpace(data), nil
			}
			if err != nil {
				return nil, errors.New("SSE stream ended without a response")
			}
		}
	}
	return io.ReadAll(resp.Body)
}

// benchTransport keeps a connection per client alive.
func benchTransport() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 2 * benchCallers
	return tr
}

// benchHTTPClients runs b.N greet calls from 16 clients, each with its
// own session and one call in flight, against url.
func benchHTTPClients(b *testing.B, url string) {
	benchHTTPRevision(b, url, false)
}

// benchHTTPRevision is benchHTTPClients with stateless 2026-07-28
// clients (no session; the revision's _meta and headers) when stateless.
func benchHTTPRevision(b *testing.B, url string, stateless bool) {
	tr := benchTransport()
	defer tr.CloseIdleConnections()
	clients := make(chan *mcpHTTPClient, benchCallers)
	for range benchCallers {
		c := &mcpHTTPClient{url: url, hc: &http.Client{Transport: tr, Timeout: 60 * time.Second}, stateless: true}
		if !stateless {
			var err error
			if c, err = newMCPHTTPClient(url, tr); err != nil {
				b.Fatal(err)
			}
		}
		clients <- c
	}
	params := `{"name":"greet","arguments":{"name":"bench"}}`
	if stateless {
		params = `{"name":"greet","arguments":{"name":"bench"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`
	}
	b.ReportAllocs()
	inParallel(b, benchCallers, func() error {
		c := <-clients
		defer func() { clients <- c }()
		r, err := c.call("tools/call", params)
		if err == nil && !strings.Contains(string(r), "Hi bench") {
			err = fmt.Errorf("greet: %s", r)
		}
		return err
	})
}

// BenchmarkHTTP16Direct: 16 clients call the go-sdk everything server's
// greet over streamable HTTP directly.
func BenchmarkHTTP16Direct(b *testing.B) {
	benchHTTPClients(b, startGoEverything(b))
}

// BenchmarkHTTP16Gateway: the same 16 clients call it through the
// gateway's streamable HTTP downstream (on loopback), which forwards over
// one streamable HTTP upstream connection and runs the engine on every
// result.
func BenchmarkHTTP16Gateway(b *testing.B) {
	up := startGoEverything(b)
	g := newTestGateway(b, map[string]config.ServerConfig{"everything": {Type: config.TypeStreamableHTTP, URL: up}}, engine.Options{})
	srv := httptest.NewServer(g.HTTPHandler(HTTPOptions{}))
	defer srv.Close()
	benchHTTPClients(b, srv.URL+"/mcp")
}

// benchHTTPStdio: 16 clients of one revision call greet through the
// gateway's streamable HTTP downstream, which forwards to the go-sdk
// everything server over stdio: the path of an HTTP deployment in front
// of a local server, where a stateless client's call goes to the
// upstream's stateless lane.
func benchHTTPStdio(b *testing.B, stateless bool) {
	g := newTestGateway(b, map[string]config.ServerConfig{"everything": {Command: goEverything(b)}}, engine.Options{})
	srv := httptest.NewServer(g.HTTPHandler(HTTPOptions{}))
	defer srv.Close()
	benchHTTPRevision(b, srv.URL+"/mcp", stateless)
}

// BenchmarkHTTPStdioSession: 2025-11-25 clients, each with its session.
func BenchmarkHTTPStdioSession(b *testing.B) { benchHTTPStdio(b, false) }

// BenchmarkHTTPStdioStateless: 2026-07-28 clients.
func BenchmarkHTTPStdioStateless(b *testing.B) { benchHTTPStdio(b, true) }

package gateway

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
	"github.com/mcpx-dev/mcpx/gateway/internal/upstream"
)

// sessionUpstream is a small Streamable HTTP MCP server with sessions and
// one tool, echo; forget makes it lose every session, as a restarted or
// expiring server does.
type sessionUpstream struct {
	mu       sync.Mutex
	sessions map[string]bool
	inits    int
}

func (s *sessionUpstream) forget() {
	s.mu.Lock()
	s.sessions = map[string]bool{}
	s.mu.Unlock()
}

func (s *sessionUpstream) initializes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inits
}

func (s *sessionUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed) // no GET stream; DELETE is fine
		return
	}
	b, _ := io.ReadAll(r.Body)
	m := gjson.ParseBytes(b)
	id, method := m.Get("id").Raw, m.Get("method").String()
	s.mu.Lock()
	known := s.sessions[r.Header.Get("Mcp-Session-Id")]
	if method == "initialize" {
		s.inits++
		sid := "s" + strconv.Itoa(s.inits)
		s.sessions[sid] = true
		w.Header().Set("Mcp-Session-Id", sid)
		known = true
	}
	s.mu.Unlock()
	if !known {
		http.Error(w, "unknown session", http.StatusNotFound)
		return
	}
	if id == "" {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	var result string
	switch method {
	case "initialize":
		result = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"sessions","version":"1"}}`
	case "tools/list":
		result = `{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}`
	case "tools/call":
		result = fmt.Sprintf(`{"content":[],"structuredContent":%s}`, m.Get("params.arguments").Raw)
	default:
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, id)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, id, result)
}

// A Streamable HTTP upstream that forgets its session (404) is
// reconnected: the call that met the 404 fails as upstream unavailable,
// the gateway initializes a new session, and calls go through again.
func TestHTTPUpstreamSessionExpired(t *testing.T) {
	t.Parallel()
	up := &sessionUpstream{sessions: map[string]bool{}}
	ts := httptest.NewServer(up)
	t.Cleanup(ts.Close) // after the gateway's, so that its DELETE lands
	g := newTestGateway(t, map[string]config.ServerConfig{"remote": {Type: config.TypeStreamableHTTP, URL: ts.URL}}, engine.Options{})
	waitFor(t, "the upstream is ready", func() bool { return g.Status()[0].State == upstream.StateReady })
	c := connect(t, g)
	if v := c.result("tools/call", toolCall("echo", `{"v":"one"}`)).Get("structuredContent.v").String(); v != "one" {
		t.Fatalf("echo: %q", v)
	}
	up.forget()
	r := c.call("tools/call", toolCall("echo", `{"v":"lost"}`))
	if code := gjson.GetBytes(r, "error.code").Int(); code != jsonrpc.CodeUpstreamUnavailable {
		t.Fatalf("a call on the expired session: want code %d, got %s", jsonrpc.CodeUpstreamUnavailable, r)
	}
	waitFor(t, "the upstream is ready on a new session", func() bool {
		st := g.Status()[0]
		return st.State == upstream.StateReady && st.Restarts >= 1
	})
	if v := c.result("tools/call", toolCall("echo", `{"v":"two"}`)).Get("structuredContent.v").String(); v != "two" {
		t.Fatalf("echo after the new session: %q", v)
	}
	if n := up.initializes(); n != 2 {
		t.Errorf("%d initializes, want 2", n)
	}
}

// A legacy HTTP+SSE upstream (type "sse", mcp-go's SSE server): the
// gateway finds the endpoint on the stream, initializes, lists the tools
// and calls one.
func TestSSEUpstream(t *testing.T) {
	t.Parallel()
	s := server.NewMCPServer("legacy", "1", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("echo"), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("echo: " + req.GetString("v", "")), nil
	})
	ts := httptest.NewServer(server.NewSSEServer(s))
	t.Cleanup(ts.Close)
	g := newTestGateway(t, map[string]config.ServerConfig{"legacy": {Type: config.TypeSSE, URL: ts.URL + "/sse"}}, engine.Options{})
	waitFor(t, "the upstream is ready", func() bool { return g.Status()[0].State == upstream.StateReady })
	c := connect(t, g)
	if txt := c.result("tools/call", toolCall("echo", `{"v":"over sse"}`)).Get("content.0.text").String(); txt != "echo: over sse" {
		t.Fatalf("echo: %q", txt)
	}
}

package gateway

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/gateway/internal/upstream"
)

// modernUpstream is an mcp-go server over streamable HTTP that speaks both
// revisions; its tool "confirm" asks for input the 2026-07-28 way
// (input_required with requestState) and answers once it has it.
func modernUpstream(t *testing.T) string {
	s := server.NewMCPServer("modern", "1", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("confirm"), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if _, ok := req.Params.InputResponses["ok"]; ok && req.Params.RequestState == "state-1" {
			return mcp.NewToolResultText("confirmed"), nil
		}
		res := &mcp.CallToolResult{}
		res.ResultType = mcp.ResultTypeInputRequired
		res.InputRequests = mcp.InputRequests{"ok": mcp.NewElicitationInputRequest(mcp.ElicitationParams{Message: "Proceed?"})}
		res.RequestState = "state-1"
		return res, nil
	})
	srv := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// TestServeStatelessUpstreamInputRequired: a stateless client's call to an
// upstream that speaks 2026-07-28 goes there statelessly, and the
// upstream's input_required, its requestState and the client's
// inputResponses pass through both ways; a session client of the same
// upstream keeps working.
func TestServeStatelessUpstreamInputRequired(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, map[string]config.ServerConfig{"modern": {URL: modernUpstream(t)}}, engine.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g.WaitReady(ctx)
	if !g.rooms.Ups.Named("modern").HasLane() {
		t.Fatal("the upstream speaks 2026-07-28 but no stateless lane was opened")
	}
	c := connect(t, g)
	first := c.result("tools/call", statelessParams(`{"name":"confirm"}`, ""))
	if first.Get("resultType").String() != "input_required" || first.Get("requestState").String() != "state-1" || first.Get("inputRequests.ok.method").String() != "elicitation/create" {
		t.Fatalf("first round: %s", first.Raw)
	}
	second := c.result("tools/call", statelessParams(`{"name":"confirm","requestState":"state-1","inputResponses":{"ok":{"action":"accept","content":{}}}}`, ""))
	if second.Get("resultType").String() != "complete" || !strings.Contains(second.Get("content.0.text").String(), "confirmed") {
		t.Fatalf("second round: %s", second.Raw)
	}
	if old := c.result("tools/list", ""); old.Get("resultType").Exists() || old.Get("tools.0.name").String() != "confirm" {
		t.Fatalf("session tools/list: %s", old.Raw)
	}
}

// TestUpstreamProtocolSessionOnly: mcpx.protocol "2025-11-25" keeps an
// upstream to its session: no probe, no lane.
func TestUpstreamProtocolSessionOnly(t *testing.T) {
	t.Parallel()
	cfg := config.ServerConfig{URL: modernUpstream(t), Mcpx: config.ServerOptions{Protocol: mcp.ProtocolVersion20251125}}
	g := newTestGateway(t, map[string]config.ServerConfig{"modern": cfg}, engine.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g.WaitReady(ctx)
	if st := g.Status()[0]; st.State != upstream.StateReady {
		t.Fatalf("not ready: %+v", st)
	}
	if g.rooms.Ups.Named("modern").HasLane() {
		t.Fatal("a lane was opened although config says 2025-11-25")
	}
}

// TestServeStatelessUpstreamRootsGoSDK: an mcp-go upstream's
// input_required for roots/list has no params (mcp-go writes none); it
// reaches the go-sdk client (v1.8.0), which fails the whole call on an
// input request without params, with an empty object, so the client
// answers it and the retry completes with the client's roots.
func TestServeStatelessUpstreamRootsGoSDK(t *testing.T) {
	t.Parallel()
	s := server.NewMCPServer("modern", "1", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("roots"), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if r, ok := req.Params.InputResponses["r"]; ok && req.Params.RequestState == "roots-1" {
			b, err := json.Marshal(r)
			if err != nil {
				return nil, err
			}
			return mcp.NewToolResultText(string(b)), nil
		}
		res := &mcp.CallToolResult{}
		res.ResultType = mcp.ResultTypeInputRequired
		res.InputRequests = mcp.InputRequests{"r": mcp.NewRootsInputRequest()}
		res.RequestState = "roots-1"
		return res, nil
	})
	up := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(up.Close)
	g := newTestGateway(t, map[string]config.ServerConfig{"modern": {URL: up.URL + "/mcp"}}, engine.Options{})
	srv := httptest.NewServer(g.HTTPHandler(HTTPOptions{}))
	t.Cleanup(srv.Close)
	cl := gosdk.NewClient(&gosdk.Implementation{Name: "roots-test", Version: "1"}, nil)
	cl.AddRoots(&gosdk.Root{URI: "file:///home/ada", Name: "home"})
	ctx, cs := dialGoSDKStateless(t, cl, srv.URL)
	res, err := cs.CallTool(ctx, &gosdk.CallToolParams{Name: "roots", Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("the client rejected the result: %v", err)
	}
	b, _ := json.Marshal(res)
	if res.IsError || !strings.Contains(string(b), "file:///home/ada") {
		t.Fatalf("result %s, want the client's roots", b)
	}
}

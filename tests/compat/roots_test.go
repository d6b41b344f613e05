package compat_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRootsDuringStatelessCall: server-everything asks roots/list when it
// likes (350 ms after its initialization, and from get-roots-list when it
// has no roots yet); through mcpx the request meets a 2026-07-28 client's
// call on the shared pipe and reaches the client as an input_required
// round. The go-sdk client answers such a round itself, but fails the
// whole call ("unexpected end of JSON input") on an input request without
// params: the matrix's go-sdk cells at 2026-07-28 failed so when the
// server's own roots/list happened to land during get-tiny-image. Here
// get-roots-list asks every time, over HTTP (mcpx serve) and stdio (mcpx
// wrap), and the client's root reaches the server.
func TestRootsDuringStatelessCall(t *testing.T) {
	needPeers(t)
	fx := makeFixtures(t)
	var srv server
	for _, s := range servers {
		if s.pkg == "server-everything" {
			srv = s
		}
	}
	const rev, rootURI = "2026-07-28", "file:///home/ada"
	for _, overHTTP := range []bool{false, true} {
		name := map[bool]string{false: "stdio (mcpx wrap)", true: "HTTP (mcpx serve)"}[overHTTP]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			storeDir := t.TempDir()
			tg := target{launch: wrapLaunch(srv.script(t, fx, "mcpx"), storeDir, os.DevNull)}
			if overHTTP {
				url, stop, err := serveHTTP(t, srv.pkg, srv.script(t, fx, "mcpx"), storeDir, json.RawMessage(`{"roots":{"listChanged":true}}`))
				if err != nil {
					t.Fatal(err)
				}
				defer stop()
				tg.url = url
			}
			cs, err := dialGoSDK(t, tg, rev, &gosdk.Root{URI: rootURI, Name: "home"})
			if err != nil {
				t.Fatalf("connecting through mcpx: %v", err)
			}
			defer cs.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
			defer cancel()
			res, err := cs.CallTool(ctx, &gosdk.CallToolParams{Name: "get-roots-list", Arguments: map[string]any{}})
			if err != nil {
				t.Fatalf("get-roots-list through mcpx: the client rejected the result: %v", err)
			}
			b, _ := json.Marshal(res)
			if res.IsError || !strings.Contains(string(b), rootURI) {
				t.Fatalf("get-roots-list through mcpx: %s, want the client's root %s", b, rootURI)
			}
		})
	}
}

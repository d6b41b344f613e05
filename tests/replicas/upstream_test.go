package replicas

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"
)

// upstreamEnv makes the test binary the "blobs" stdio upstream of each
// replica (TestMain).
const upstreamEnv = "MCPX_REPLICAS_UPSTREAM"

// reportItems is how many items a report holds (about 90 kB of JSON).
const reportItems = 1500

// report is the JSON document the blobs upstream's "report" tool returns
// as a base64 blob, the same bytes for the same seed.
func report(seed int64) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `{"seed":%d,"items":[`, seed)
	for i := range reportItems {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"i":%d,"name":"item-%d-%d","note":"a line of filler text so that the report is worth storing"}`, i, seed, i)
	}
	b.WriteString("]}")
	return []byte(b.String())
}

// serveBlobs is a minimal stdio MCP server (JSON-RPC lines) with one
// tool, "report", whose result is a JSON document as an embedded blob:
// what the gateway stores as an artifact.
func serveBlobs(in io.Reader, out io.Writer) {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	w := bufio.NewWriter(out)
	for sc.Scan() {
		m := gjson.ParseBytes(sc.Bytes())
		id := m.Get("id")
		if !id.Exists() {
			continue // a notification
		}
		var result any
		switch m.Get("method").String() {
		case "initialize":
			v := m.Get("params.protocolVersion").String()
			if v == "" || v > "2025-11-25" {
				v = "2025-11-25"
			}
			result = map[string]any{"protocolVersion": v, "capabilities": map[string]any{"tools": map[string]any{}}, "serverInfo": map[string]any{"name": "blobs", "version": "1"}}
		case "ping":
			result = map[string]any{}
		case "tools/list":
			result = map[string]any{"tools": []any{map[string]any{
				"name":        "report",
				"description": "a JSON report, as a blob",
				"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"seed": map[string]any{"type": "integer"}}},
			}}}
		case "tools/call":
			seed := m.Get("params.arguments.seed").Int()
			result = map[string]any{"content": []any{map[string]any{"type": "resource", "resource": map[string]any{
				"uri": fmt.Sprintf("file:///report-%d.json", seed), "mimeType": "application/json",
				"blob": base64.StdEncoding.EncodeToString(report(seed)),
			}}}}
		default:
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id.Raw), "error": map[string]any{"code": -32601, "message": "method not found"}})
			w.Write(append(b, '\n'))
			w.Flush()
			continue
		}
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id.Raw), "result": result})
		w.Write(append(b, '\n'))
		w.Flush()
	}
}

// boardURI is the shared upstream's one resource.
const boardURI = "board://shared/notes"

// sharedUpstream runs a streamable HTTP MCP server (go-sdk) on loopback
// that both replicas use: a resource one may subscribe to and a "touch"
// tool that tells every subscribed session the resource changed. It is
// the deployment where subscriptions cross replicas: the upstream itself
// is shared and does the fan-out.
func sharedUpstream(t *testing.T) string {
	srv := gosdk.NewServer(&gosdk.Implementation{Name: "shared", Version: "1"}, &gosdk.ServerOptions{
		SubscribeHandler:   func(context.Context, *gosdk.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *gosdk.UnsubscribeRequest) error { return nil },
	})
	srv.AddResource(&gosdk.Resource{URI: boardURI, Name: "board", MIMEType: "text/plain"}, func(context.Context, *gosdk.ReadResourceRequest) (*gosdk.ReadResourceResult, error) {
		return &gosdk.ReadResourceResult{Contents: []*gosdk.ResourceContents{{URI: boardURI, MIMEType: "text/plain", Text: "notes"}}}, nil
	})
	gosdk.AddTool(srv, &gosdk.Tool{Name: "touch", Description: "changes the board"}, func(ctx context.Context, _ *gosdk.CallToolRequest, _ struct{}) (*gosdk.CallToolResult, any, error) {
		if err := srv.ResourceUpdated(ctx, &gosdk.ResourceUpdatedNotificationParams{URI: boardURI}); err != nil {
			return nil, nil, err
		}
		return &gosdk.CallToolResult{Content: []gosdk.Content{&gosdk.TextContent{Text: "touched"}}}, nil, nil
	})
	ts := httptest.NewServer(gosdk.NewStreamableHTTPHandler(func(*http.Request) *gosdk.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	return ts.URL
}

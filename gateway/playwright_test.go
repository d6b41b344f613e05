package gateway

import (
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/gateway/config"
)

// playwrightUpstream is a Streamable HTTP server that answers as
// @playwright/mcp does (no sessions: each POST is answered alone):
// browser_snapshot returns snapshot, an accessibility snapshot, as one
// text block; browser_take_screenshot a text block and the screenshot
// (screenshotPNG, 2560x1600) as an image block.
func playwrightUpstream(t *testing.T, snapshot string) config.ServerConfig {
	text := quote(snapshot)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		b, _ := io.ReadAll(r.Body)
		m := gjson.ParseBytes(b)
		id := m.Get("id").Raw
		if id == "" {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		var result string
		switch m.Get("method").String() {
		case "initialize":
			result = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"Playwright","version":"0.0.41"}}`
		case "tools/list":
			result = `{"tools":[{"name":"browser_snapshot","description":"Capture accessibility snapshot of the current page, this is better than screenshot","inputSchema":{"type":"object","properties":{}}},` +
				`{"name":"browser_take_screenshot","description":"Take a screenshot of the current page","inputSchema":{"type":"object","properties":{}}}]}`
		case "tools/call":
			switch m.Get("params.name").String() {
			case "browser_take_screenshot":
				result = `{"content":[{"type":"text","text":"### Result\nTook the viewport screenshot and saved it as /tmp/page.png"},` +
					`{"type":"image","mimeType":"image/png","data":"` + base64.StdEncoding.EncodeToString(screenshotPNG()) + `"}]}`
			default:
				result = `{"content":[{"type":"text","text":` + text + `}]}`
			}
		default:
			result = `{}`
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, id, result)
	}))
	t.Cleanup(ts.Close)
	return config.ServerConfig{URL: ts.URL, Type: config.TypeStreamableHTTP, Mcpx: config.ServerOptions{Protocol: "2025-11-25"}}
}

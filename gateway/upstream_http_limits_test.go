package gateway

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
	"github.com/mcpx-dev/mcpx/gateway/internal/upstream"
)

// A remote upstream's answer is held to limits.max_upstream_message_bytes
// as a stdio upstream's is, counted after gzip is undone: a gzip body
// inflating past the cap fails its call (the connection stays up).
func TestHTTPUpstreamMessageTooLarge(t *testing.T) {
	t.Parallel()
	const limit = 1 << 20
	up := &sessionUpstream{sessions: map[string]bool{}}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if gjson.GetBytes(b, "params.arguments.huge").Bool() {
			var z bytes.Buffer
			zw := gzip.NewWriter(&z)
			fmt.Fprintf(zw, `{"jsonrpc":"2.0","id":%s,"result":{"content":[],"x":"%s"}}`, gjson.GetBytes(b, "id").Raw, strings.Repeat("A", 8*limit))
			_ = zw.Close()
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Encoding", "gzip")
			_, _ = w.Write(z.Bytes()) // 8 KiB or so on the wire
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		up.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	g := newGatewayWith(t, Options{
		Servers: map[string]config.ServerConfig{"remote": {Type: config.TypeStreamableHTTP, URL: ts.URL}},
		Limits:  config.Limits{MaxUpstreamMessageBytes: limit},
	})
	waitFor(t, "the upstream is ready", func() bool { return g.Status()[0].State == upstream.StateReady })
	c := connect(t, g)
	r := c.call("tools/call", toolCall("echo", `{"huge":true}`))
	if code := gjson.GetBytes(r, "error.code").Int(); code != jsonrpc.CodeUpstreamInvalid || !strings.Contains(gjson.GetBytes(r, "error.message").String(), "more than 1048576 bytes") {
		t.Fatalf("an answer inflating to 8 MiB under a 1 MiB limit: %s", r)
	}
	if v := c.result("tools/call", toolCall("echo", `{"v":"still up"}`)).Get("structuredContent.v").String(); v != "still up" {
		t.Fatalf("after the dropped answer: %q", v)
	}
}

package gateway

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/gateway/internal/upstream"
	"github.com/mcpx-dev/mcpx/internal/syncbuf"
)

// askerState is the asker stub's "state" tool's answer.
type askerState struct {
	PID         int             `json:"pid"`
	Initializes int             `json:"initializes"`
	ListChanged int             `json:"listChanged"`
	Roots       json.RawMessage `json:"roots"`
}

func stateOf(t *testing.T, c *httpClient) askerState {
	t.Helper()
	var st askerState
	text := c.result("tools/call", toolCall("state", "")).Get("content.0.text").String()
	if err := json.Unmarshal([]byte(text), &st); err != nil {
		t.Fatalf("state %q: %v", text, err)
	}
	return st
}

// nextClientRequest reads SSE events from br until a request for method
// arrives, and returns it.
func nextClientRequest(t *testing.T, br *bufio.Reader, method string) gjson.Result {
	t.Helper()
	var data string
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("the stream ended before a %s request: %v", method, err)
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case strings.HasPrefix(line, "data: "):
			data += line[6:]
		case line == "" && data != "":
			if m := gjson.Parse(data); m.Get("method").String() == method && m.Get("id").Exists() {
				return m
			}
			data = ""
		}
	}
}

// TestServeRootsChangeWithoutRestart: a second HTTP client
// that declares roots does not restart the stdio upstream (its state, a
// browser page say, would be lost); the upstream, told roots with
// listChanged from the start (mcpx.client_capabilities), gets
// notifications/roots/list_changed and its roots/list reaches that
// client; when the client leaves it is told again, and no client answers.
func TestServeRootsChangeWithoutRestart(t *testing.T) {
	t.Parallel()
	cfg := askerStub(t)
	cfg.Mcpx.ClientCapabilities = json.RawMessage(`{"roots":{"listChanged":true}}`)
	g := newGatewayWith(t, Options{Servers: map[string]config.ServerConfig{"asker": cfg}, WaitForClientCapabilities: true})
	srv := httptest.NewServer(g.HTTPHandler(HTTPOptions{}))
	t.Cleanup(srv.Close)
	hc := &http.Client{Timeout: 60 * time.Second}

	a := &httpClient{t: t, url: srv.URL, hc: hc}
	a.initialize() // no roots
	before := stateOf(t, a)
	if before.Initializes != 1 || before.ListChanged != 0 {
		t.Fatalf("before the second client: %+v", before)
	}

	b := &httpClient{t: t, url: srv.URL, hc: hc}
	b.result("initialize", `{"protocolVersion":"2025-11-25","capabilities":{"roots":{"listChanged":true}},"clientInfo":{"name":"b","version":"1"}}`)
	stream := b.request(http.MethodGet, "", map[string]string{"Accept": "text/event-stream"})
	defer stream.Body.Close()
	if stream.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: status %d", stream.StatusCode)
	}
	resp := b.request(http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil)
	resp.Body.Close()
	ask := nextClientRequest(t, bufio.NewReader(stream.Body), "roots/list")
	resp = b.request(http.MethodPost, `{"jsonrpc":"2.0","id":`+ask.Get("id").Raw+`,"result":{"roots":[{"uri":"file:///work/b","name":"b"}]}}`, nil)
	resp.Body.Close()

	var after askerState
	waitFor(t, "the upstream has the second client's roots", func() bool {
		after = stateOf(t, a)
		return strings.Contains(string(after.Roots), "file:///work/b")
	})
	if after.PID != before.PID || after.Initializes != 1 || after.ListChanged != 1 {
		t.Errorf("after the second client: %+v, want pid %d, one initialize, one list_changed", after, before.PID)
	}
	if st := g.Status()[0]; st.Restarts != 0 {
		t.Errorf("the upstream restarted: %+v", st)
	}

	del := b.request(http.MethodDelete, "", nil)
	del.Body.Close()
	waitFor(t, "the upstream is told the roots changed again", func() bool {
		after = stateOf(t, a)
		return after.ListChanged == 2 && !strings.Contains(string(after.Roots), "file:///work/b")
	})
	if after.PID != before.PID || after.Initializes != 1 {
		t.Errorf("after the second client left: %+v", after)
	}
}

// TestUpstreamDeclaresFirstClientCapabilities: with
// WaitForClientCapabilities the upstream's initialize carries what the
// first client declared of what mcpx relays, sub-fields kept: a server
// that lists tools by capability lists what it would list that client.
func TestUpstreamDeclaresFirstClientCapabilities(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, client, want string }{
		{"none", `{}`, `{}`},
		{"all", `{"sampling":{"tools":{}},"elicitation":{"form":{},"url":{}},"roots":{},"experimental":{"x":{}},"tasks":{}}`,
			`{"elicitation":{"form":{},"url":{}},"roots":{"listChanged":true},"sampling":{"tools":{}}}`},
		{"elicitation only", `{"elicitation":{}}`, `{"elicitation":{}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := newGatewayWith(t, Options{Servers: map[string]config.ServerConfig{"asker": askerStub(t)}, WaitForClientCapabilities: true})
			c := connectWith(t, g, tc.client)
			got := c.result("tools/call", toolCall("caps", "")).Get("content.0.text").String()
			if !jsonSame(got, tc.want) {
				t.Errorf("client %s: the upstream was told %s, want %s", tc.client, got, tc.want)
			}
		})
	}
	t.Run("stateless client", func(t *testing.T) {
		g := newGatewayWith(t, Options{Servers: map[string]config.ServerConfig{"asker": askerStub(t)}, WaitForClientCapabilities: true})
		c := connectStateless(t, g)
		res := c.result("tools/call", `{"name":"caps","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}}`)
		if got := res.Get("content.0.text").String(); !jsonSame(got, `{"sampling":{}}`) {
			t.Errorf("the upstream was told %s, want the stateless client's sampling only", got)
		}
	})
}

// jsonSame reports whether a and b are the same JSON value.
func jsonSame(a, b string) bool {
	var x, y any
	return json.Unmarshal([]byte(a), &x) == nil && json.Unmarshal([]byte(b), &y) == nil && reflect.DeepEqual(x, y)
}

// TestUpstreamClientCapabilitiesConfig: mcpx.client_capabilities is
// declared verbatim at start, with no client to wait for; a later client
// with roots the upstream was not told of is logged once, pointing at
// the setting, and the upstream is not restarted.
func TestUpstreamClientCapabilitiesConfig(t *testing.T) {
	t.Parallel()
	var logs syncbuf.Buffer
	cfg := askerStub(t)
	cfg.Mcpx.ClientCapabilities = json.RawMessage(`{"sampling":{},"experimental":{"k":{}}}`)
	g := newGatewayWith(t, Options{
		Servers:                   map[string]config.ServerConfig{"asker": cfg},
		WaitForClientCapabilities: true,
		Logger:                    hclog.New(&hclog.LoggerOptions{Level: hclog.Info, Output: &logs}),
	})
	waitFor(t, "the upstream is ready with no client", func() bool { return g.Status()[0].State == upstream.StateReady })
	for range 2 {
		c := connectWith(t, g, `{"roots":{}}`)
		got := c.result("tools/call", toolCall("caps", "")).Get("content.0.text").String()
		if !jsonSame(got, `{"sampling":{},"experimental":{"k":{}}}`) {
			t.Fatalf("the upstream was told %s, want the config's capabilities verbatim", got)
		}
	}
	if n := strings.Count(logs.String(), "cannot learn of them without a restart"); n != 1 {
		t.Errorf("logged %d times that the upstream cannot learn of the roots, want once:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "mcpServers.asker.mcpx.client_capabilities") {
		t.Errorf("the log does not point at the setting:\n%s", logs.String())
	}
	if st := g.Status()[0]; st.Restarts != 0 {
		t.Errorf("the upstream restarted: %+v", st)
	}
	bad := askerStub(t)
	bad.Mcpx.ClientCapabilities = json.RawMessage(`["roots"]`)
	if err := bad.Validate("s"); err == nil || !strings.Contains(err.Error(), "mcpx.client_capabilities") {
		t.Errorf("Validate = %v, want the non-object refused", err)
	}
}

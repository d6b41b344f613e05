package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
)

// statelessParams adds the _meta of a 2026-07-28 request to params.
func statelessParams(params string, meta string) string {
	if params == "" {
		params = "{}"
	}
	m := `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}` + meta + `}`
	var p map[string]json.RawMessage
	if err := json.Unmarshal([]byte(params), &p); err != nil {
		panic(err)
	}
	p["_meta"] = json.RawMessage(m)
	b, _ := json.Marshal(p)
	return string(b)
}

type statelessHTTP struct {
	t   *testing.T
	url string
}

// post sends one stateless request with the headers the revision wants
// (hdr overrides them; "" deletes) and returns the status and the body.
func (c statelessHTTP) post(token, method, params string, hdr map[string]string) (int, gjson.Result) {
	c.t.Helper()
	body := `{"jsonrpc":"2.0","id":7,"method":"` + method + `","params":` + params + `}`
	req, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name := gjson.Get(params, "name").String(); name != "" {
		req.Header.Set("Mcp-Name", name)
	} else if uri := gjson.Get(params, "uri").String(); uri != "" {
		req.Header.Set("Mcp-Name", uri)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		c.t.Errorf("a stateless request got a session id %q", id)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		// the last data line is the response
		var last string
		for _, l := range strings.Split(string(b), "\n") {
			if d, ok := strings.CutPrefix(l, "data: "); ok {
				last = d
			}
		}
		b = []byte(last)
	}
	return resp.StatusCode, gjson.ParseBytes(b)
}

func newStatelessServer(t *testing.T, tokens map[string]string) (statelessHTTP, *Gateway) {
	g := newTestGateway(t, map[string]config.ServerConfig{"stub": stubServer(t)}, engine.Options{})
	srv := httptest.NewServer(g.HTTPHandler(HTTPOptions{Tokens: tokens}))
	t.Cleanup(srv.Close)
	return statelessHTTP{t: t, url: srv.URL}, g
}

// TestServeStatelessHTTP: 2026-07-28 requests are served without a
// session, their results carry resultType, the server's identity and,
// for lists, caching hints; server/discover describes the gateway.
func TestServeStatelessHTTP(t *testing.T) {
	t.Parallel()
	c, _ := newStatelessServer(t, nil)
	st, res := c.post("", "server/discover", statelessParams("", ""), nil)
	if st != http.StatusOK || !res.Get("result.supportedVersions").IsArray() || res.Get("result.supportedVersions.0").String() != "2026-07-28" {
		t.Fatalf("server/discover: %d %s", st, res.Raw)
	}
	if res.Get("result.capabilities.logging").Exists() || !res.Get("result.capabilities.tools").Exists() {
		t.Errorf("discover capabilities %s: want tools, no logging", res.Get("result.capabilities").Raw)
	}
	st, res = c.post("", "tools/list", statelessParams("", ""), nil)
	if st != http.StatusOK || res.Get("result.resultType").String() != "complete" || res.Get("result.cacheScope").String() != "private" || !res.Get("result.ttlMs").Exists() {
		t.Fatalf("tools/list: %d %s", st, res.Raw)
	}
	if res.Get(`result._meta.io\.modelcontextprotocol/serverInfo.name`).String() != "mcpx" {
		t.Errorf("tools/list: no serverInfo in _meta: %s", res.Get("result._meta").Raw)
	}
	st, res = c.post("", "tools/call", statelessParams(`{"name":"echo","arguments":{"v":"x"}}`, ""), nil)
	if st != http.StatusOK || res.Get("result.structuredContent.v").String() != "x" || res.Get("result.resultType").String() != "complete" {
		t.Fatalf("tools/call: %d %s", st, res.Raw)
	}
	if res.Get("result.ttlMs").Exists() {
		t.Errorf("tools/call result has caching hints: %s", res.Raw)
	}
}

// TestServeStatelessHTTPErrors: what the revision rejects, with its codes
// and HTTP statuses.
func TestServeStatelessHTTPErrors(t *testing.T) {
	t.Parallel()
	c, _ := newStatelessServer(t, nil)
	noCaps := `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`
	cases := []struct {
		name, method, params string
		hdr                  map[string]string
		status, code         int
	}{
		{"missing client capabilities", "tools/list", noCaps, nil, 400, jsonrpc.CodeInvalidParams},
		{"unsupported version", "tools/list", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}`, map[string]string{"Mcp-Protocol-Version": "2099-01-01"}, 400, mcp.UNSUPPORTED_PROTOCOL_VERSION},
		{"version header mismatch", "tools/list", statelessParams("", ""), map[string]string{"Mcp-Protocol-Version": "2026-08-01"}, 400, mcp.HEADER_MISMATCH},
		{"Mcp-Method mismatch", "tools/list", statelessParams("", ""), map[string]string{"Mcp-Method": "prompts/list"}, 400, mcp.HEADER_MISMATCH},
		{"Mcp-Name mismatch", "tools/call", statelessParams(`{"name":"echo"}`, ""), map[string]string{"Mcp-Name": "other"}, 400, mcp.HEADER_MISMATCH},
		{"removed method", "ping", statelessParams("", ""), nil, 404, jsonrpc.CodeMethodNotFound},
		{"unknown method", "nope/nope", statelessParams("", ""), nil, 404, jsonrpc.CodeMethodNotFound},
	}
	for _, tc := range cases {
		st, res := c.post("", tc.method, tc.params, tc.hdr)
		if st != tc.status || res.Get("error.code").Int() != int64(tc.code) || res.Get("id").Int() != 7 {
			t.Errorf("%s: got %d %s, want %d and code %d", tc.name, st, res.Raw, tc.status, tc.code)
		}
	}
	_, res := c.post("", "tools/list", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}`, map[string]string{"Mcp-Protocol-Version": "2099-01-01"})
	if res.Get("error.data.requested").String() != "2099-01-01" || !res.Get("error.data.supported").IsArray() {
		t.Errorf("unsupported version data: %s", res.Get("error").Raw)
	}
	req, _ := http.NewRequest(http.MethodGet, c.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" {
		t.Errorf("GET of a stateless client: %d, Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
}

// TestServeStatelessOnStdio: one stdio connection serves both eras, each
// request in its own.
func TestServeStatelessOnStdio(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, map[string]config.ServerConfig{"stub": stubServer(t)}, engine.Options{})
	c := connect(t, g)
	d := c.result("server/discover", statelessParams("", ""))
	if d.Get("supportedVersions.0").String() != "2026-07-28" || d.Get("resultType").String() != "complete" {
		t.Fatalf("server/discover over stdio: %s", d.Raw)
	}
	res := c.result("tools/call", statelessParams(`{"name":"echo","arguments":{"v":"new"}}`, ""))
	if res.Get("resultType").String() != "complete" || res.Get("structuredContent.v").String() != "new" {
		t.Fatalf("stateless tools/call over stdio: %s", res.Raw)
	}
	res = c.result("tools/call", toolCall("echo", `{"v":"old"}`))
	if res.Get("resultType").Exists() || res.Get("structuredContent.v").String() != "old" {
		t.Fatalf("session-era tools/call over stdio: %s", res.Raw)
	}
	if r := c.call("ping", statelessParams("", "")); gjson.GetBytes(r, "error.code").Int() != jsonrpc.CodeMethodNotFound {
		t.Fatalf("stateless ping: %s", r)
	}
	if r := c.result("ping", ""); r.Raw != "{}" {
		t.Fatalf("session ping: %s", r.Raw)
	}
}

// TestServeStatelessArtifactScope: without a session, an artifact belongs
// to the principal whose call made it: no other principal reads it in
// either revision, an unauthenticated stateless caller reads none of a
// session's, and the owner reads its own.
func TestServeStatelessArtifactScope(t *testing.T) {
	t.Parallel()
	c, g := newStatelessServer(t, map[string]string{"tok-a": "alice", "tok-b": "bob"})
	_, res := c.post("tok-a", "tools/call", statelessParams(`{"name":"big","arguments":{"bytes":5000}}`, `,"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"`), nil)
	uri := ""
	res.Get("result.content").ForEach(func(_, b gjson.Result) bool {
		if b.Get("type").String() == "resource_link" {
			uri = b.Get("uri").String()
		}
		return uri == ""
	})
	if !strings.HasPrefix(uri, "mcpx://artifacts/") {
		t.Fatalf("no artifact link in %s", res.Raw)
	}
	id := strings.TrimPrefix(uri, "mcpx://artifacts/")
	ref, err := g.st.Stat(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if ref.Scope.UserID != "alice" || ref.Scope.SessionID != "" || ref.Scope.TraceID != "0af7651916cd43dd8448eb211c80319c" {
		t.Errorf("artifact scope %+v: want alice's, no session, the traceparent's trace", ref.Scope)
	}
	read := statelessParams(`{"uri":"`+uri+`"}`, "")
	if st, res := c.post("tok-a", "resources/read", read, nil); st != 200 || !res.Get("result.contents.0.blob").Exists() {
		t.Fatalf("the owner cannot read its artifact: %d %s", st, res.Raw)
	} else if res.Get("result.ttlMs").Int() < 24*3600*1000 {
		t.Errorf("an artifact read is not marked long-lived: %s", res.Get("result.ttlMs").Raw)
	}
	if _, res := c.post("tok-b", "resources/read", read, nil); res.Get("error.code").Int() != codeUnknownResource {
		t.Errorf("bob read alice's artifact statelessly: %s", res.Raw)
	}
	_, res = c.post("tok-b", "resources/list", statelessParams("", ""), nil)
	if strings.Contains(res.Raw, id) {
		t.Errorf("bob lists alice's artifact: %s", res.Raw)
	}

	// the session era: a session of bob reads none of alice's
	h := &httpClient{t: t, url: c.url, token: "tok-b", hc: &http.Client{Timeout: 60 * time.Second}}
	h.initialize()
	if r := h.rpc("resources/read", `{"uri":"`+uri+`"}`); r.Get("error.code").Int() != codeUnknownResource {
		t.Errorf("bob's session read alice's artifact: %s", r.Raw)
	}
	// and what a session makes, no stateless caller of another principal reads
	call := h.result("tools/call", toolCall("big", `{"bytes":6000}`))
	suri := ""
	call.Get("content").ForEach(func(_, b gjson.Result) bool {
		if b.Get("type").String() == "resource_link" {
			suri = b.Get("uri").String()
		}
		return suri == ""
	})
	if suri == "" {
		t.Fatalf("no artifact from bob's session: %s", call.Raw)
	}
	if _, res := c.post("tok-a", "resources/read", statelessParams(`{"uri":"`+suri+`"}`, ""), nil); res.Get("error.code").Int() != codeUnknownResource {
		t.Errorf("alice read bob's session artifact: %s", res.Raw)
	}
}

// TestServeStatelessAnonymousScope: an unauthenticated stateless caller
// reads what unauthenticated stateless calls made, never a session's.
func TestServeStatelessAnonymousScope(t *testing.T) {
	t.Parallel()
	c, g := newStatelessServer(t, nil)
	sess := connect(t, g)
	call := sess.result("tools/call", toolCall("big", `{"bytes":7000}`))
	uri := call.Get(`content.#(type=="resource_link").uri`).String()
	if uri == "" {
		t.Fatalf("no artifact: %s", call.Raw)
	}
	if _, res := c.post("", "resources/read", statelessParams(`{"uri":"`+uri+`"}`, ""), nil); res.Get("error.code").Int() != codeUnknownResource {
		t.Errorf("an anonymous stateless caller read a session's artifact: %s", res.Raw)
	}
	_, res := c.post("", "tools/call", statelessParams(`{"name":"big","arguments":{"bytes":8000}}`, ""), nil)
	own := res.Get(`result.content.#(type=="resource_link").uri`).String()
	if _, res := c.post("", "resources/read", statelessParams(`{"uri":"`+own+`"}`, ""), nil); !res.Get("result.contents.0.blob").Exists() {
		t.Errorf("an anonymous stateless caller cannot read its own artifact: %s", res.Raw)
	}
}

// codeUnknownResource is the code of a refused artifact read: the same as
// for an id that does not exist, so a refusal does not tell another
// principal that the artifact exists.
var codeUnknownResource = int64(jsonrpc.ToRPCError(jsonrpc.ErrUnknownResource).Code)

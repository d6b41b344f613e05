package gateway

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
)

// stubAsker makes the stub an upstream that asks its client things: tool
// "ask" sends the request {method, params} of its arguments to the
// gateway and returns the answer as text (isError for an error answer);
// "caps" returns the capabilities the gateway declared in initialize;
// "hang" never answers; "state" returns its pid, how many initializes
// and notifications/roots/list_changed it got, and the answer to the
// roots/list it sends on each of the latter.
const stubAsker = "asker"

func askerStub(t testing.TB) config.ServerConfig {
	c := stubServer(t)
	c.Env = map[string]string{stubEnv: stubAsker}
	return c
}

func runAskerStub() {
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	write := func(s string) { out.WriteString(s + "\n"); out.Flush() }
	var caps string
	asks := map[string]string{} // our request id → the tools/call id it serves
	n := 0
	// what TestServeRootsChangeWithoutRestart checks: the process, its
	// initializes, the roots/list_changed it got and its last roots/list
	initializes, listChanged, lastRoots := 0, 0, "null"
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			return
		}
		id := gjson.GetBytes(line, "id").Raw
		result := func(callID, res string) { write(`{"jsonrpc":"2.0","id":` + callID + `,"result":` + res + `}`) }
		method := gjson.GetBytes(line, "method").String()
		if method == "" && strings.HasPrefix(id, `"roots-`) {
			lastRoots = gjson.GetBytes(line, "result").Raw
			if lastRoots == "" {
				lastRoots = gjson.GetBytes(line, "error").Raw
			}
			continue
		}
		if method == "" && id != "" {
			callID, ok := asks[id]
			if !ok {
				continue
			}
			delete(asks, id)
			isErr := gjson.GetBytes(line, "error").Exists()
			answer := gjson.GetBytes(line, "result").Raw
			if isErr {
				answer = gjson.GetBytes(line, "error").Raw
			}
			text, _ := json.Marshal(answer)
			result(callID, `{"content":[{"type":"text","text":`+string(text)+`}],"isError":`+strconv.FormatBool(isErr)+`}`)
			continue
		}
		switch method {
		case "initialize":
			initializes++
			caps = gjson.GetBytes(line, "params.capabilities").Raw
			result(id, `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"asker","version":"1"}}`)
		case "notifications/roots/list_changed":
			listChanged++
			write(`{"jsonrpc":"2.0","id":"roots-` + strconv.Itoa(listChanged) + `","method":"roots/list"}`)
		case "tools/list":
			result(id, `{"tools":[{"name":"ask","inputSchema":{"type":"object"}},{"name":"caps","inputSchema":{"type":"object"}},{"name":"hang","inputSchema":{"type":"object"}},{"name":"state","inputSchema":{"type":"object"}}]}`)
		case "tools/call":
			switch gjson.GetBytes(line, "params.name").String() {
			case "ask":
				n++
				ask := `"ask-` + strconv.Itoa(n) + `"`
				asks[ask] = id
				params := gjson.GetBytes(line, "params.arguments.params").Raw
				if params == "" {
					params = "{}"
				}
				write(`{"jsonrpc":"2.0","id":` + ask + `,"method":` + gjson.GetBytes(line, "params.arguments.method").Raw + `,"params":` + params + `}`)
			case "caps":
				text, _ := json.Marshal(caps)
				result(id, `{"content":[{"type":"text","text":`+string(text)+`}]}`)
			case "state":
				state := fmt.Sprintf(`{"pid":%d,"initializes":%d,"listChanged":%d,"roots":%s}`, os.Getpid(), initializes, listChanged, lastRoots)
				text, _ := json.Marshal(state)
				result(id, `{"content":[{"type":"text","text":`+string(text)+`}]}`)
			case "hang":
			}
		case "ping":
			result(id, `{}`)
		default: // server/discover: the stub is of the 2025-11-25 era
			if id != "" {
				write(`{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32601,"message":"method not found"}}`)
			}
		}
	}
}

// waitRequest waits (bounded) for a request from the gateway to the
// client and returns its id and params.
func (c *client) waitRequest(method string, d time.Duration) (string, gjson.Result) {
	c.t.Helper()
	deadline := time.After(d)
	for {
		select {
		case n := <-c.notes:
			if gjson.GetBytes(n, "method").String() == method && gjson.GetBytes(n, "id").Exists() {
				return gjson.GetBytes(n, "id").Raw, gjson.GetBytes(n, "params")
			}
		case <-deadline:
			c.t.Fatalf("no %s request reached the client in %s", method, d)
			return "", gjson.Result{}
		}
	}
}

// TestServeRelaysServerRequests: an upstream's elicitation, sampling and
// roots requests made during a tool call reach the client whose call it
// is, and the client's answer goes back upstream.
func TestServeRelaysServerRequests(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, map[string]config.ServerConfig{"asker": askerStub(t)}, engine.Options{})
	c := connectWith(t, g, `{"elicitation":{},"sampling":{},"roots":{"listChanged":true}}`)
	for _, tc := range serverRequestCases {
		t.Run(tc.method, func(t *testing.T) {
			args := `{"method":"` + tc.method + `","params":` + tc.params + `}`
			_, ch := c.start("tools/call", toolCall("ask", args))
			id, params := c.waitRequest(tc.method, 30*time.Second)
			if want := gjson.Parse(tc.params); params.Raw != want.Raw {
				t.Errorf("params reached the client as %s, want %s", params.Raw, want.Raw)
			}
			c.send(`{"jsonrpc":"2.0","id":` + id + `,"result":` + tc.answer + `}`)
			var resp json.RawMessage
			select {
			case resp = <-ch:
			case <-time.After(30 * time.Second):
				t.Fatal("no tools/call response")
			}
			text := gjson.GetBytes(resp, "result.content.0.text").String()
			if gjson.GetBytes(resp, "result.isError").Bool() || !strings.Contains(text, tc.want) {
				t.Fatalf("the upstream got %s, want the client's answer with %s", resp, tc.want)
			}
		})
	}
}

// TestServeServerRequestNeedsClientCapability: a client that declared no
// elicitation is not asked; the upstream gets "method not found".
func TestServeServerRequestNeedsClientCapability(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, map[string]config.ServerConfig{"asker": askerStub(t)}, engine.Options{})
	c := connect(t, g)
	res := c.result("tools/call", toolCall("ask", `{"method":"elicitation/create","params":{"message":"?"}}`))
	text := res.Get("content.0.text").String()
	if !res.Get("isError").Bool() || !strings.Contains(text, strconv.Itoa(jsonrpc.CodeMethodNotFound)) || !strings.Contains(text, "no elicitation capability") {
		t.Fatalf("upstream got %s, want method not found for a client without elicitation", text)
	}
}

// TestServeServerRequestAmbiguous: with calls of two sessions in flight
// on one stdio upstream, a server-to-client request is refused rather
// than sent to a client it may not be meant for.
func TestServeServerRequestAmbiguous(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, map[string]config.ServerConfig{"asker": askerStub(t)}, engine.Options{})
	caps := `{"elicitation":{}}`
	a := connectWith(t, g, caps)
	b := connectWith(t, g, caps)
	a.start("tools/call", toolCall("hang", ""))
	u := g.rooms.Ups.Named("asker")
	deadline := time.Now().Add(30 * time.Second)
	for {
		if c, _ := u.Callers().Sole(); c != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("session a's call never reached the upstream")
		}
		time.Sleep(5 * time.Millisecond) // polling the gateway's state; no event to wait on
	}
	res := b.result("tools/call", toolCall("ask", `{"method":"elicitation/create","params":{"message":"?"}}`))
	if text := res.Get("content.0.text").String(); !res.Get("isError").Bool() || !strings.Contains(text, "cannot tell which client") {
		t.Fatalf("upstream got %s, want the ambiguity refused", text)
	}
	for _, c := range []*client{a, b} {
		select {
		case n := <-c.notes:
			if gjson.GetBytes(n, "method").String() == "elicitation/create" {
				t.Fatalf("a client was asked: %s", n)
			}
		default:
		}
	}
}

// TestServeRootsFromConfig: mcpx.roots gives an upstream its roots; the
// gateway declares the capability and answers roots/list itself, even for
// a client without roots.
func TestServeRootsFromConfig(t *testing.T) {
	t.Parallel()
	cfg := askerStub(t)
	if err := json.Unmarshal([]byte(`[{"uri":"file:///srv/data","name":"data"},"/var/reports"]`), &cfg.Mcpx.Roots); err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, map[string]config.ServerConfig{"asker": cfg}, engine.Options{})
	c := connect(t, g)
	declared := gjson.Parse(c.result("tools/call", toolCall("caps", "")).Get("content.0.text").String())
	if !declared.Get("roots").Exists() || declared.Get("roots.listChanged").Bool() {
		t.Errorf("declared %s, want roots without listChanged", declared.Raw)
	}
	res := c.result("tools/call", toolCall("ask", `{"method":"roots/list"}`))
	got := gjson.Parse(res.Get("content.0.text").String())
	if got.Get("roots.0.uri").String() != "file:///srv/data" || got.Get("roots.0.name").String() != "data" || got.Get("roots.1.uri").String() != "file:///var/reports" {
		t.Fatalf("roots/list answered %s", got.Raw)
	}
}

// TestServeNoRootsWithoutClientRoots: without configured roots and with
// no client that declared roots, the upstream is told of no roots
// capability, so a server that takes its folders from roots falls back
// to its own configuration instead of an empty list.
func TestServeNoRootsWithoutClientRoots(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, map[string]config.ServerConfig{"asker": askerStub(t)}, engine.Options{})
	c := connect(t, g)
	declared := gjson.Parse(c.result("tools/call", toolCall("caps", "")).Get("content.0.text").String())
	if declared.Get("roots").Exists() {
		t.Errorf("declared %s to the upstream, want no roots", declared.Raw)
	}
	if !declared.Get("elicitation").Exists() || !declared.Get("sampling").Exists() {
		t.Errorf("declared %s, want sampling and elicitation (relayed)", declared.Raw)
	}
	res := c.result("tools/call", toolCall("ask", `{"method":"roots/list"}`))
	if !res.Get("isError").Bool() {
		t.Fatalf("roots/list answered %s for a client without roots, want an error", res.Raw)
	}
}

func TestRootConfig(t *testing.T) {
	t.Parallel()
	var roots []config.Root
	if err := json.Unmarshal([]byte(`["/a b/c","file:///x",{"uri":"/y","name":"y"}]`), &roots); err != nil {
		t.Fatal(err)
	}
	want := []config.Root{{URI: "file:///a%20b/c"}, {URI: "file:///x"}, {URI: "file:///y", Name: "y"}}
	for i := range want {
		if roots[i] != want[i] {
			t.Errorf("root %d = %+v, want %+v", i, roots[i], want[i])
		}
	}
	cfg := config.ServerConfig{Command: "x", Mcpx: config.ServerOptions{Roots: []config.Root{{URI: "relative/dir"}}}}
	if err := cfg.Validate("s"); err == nil || !strings.Contains(err.Error(), "mcpx.roots[0]") {
		t.Fatalf("Validate = %v, want the bad root named", err)
	}
}

// TestServeHTTPRelaysElicitation: over streamable HTTP the tools/call
// response turns into an SSE stream that carries the upstream's
// elicitation/create first; the client POSTs its answer and the same
// stream ends with the result built from it.
func TestServeHTTPRelaysElicitation(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, map[string]config.ServerConfig{"asker": askerStub(t)}, engine.Options{})
	srv := httptest.NewServer(g.HTTPHandler(HTTPOptions{}))
	t.Cleanup(srv.Close)
	h := &httpClient{t: t, url: srv.URL, hc: &http.Client{Timeout: 60 * time.Second}}
	h.result("initialize", `{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"test","version":"1"}}`)
	resp := h.request(http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`+toolCall("ask", `{"method":"elicitation/create","params":{"message":"Your name?"}}`)+`}`, nil)
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("Content-Type %q, want an SSE stream", ct)
	}
	evs := readEvents(t, resp.Body, 1)
	ask := gjson.Parse(evs[0].data)
	if ask.Get("method").String() != "elicitation/create" || ask.Get("params.message").String() != "Your name?" {
		t.Fatalf("first event %s, want the elicitation", evs[0].data)
	}
	answer := h.request(http.MethodPost, `{"jsonrpc":"2.0","id":`+ask.Get("id").Raw+`,"result":{"action":"accept","content":{"name":"Ada"}}}`, nil)
	answer.Body.Close()
	if answer.StatusCode != http.StatusAccepted {
		t.Fatalf("posting the answer: status %d", answer.StatusCode)
	}
	rest := readEvents(t, resp.Body, -1)
	final := gjson.Parse(rest[len(rest)-1].data)
	if final.Get("id").Int() != 1 || !strings.Contains(final.Get("result.content.0.text").String(), "Ada") {
		t.Fatalf("the stream ended with %s, want the result with the client's answer", rest[len(rest)-1].data)
	}
}

// serverRequestCases are an upstream's requests to the client, with the
// client's answer and what the upstream must find in the call's result:
// relayed to a session client (TestServeRelaysServerRequests) and bridged
// to a stateless one (TestBridgeOldUpstreamToStatelessClient).
var serverRequestCases = []struct{ method, params, answer, want string }{
	{"elicitation/create", `{"message":"Your name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}`,
		`{"action":"accept","content":{"name":"Ada"}}`, `"name":"Ada"`},
	{"sampling/createMessage", `{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":10}`,
		`{"role":"assistant","content":{"type":"text","text":"hello"},"model":"m"}`, `"text":"hello"`},
	{"roots/list", `{}`, `{"roots":[{"uri":"file:///home/ada","name":"home"}]}`, `file:///home/ada`},
}

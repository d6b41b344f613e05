package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
)

const listenedURI = "file:///watched.txt"

// nextNote returns the next notification the client got (bounded).
func (c *client) nextNote(d time.Duration) (gjson.Result, bool) {
	select {
	case n := <-c.notes:
		return gjson.ParseBytes(n), true
	case <-time.After(d):
		return gjson.Result{}, false
	}
}

// drainNotes returns the notifications already received.
func (c *client) drainNotes() []gjson.Result {
	var out []gjson.Result
	for {
		select {
		case n := <-c.notes:
			out = append(out, gjson.ParseBytes(n))
		default:
			return out
		}
	}
}

const subscriptionIDPath = `params._meta.io\.modelcontextprotocol/subscriptionId`

// TestSubscriptionsListenStdio: a 2026-07-28 client over stdio opens
// subscriptions/listen; the gateway acknowledges what it grants, sends
// exactly the notifications asked for (list changes, one resource's
// updates; no log messages), each tagged with the request's id, subscribes
// upstream for the resource, and on notifications/cancelled ends the
// stream with a tagged result and drops the upstream subscription.
func TestSubscriptionsListenStdio(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, map[string]config.ServerConfig{"stub": resourceStub(t, "stub")}, engine.Options{})
	c := connectStateless(t, g)
	id, done := c.start("subscriptions/listen", statelessParams(`{"notifications":{"toolsListChanged":true,"promptsListChanged":true,"resourceSubscriptions":["`+listenedURI+`"]}}`, ""))
	ack, ok := c.nextNote(30 * time.Second)
	if !ok || ack.Get("method").String() != "notifications/subscriptions/acknowledged" {
		t.Fatalf("first message on the stream: %s", ack.Raw)
	}
	if ack.Get(subscriptionIDPath).Raw != id {
		t.Errorf("ack tagged %s, want %s", ack.Get(subscriptionIDPath).Raw, id)
	}
	granted := ack.Get("params.notifications")
	if !granted.Get("toolsListChanged").Bool() || granted.Get("promptsListChanged").Bool() || granted.Get("resourceSubscriptions.0").String() != listenedURI {
		t.Errorf("granted %s: want tools list changes and the resource, no prompts (the stub has none)", granted.Raw)
	}
	if n := g.rooms.Subs.Count(listenedURI); n != 1 {
		t.Errorf("subscribers of %s: %d", listenedURI, n)
	}

	c.result("tools/call", statelessParams(`{"name":"log"}`, ""))
	c.result("tools/call", statelessParams(`{"name":"grow"}`, ""))
	n, ok := c.nextNote(30 * time.Second)
	if !ok || n.Get("method").String() != "notifications/tools/list_changed" || n.Get(subscriptionIDPath).Raw != id {
		t.Fatalf("after grow the stream got %s, want a tagged tools/list_changed (and no log message)", n.Raw)
	}
	c.result("tools/call", statelessParams(`{"name":"touch","arguments":{"uri":"`+listenedURI+`"}}`, ""))
	n, ok = c.nextNote(30 * time.Second)
	if !ok || n.Get("method").String() != "notifications/resources/updated" || n.Get("params.uri").String() != listenedURI || n.Get(subscriptionIDPath).Raw != id {
		t.Fatalf("after touch the stream got %s", n.Raw)
	}

	c.notify("notifications/cancelled", `{"requestId":`+id+`,"reason":"done"}`)
	select {
	case resp := <-done:
		if gjson.GetBytes(resp, `result._meta.io\.modelcontextprotocol/subscriptionId`).Raw != id || gjson.GetBytes(resp, "result.resultType").String() != "complete" {
			t.Fatalf("the stream ended with %s", resp)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the stream did not end on notifications/cancelled")
	}
	if n := g.rooms.Subs.Count(listenedURI); n != 0 {
		t.Errorf("subscribers of %s after the stream ended: %d", listenedURI, n)
	}
	c.result("tools/call", statelessParams(`{"name":"touch","arguments":{"uri":"`+listenedURI+`"}}`, ""))
	c.result("tools/call", statelessParams(`{"name":"grow"}`, ""))
	c.result("tools/call", statelessParams(`{"name":"echo"}`, ""))
	for _, n := range c.drainNotes() {
		if m := n.Get("method").String(); m != "notifications/tools/list_changed" || n.Get(subscriptionIDPath).Exists() {
			t.Errorf("after the stream ended the client got %s", n.Raw)
		}
	}
}

// TestSubscriptionsListenErrors: a listen without a filter is invalid
// params; an empty filter is acknowledged and ends at once; a resource of
// a server the gateway does not have is refused with the URI named.
func TestSubscriptionsListenErrors(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, map[string]config.ServerConfig{"stub": stubServer(t)}, engine.Options{})
	c := connectStateless(t, g)
	if r := c.call("subscriptions/listen", statelessParams(`{}`, "")); gjson.GetBytes(r, "error.code").Int() != jsonrpc.CodeInvalidParams {
		t.Errorf("listen without notifications: %s", r)
	}
	r := c.result("subscriptions/listen", statelessParams(`{"notifications":{}}`, ""))
	if !r.Get(`_meta.io\.modelcontextprotocol/subscriptionId`).Exists() {
		t.Errorf("empty filter: %s", r.Raw)
	}
	if n, ok := c.nextNote(10 * time.Second); !ok || n.Get("method").String() != "notifications/subscriptions/acknowledged" {
		t.Errorf("empty filter: no ack: %s", n.Raw)
	}
	resp := c.call("subscriptions/listen", statelessParams(`{"notifications":{"resourceSubscriptions":["mcpx://upstream/nosuch/x"]}}`, ""))
	if gjson.GetBytes(resp, "error.code").Int() != jsonrpc.CodeInvalidParams || !strings.Contains(gjson.GetBytes(resp, "error.message").String(), "mcpx://upstream/nosuch/x") {
		t.Errorf("a resource no upstream serves: %s", resp)
	}
	if r := c.call("subscriptions/listen", `{"notifications":{}}`); gjson.GetBytes(r, "error.code").Int() != jsonrpc.CodeMethodNotFound {
		t.Errorf("listen in the session era: %s", r)
	}
}

// TestSubscriptionsListenHTTP: over streamable HTTP the stream is the
// request's SSE response, kept alive with comments while idle; closing it
// ends the subscription.
func TestSubscriptionsListenHTTP(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, map[string]config.ServerConfig{"stub": resourceStub(t, "stub")}, engine.Options{})
	srv := httptest.NewServer(g.HTTPHandler(HTTPOptions{KeepAlive: 20 * time.Millisecond}))
	t.Cleanup(srv.Close)
	c := statelessHTTP{t: t, url: srv.URL}
	params := statelessParams(`{"notifications":{"toolsListChanged":true,"resourceSubscriptions":["`+listenedURI+`"]}}`, "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader(`{"jsonrpc":"2.0","id":"L1","method":"subscriptions/listen","params":`+params+`}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("listen answered %d %s", resp.StatusCode, ct)
	}
	events := make(chan gjson.Result, 16)
	kept := make(chan struct{}, 1)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				events <- gjson.Parse(d)
			} else if strings.HasPrefix(sc.Text(), ": keepalive") {
				select {
				case kept <- struct{}{}:
				default:
				}
			}
		}
		close(events)
	}()
	next := func() gjson.Result {
		t.Helper()
		select {
		case e := <-events:
			return e
		case <-time.After(30 * time.Second):
			t.Fatal("no event on the listen stream")
			return gjson.Result{}
		}
	}
	if e := next(); e.Get("method").String() != "notifications/subscriptions/acknowledged" || e.Get(subscriptionIDPath).String() != "L1" {
		t.Fatalf("first event: %s", e.Raw)
	}
	select {
	case <-kept:
	case <-time.After(30 * time.Second):
		t.Fatal("no keepalive comment on the idle stream")
	}
	c.post("", "tools/call", statelessParams(`{"name":"grow"}`, ""), nil)
	if e := next(); e.Get("method").String() != "notifications/tools/list_changed" || e.Get(subscriptionIDPath).String() != "L1" {
		t.Fatalf("after grow: %s", e.Raw)
	}
	c.post("", "tools/call", statelessParams(`{"name":"touch","arguments":{"uri":"`+listenedURI+`"}}`, ""), nil)
	if e := next(); e.Get("method").String() != "notifications/resources/updated" || e.Get("params.uri").String() != listenedURI {
		t.Fatalf("after touch: %s", e.Raw)
	}
	cancel()
	deadline := time.Now().Add(30 * time.Second)
	for g.rooms.Subs.Count(listenedURI) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the subscription outlived the closed stream")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSubscriptionsListenGoSDK: the go-sdk client (v1.8.0) at 2026-07-28
// opens subscriptions/listen itself when it has a tools list-changed
// handler and the server declares list changes; through mcpx it hears of
// the upstream's new tool.
func TestSubscriptionsListenGoSDK(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, map[string]config.ServerConfig{"stub": stubServer(t)}, engine.Options{})
	srv := httptest.NewServer(g.HTTPHandler(HTTPOptions{}))
	t.Cleanup(srv.Close)
	changed := make(chan struct{}, 4)
	cl := gosdk.NewClient(&gosdk.Implementation{Name: "listen-test", Version: "1"}, &gosdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *gosdk.ToolListChangedRequest) { changed <- struct{}{} },
	})
	ctx, cs := dialGoSDKStateless(t, cl, srv.URL)
	if _, err := cs.CallTool(ctx, &gosdk.CallToolParams{Name: "grow", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("the go-sdk client did not hear of the list change")
	}
	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	if !strings.Contains(strings.Join(names, ","), "extra") {
		t.Errorf("tools after the change: %v", names)
	}
	b, _ := json.Marshal(names)
	t.Logf("tools: %s", b)
}

// TestSubscriptionsListenShutdown: the gateway's shutdown ends an open
// stream with its tagged result.
func TestSubscriptionsListenShutdown(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, map[string]config.ServerConfig{"stub": stubServer(t)}, engine.Options{})
	c := connectStateless(t, g)
	id, done := c.start("subscriptions/listen", statelessParams(`{"notifications":{"toolsListChanged":true}}`, ""))
	if n, ok := c.nextNote(30 * time.Second); !ok || n.Get("method").String() != "notifications/subscriptions/acknowledged" {
		t.Fatalf("no ack: %s", n.Raw)
	}
	go g.Close(context.Background())
	select {
	case resp := <-done:
		if gjson.GetBytes(resp, `result._meta.io\.modelcontextprotocol/subscriptionId`).Raw != id {
			t.Fatalf("the stream ended with %s", resp)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the stream outlived the gateway")
	}
}

// dialGoSDKStateless connects cl to the gateway at url in the stateless
// revision (2026-07-28), failing the test unless it settles on it. The
// session and the returned context, which bounds the test's calls to a
// minute, end with the test.
func dialGoSDKStateless(t *testing.T, cl *gosdk.Client, url string) (context.Context, *gosdk.ClientSession) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	cs, err := cl.Connect(ctx, &gosdk.StreamableClientTransport{Endpoint: url}, &gosdk.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("settled on %s", v)
	}
	return ctx, cs
}

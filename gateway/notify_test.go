package gateway

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
	"github.com/mcpx-dev/mcpx/gateway/internal/router"
	"github.com/mcpx-dev/mcpx/internal/syncbuf"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

// TestNotificationsForwarded checks that an upstream's log messages reach
// every session (tagged with the server as logger) and that its
// tools/list_changed reloads the tool list before clients hear of it.
func TestNotificationsForwarded(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, map[string]config.ServerConfig{"stub": stubServer(t)}, engine.Options{})
	c := connect(t, g)
	other := connect(t, g)
	c.result("logging/setLevel", `{"level":"debug"}`)

	if txt := c.result("tools/call", toolCall("log", "")).Get("content.0.text").String(); txt != "logged" {
		t.Fatalf("log tool: %q", txt)
	}
	for name, cl := range map[string]*client{"caller": c, "other session": other} {
		p, ok := cl.waitNote("notifications/message", 10*time.Second)
		if !ok {
			t.Fatalf("%s: no notifications/message", name)
		}
		if p.Get("level").String() != "warning" || p.Get("logger").String() != "stub" || p.Get("data.note").String() != "from the stub" {
			t.Errorf("%s: log message %s", name, p.Raw)
		}
	}

	if slices.Contains(toolNames(c), "extra") {
		t.Fatal("extra listed before grow")
	}
	c.result("tools/call", toolCall("grow", ""))
	for name, cl := range map[string]*client{"caller": c, "other session": other} {
		if _, ok := cl.waitNote("notifications/tools/list_changed", 10*time.Second); !ok {
			t.Fatalf("%s: no notifications/tools/list_changed", name)
		}
	}
	if names := toolNames(c); !slices.Contains(names, "extra") {
		t.Fatalf("after list_changed the tools are %v", names)
	}
	if v := c.result("tools/call", toolCall("extra", `{"v":"new"}`)).Get("structuredContent.v").String(); v != "new" {
		t.Errorf("the new tool: %q", v)
	}
}

func toolNames(c *client) []string {
	var out []string
	for _, n := range c.result("tools/list", "").Get("tools.#.name").Array() {
		out = append(out, n.Str)
	}
	return out
}

// pages follows nextCursor through method's pages (at most 50) and
// returns field of every item under key, in order.
func pages(t *testing.T, c *client, method, key, field string) []string {
	t.Helper()
	var out []string
	cursor := ""
	for page := 0; ; page++ {
		if page == 50 {
			t.Fatalf("%s: more than 50 pages", method)
		}
		p := "{}"
		if cursor != "" {
			p = `{"cursor":"` + cursor + `"}`
		}
		r := c.result(method, p)
		for _, v := range r.Get(key + ".#." + field).Array() {
			out = append(out, v.Str)
		}
		if cursor = r.Get("nextCursor").String(); cursor == "" {
			return out
		}
	}
}

// TestTemplatesPaginationAcrossUpstreams lists resource templates of two
// upstreams with two pages each: every template once, in server then page
// order, then the artifact template.
func TestTemplatesPaginationAcrossUpstreams(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, map[string]config.ServerConfig{"a": resourceStub(t, "a"), "b": resourceStub(t, "b")}, engine.Options{})
	c := connect(t, g)
	got := pages(t, c, "resources/templates/list", "resourceTemplates", "uriTemplate")
	want := []string{"stub://a/t1/{x}", "stub://a/t2/{x}", "stub://b/t1/{x}", "stub://b/t2/{x}", engine.URIScheme + "{id}"}
	if !slices.Equal(got, want) {
		t.Fatalf("templates across pages:\n got %q\nwant %q", got, want)
	}
	// a cursor from the middle resumes there
	first := c.result("resources/templates/list", "{}")
	second := c.result("resources/templates/list", `{"cursor":"`+first.Get("nextCursor").String()+`"}`)
	if v := second.Get("resourceTemplates.0.uriTemplate").String(); v != "stub://a/t2/{x}" {
		t.Errorf("second page starts with %q", v)
	}
	if code := gjson.GetBytes(c.call("resources/templates/list", `{"cursor":"eyJzIjotMX0"}`), "error.code").Int(); code != jsonrpc.CodeInvalidParams {
		t.Errorf("negative source in a cursor: code %d", code)
	}
}

// TestResourceURICollision lists, reads and subscribes to a URI that two
// upstreams both serve: the first server keeps the bare URI, the second's
// is listed as mcpx://upstream/b/shared://readme; reads and updates go to
// the server each form names, and the collision is logged once.
func TestResourceURICollision(t *testing.T) {
	t.Parallel()
	var logBuf syncbuf.Buffer
	log := hclog.New(&hclog.LoggerOptions{Name: "test", Level: hclog.Warn, Output: &logBuf})
	g, err := New(Options{Servers: map[string]config.ServerConfig{"a": resourceStub(t, "a"), "b": resourceStub(t, "b")}, Engine: engine.Options{Store: memstore.New(memstore.Config{})}, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	g.Start(context.Background())
	t.Cleanup(func() { _ = g.Close(context.Background()) })
	c := connect(t, g)

	const bare = "shared://readme"
	alias := router.UpstreamURIPrefix + "b/" + bare
	got := pages(t, c, "resources/list", "resources", "uri")
	want := []string{"stub://a/r1", bare, "stub://a/r2", "stub://b/r1", alias, "stub://b/r2"}
	if !slices.Equal(got, want) {
		t.Fatalf("resources across pages:\n got %q\nwant %q", got, want)
	}
	if n := strings.Count(logBuf.String(), "resource URI collision"); n != 1 || !strings.Contains(logBuf.String(), "first=a server=b") {
		t.Errorf("collision logged %d times:\n%s", n, logBuf.String())
	}
	pages(t, c, "resources/list", "resources", "uri") // listing again logs nothing new
	if n := strings.Count(logBuf.String(), "resource URI collision"); n != 1 {
		t.Errorf("collision logged %d times after a second listing", n)
	}

	for uri, text := range map[string]string{bare: "from a: " + bare, alias: "from b: " + bare, router.UpstreamURIPrefix + "a/stub://a/r2": "from a: stub://a/r2"} {
		r := c.result("resources/read", `{"uri":"`+uri+`"}`)
		if r.Get("contents.0.text").String() != text || r.Get("contents.0.uri").String() != uri {
			t.Errorf("read %s: %s", uri, r.Raw)
		}
	}
	if code := gjson.GetBytes(c.call("resources/read", `{"uri":"`+router.UpstreamURIPrefix+`nope/x://y"}`), "error.code").Int(); code != jsonrpc.CodeResourceNotFound {
		t.Errorf("namespaced URI of no server: code %d", code)
	}

	other := connect(t, g)
	c.result("resources/subscribe", `{"uri":"`+bare+`"}`)
	other.result("resources/subscribe", `{"uri":"`+alias+`"}`)
	c.result("tools/call", toolCall("b_touch", `{"uri":"`+bare+`"}`))
	if p, ok := other.waitNote("notifications/resources/updated", 10*time.Second); !ok || p.Get("uri").String() != alias {
		t.Errorf("b's update reached its subscriber as %s (ok %v)", p.Raw, ok)
	}
	if p, ok := c.waitNote("notifications/resources/updated", 200*time.Millisecond); ok {
		t.Errorf("a subscriber of a's %s heard of b's update: %s", bare, p.Raw)
	}
	c.result("tools/call", toolCall("a_touch", `{"uri":"`+bare+`"}`))
	if p, ok := c.waitNote("notifications/resources/updated", 10*time.Second); !ok || p.Get("uri").String() != bare {
		t.Errorf("a's update reached its subscriber as %s (ok %v)", p.Raw, ok)
	}
	if p, ok := other.waitNote("notifications/resources/updated", 200*time.Millisecond); ok {
		t.Errorf("the subscriber of b's copy heard of a's update: %s", p.Raw)
	}
	// the generated read tool of b takes its namespaced URI too
	if txt := c.result("tools/call", toolCall("b_resources_read", `{"uri":"`+alias+`"}`)).Raw; !strings.Contains(txt, "from b: "+bare) {
		t.Errorf("b_resources_read of %s: %s", alias, txt)
	}
}

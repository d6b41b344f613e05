package gateway

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
	"github.com/mcpx-dev/mcpx/gateway/internal/upstream"
	"github.com/mcpx-dev/mcpx/internal/syncbuf"
	"github.com/mcpx-dev/mcpx/store"
)

func TestToolsForwardedRaw(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, map[string]config.ServerConfig{"stub": stubServer(t)}, engine.Options{})
	c := connect(t, g)
	tools := c.result("tools/list", "").Get("tools")
	echo := tools.Get(`#(name=="echo")`)
	if !echo.Exists() {
		t.Fatalf("echo missing from %s", tools.Raw)
	}
	for _, want := range []string{`"$schema":"https://json-schema.org/draft/2020-12/schema"`, `"anyOf":[{"type":"string"},{"type":"null"}]`, `"title":"Echo"`, `"outputSchema":{"type":"object"}`} {
		if !strings.Contains(echo.Raw, want) {
			t.Errorf("echo schema lost %s: %s", want, echo.Raw)
		}
	}
	res := c.result("tools/call", toolCall("echo", `{"v":"hi"}`))
	if res.Get("structuredContent.v").String() != "hi" || res.Get("_meta.k").String() != "v" || res.Get("content.0.annotations.audience.0").String() != "user" {
		t.Errorf("result lost structure: %s", res.Raw)
	}
}

func TestCrashedUpstreamRestarts(t *testing.T) {
	t.Parallel()
	var log syncbuf.Buffer
	g := newGatewayWith(t, Options{Servers: map[string]config.ServerConfig{"stub": stubServer(t)}, Logger: hclog.New(&hclog.LoggerOptions{Output: &log, Level: hclog.Info})})
	c := connect(t, g)
	r := c.call("tools/call", toolCall("crash", ""))
	e := gjson.GetBytes(r, "error")
	// the client gets the code and an error id, never the upstream's
	// stderr (it may hold secrets); the log has both
	msg := e.Get("message").String()
	id := regexp.MustCompile(`error_id=([0-9a-f]+)`).FindStringSubmatch(msg)
	if e.Get("code").Int() != jsonrpc.CodeUpstreamUnavailable || strings.Contains(msg, "crashing on purpose") || id == nil {
		t.Fatalf("crash: want code %d with an error id and no stderr, got %s", jsonrpc.CodeUpstreamUnavailable, r)
	}
	logged := regexp.MustCompile(`(?m)^.*error_id=` + id[1] + `.*$`).FindString(log.String())
	if !strings.Contains(logged, "[WARN]") || !strings.Contains(logged, "crashing on purpose") {
		t.Fatalf("log line of error %s: %q\nlog:\n%s", id[1], logged, log.String())
	}
	// the gateway stays up and the upstream comes back: its status says
	// so, then a call goes through
	waitFor(t, "the upstream is ready again after a restart", func() bool {
		st := g.Status()[0]
		return st.Restarts >= 1 && st.State == upstream.StateReady
	})
	if r = c.call("tools/call", toolCall("echo", `{"v":"back"}`)); gjson.GetBytes(r, "result.structuredContent.v").String() != "back" {
		t.Fatalf("after the restart: %s", r)
	}
}

func TestHungUpstreamTimesOut(t *testing.T) {
	t.Parallel()
	s := stubServer(t)
	s.Timeout = store.Duration(2 * time.Second) // also bounds the stub's start, slow under -race
	g := newTestGateway(t, map[string]config.ServerConfig{"stub": s}, engine.Options{})
	// a start slower than the timeout under load is retried: wait for it
	waitFor(t, "the stub is ready", func() bool { return g.Status()[0].State == upstream.StateReady })
	c := connect(t, g)
	r := c.call("tools/call", toolCall("hang", ""))
	if code := gjson.GetBytes(r, "error.code").Int(); code != jsonrpc.CodeUpstreamTimeout {
		t.Fatalf("hang: want code %d, got %s", jsonrpc.CodeUpstreamTimeout, r)
	}
	if v := c.result("tools/call", toolCall("echo", `{"v":"ok"}`)).Get("structuredContent.v").String(); v != "ok" {
		t.Fatalf("after a timeout: %q", v)
	}
}

func TestInvalidJSONFromUpstream(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, map[string]config.ServerConfig{"stub": stubServer(t)}, engine.Options{})
	c := connect(t, g)
	r := c.call("tools/call", toolCall("badjson", ""))
	if code := gjson.GetBytes(r, "error.code").Int(); code != jsonrpc.CodeUpstreamInvalid {
		t.Fatalf("badjson: want code %d, got %s", jsonrpc.CodeUpstreamInvalid, r)
	}
	if v := c.result("tools/call", toolCall("echo", `{"v":"ok"}`)).Get("structuredContent.v").String(); v != "ok" {
		t.Fatalf("after invalid JSON: %q", v)
	}
}

func TestStderrDrained(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, map[string]config.ServerConfig{"stub": stubServer(t)}, engine.Options{})
	c := connect(t, g)
	// 1 MiB of stderr before the answer: a proxy that does not read
	// stderr blocks the upstream at 64 KiB and this call never returns.
	if txt := c.result("tools/call", toolCall("flood", "")).Get("content.0.text").String(); txt != "flooded" {
		t.Fatalf("flood: %q", txt)
	}
}

func TestClientDisconnectMidCall(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, map[string]config.ServerConfig{"stub": stubServer(t)}, engine.Options{})
	a := connect(t, g)
	b := connect(t, g)
	a.start("tools/call", toolCall("hang", ""))
	waitFor(t, "the hang call reaches the upstream", func() bool {
		return strings.Contains(stderrTail(g, "stub"), "stub: hanging")
	})
	a.w.Close() // the client leaves mid-call
	select {
	case err := <-a.done:
		if err != nil {
			t.Fatalf("ServeStdio after disconnect: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("session did not end after its client left")
	}
	if v := b.result("tools/call", toolCall("echo", `{"v":"other"}`)).Get("structuredContent.v").String(); v != "other" {
		t.Fatalf("other session: %q", v)
	}
}

func TestUnknownToolAndMethod(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, map[string]config.ServerConfig{"stub": stubServer(t)}, engine.Options{})
	c := connect(t, g)
	if code := gjson.GetBytes(c.call("tools/call", toolCall("nope", "")), "error.code").Int(); code != jsonrpc.CodeInvalidParams {
		t.Errorf("unknown tool: code %d", code)
	}
	if code := gjson.GetBytes(c.call("bogus/method", ""), "error.code").Int(); code != jsonrpc.CodeMethodNotFound {
		t.Errorf("unknown method: code %d", code)
	}
	c.send(`{"jsonrpc":"2.0","id":99,"method":`)
}

func TestNamespacedWithSeveralUpstreams(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, map[string]config.ServerConfig{"a": stubServer(t), "b": stubServer(t)}, engine.Options{})
	c := connect(t, g)
	tools := c.result("tools/list", "").Get("tools.#.name").Array()
	seen := map[string]bool{}
	for _, n := range tools {
		if seen[n.Str] {
			t.Errorf("duplicate tool name %s", n.Str)
		}
		seen[n.Str] = true
	}
	if !seen["a_echo"] || !seen["b_echo"] || seen["echo"] {
		t.Fatalf("names: %v", tools)
	}
	if v := c.result("tools/call", toolCall("b_echo", `{"v":"B"}`)).Get("structuredContent.v").String(); v != "B" {
		t.Fatalf("b_echo: %q", v)
	}
}

func TestImageBecomesArtifactReadableBack(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, map[string]config.ServerConfig{"stub": stubServer(t)}, engine.Options{})
	c := connect(t, g)
	res := c.result("tools/call", toolCall("image", ""))
	if strings.Contains(res.Raw, pngB64) {
		t.Fatalf("base64 reached the model: %s", res.Raw)
	}
	uri := res.Get(`content.#(type=="resource_link").uri`).String()
	if !strings.HasPrefix(uri, engine.URIScheme) {
		t.Fatalf("no artifact link: %s", res.Raw)
	}
	read := c.result("resources/read", `{"uri":"`+uri+`"}`)
	if read.Get("contents.0.blob").String() != pngB64 || read.Get("contents.0.mimeType").String() != "image/png" {
		t.Fatalf("read back: %s", read.Raw)
	}
	listed := c.result("resources/list", "").Get("resources.#.uri").Array()
	found := false
	for _, u := range listed {
		found = found || u.Str == uri
	}
	if !found {
		t.Errorf("artifact not listed: %v", listed)
	}
	// another (unauthenticated) session may not read it, nor see it
	// listed; it is told the artifact is unknown
	other := connect(t, g)
	if code := gjson.GetBytes(other.call("resources/read", `{"uri":"`+uri+`"}`), "error.code").Int(); code != int64(jsonrpc.ToRPCError(jsonrpc.ErrUnknownResource).Code) {
		t.Errorf("other session read: code %d", code)
	}
	if strings.Contains(other.result("resources/list", "").Raw, uri) {
		t.Errorf("other session lists this session's artifact")
	}
}

// stderrTail returns the last stderr lines of the named stdio upstream's
// current connection ("" before it has one).
func stderrTail(g *Gateway, server string) string {
	return g.rooms.Ups.Named(server).StderrTail()
}

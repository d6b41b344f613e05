package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway/config"
)

// stubModern makes the stub a server that speaks only 2026-07-28: it
// refuses initialize, answers server/discover, serves only requests that
// carry the stateless _meta, and its tool "mrtr" answers input_required
// until its input request "q" is answered. It serves one
// subscriptions/listen stream at a time: "grow" announces a tools list
// change and "touch" an update of its "uri" on it when its filter asks,
// and "filter" answers with the open stream's filter.
const stubModern = "modern"

func runModernStub() {
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	write := func(s string) { out.WriteString(s + "\n"); out.Flush() }
	listenID, filter := "", "null"
	tag := func(params string) string {
		p, _ := sjson.SetRaw(params, `_meta.io\.modelcontextprotocol/subscriptionId`, listenID)
		return p
	}
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			return
		}
		id := gjson.GetBytes(line, "id").Raw
		if id == "" {
			if gjson.GetBytes(line, "method").String() == "notifications/cancelled" && listenID != "" && gjson.GetBytes(line, "params.requestId").Raw == listenID {
				write(`{"jsonrpc":"2.0","id":` + listenID + `,"result":` + tag(`{"resultType":"complete"}`) + `}`)
				listenID, filter = "", "null"
			}
			continue
		}
		result := func(res string) { write(`{"jsonrpc":"2.0","id":` + id + `,"result":` + res + `}`) }
		fail := func(code int, msg string) {
			m, _ := json.Marshal(msg)
			write(`{"jsonrpc":"2.0","id":` + id + `,"error":{"code":` + strconv.Itoa(code) + `,"message":` + string(m) + `}}`)
		}
		method := gjson.GetBytes(line, "method").String()
		if method == "initialize" {
			fail(-32601, "initialize was removed in 2026-07-28")
			continue
		}
		if gjson.GetBytes(line, `params._meta.io\.modelcontextprotocol/protocolVersion`).String() != "2026-07-28" {
			fail(-32602, "missing _meta protocolVersion")
			continue
		}
		switch method {
		case "server/discover":
			result(`{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{"listChanged":true},"resources":{"subscribe":true}},"serverInfo":{"name":"modern","version":"1"},"resultType":"complete"}`)
		case "subscriptions/listen":
			listenID, filter = id, gjson.GetBytes(line, "params.notifications").Raw
			write(`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":` + tag(`{"notifications":`+filter+`}`) + `}`)
		case "tools/list":
			result(`{"tools":[{"name":"mrtr","inputSchema":{"type":"object"}},{"name":"grow","inputSchema":{"type":"object"}},{"name":"touch","inputSchema":{"type":"object"}},{"name":"filter","inputSchema":{"type":"object"}}],"resultType":"complete"}`)
		case "tools/call":
			switch gjson.GetBytes(line, "params.name").String() {
			case "grow":
				if gjson.Get(filter, "toolsListChanged").Bool() {
					write(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":` + tag(`{}`) + `}`)
				}
				result(`{"resultType":"complete","content":[{"type":"text","text":"grown"}]}`)
				continue
			case "touch":
				uri := gjson.GetBytes(line, "params.arguments.uri").String()
				for _, u := range gjson.Get(filter, "resourceSubscriptions").Array() {
					if u.String() == uri {
						p, _ := sjson.Set(`{}`, "uri", uri)
						write(`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":` + tag(p) + `}`)
					}
				}
				result(`{"resultType":"complete","content":[{"type":"text","text":"touched"}]}`)
				continue
			case "filter":
				text, _ := json.Marshal(filter)
				result(`{"resultType":"complete","content":[{"type":"text","text":` + string(text) + `}]}`)
				continue
			}
			if ans := gjson.GetBytes(line, "params.inputResponses.q"); ans.Exists() {
				text, _ := json.Marshal("state=" + gjson.GetBytes(line, "params.requestState").String() + " answer=" + ans.Raw)
				result(`{"resultType":"complete","content":[{"type":"text","text":` + string(text) + `}]}`)
			} else {
				result(`{"resultType":"input_required","inputRequests":{"q":{"method":"elicitation/create","params":{"message":"Sure?","requestedSchema":{"type":"object","properties":{}}}}},"requestState":"s1"}`)
			}
		default:
			fail(-32601, "method not found")
		}
	}
}

// TestUpstreamStatelessOnly: an upstream that refuses initialize and
// answers server/discover with 2026-07-28 is served statelessly: its
// tools are listed, a session client's call that comes back
// input_required is bridged into an elicitation/create request, and a
// stateless client gets the upstream's input_required unchanged.
func TestUpstreamStatelessOnly(t *testing.T) {
	t.Parallel()
	cfg := stubServer(t)
	cfg.Env = map[string]string{stubEnv: stubModern}
	g := newTestGateway(t, map[string]config.ServerConfig{"modern": cfg}, engine.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g.WaitReady(ctx)
	if !g.rooms.Ups.Named("modern").StatelessOnly() {
		t.Fatal("the upstream was not recognised as stateless-only")
	}
	c := connectWith(t, g, `{"elicitation":{}}`)
	if l := c.result("tools/list", ""); !strings.Contains(l.Raw, `"mrtr"`) {
		t.Fatalf("tools/list: %s", l.Raw)
	}
	_, ch := c.start("tools/call", toolCall("mrtr", `{}`))
	id, params := c.waitRequest("elicitation/create", 30*time.Second)
	if params.Get("message").String() != "Sure?" {
		t.Fatalf("the client was asked %s", params.Raw)
	}
	c.send(`{"jsonrpc":"2.0","id":` + id + `,"result":{"action":"accept","content":{"ok":true}}}`)
	var resp json.RawMessage
	select {
	case resp = <-ch:
	case <-time.After(30 * time.Second):
		t.Fatal("no tools/call response")
	}
	if text := gjson.GetBytes(resp, "result.content.0.text").String(); !strings.Contains(text, "state=s1") || !strings.Contains(text, `"ok":true`) {
		t.Fatalf("session tools/call: %s", resp)
	}
	first := c.result("tools/call", statelessParams(`{"name":"mrtr"}`, ""))
	if first.Get("resultType").String() != "input_required" || first.Get("requestState").String() != "s1" || first.Get("inputRequests.q.method").String() != "elicitation/create" {
		t.Fatalf("stateless tools/call: %s", first.Raw)
	}
}

// TestUpstreamListen: a stateless-only upstream announces changes only on
// subscriptions/listen. The gateway opens the stream for the list changes
// the upstream declares, adds a resource when a session-era client
// subscribes to it (resources/subscribe answers once the upstream
// acknowledged), passes what arrives on to clients without the
// upstream's tag, and drops the resource from the filter on
// resources/unsubscribe.
func TestUpstreamListen(t *testing.T) {
	t.Parallel()
	cfg := stubServer(t)
	cfg.Env = map[string]string{stubEnv: stubModern}
	g := newTestGateway(t, map[string]config.ServerConfig{"modern": cfg}, engine.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g.WaitReady(ctx)
	c := connect(t, g)
	filter := func() gjson.Result {
		return gjson.Parse(c.result("tools/call", toolCall("filter", "")).Get("content.0.text").String())
	}
	waitFilter := func(what string, ok func(gjson.Result) bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for f := filter(); !ok(f); f = filter() {
			if time.Now().After(deadline) {
				t.Fatalf("the upstream's listen filter is %s, want %s", f.Raw, what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFilter("tools list changes", func(f gjson.Result) bool { return f.Get("toolsListChanged").Bool() })

	c.result("resources/subscribe", `{"uri":"`+listenedURI+`"}`)
	if f := filter(); f.Get("resourceSubscriptions.0").String() != listenedURI || !f.Get("toolsListChanged").Bool() {
		t.Fatalf("after resources/subscribe the upstream listens for %s", f.Raw)
	}
	c.result("tools/call", toolCall("touch", `{"uri":"`+listenedURI+`"}`))
	p, ok := c.waitNote("notifications/resources/updated", 30*time.Second)
	if !ok || p.Get("uri").String() != listenedURI || p.Get("_meta").Exists() {
		t.Fatalf("resources/updated reached the client as %s (want the URI, no upstream tag)", p.Raw)
	}
	c.result("tools/call", toolCall("grow", ""))
	if _, ok := c.waitNote("notifications/tools/list_changed", 30*time.Second); !ok {
		t.Fatal("the upstream's tools/list_changed did not reach the client")
	}

	c.result("resources/unsubscribe", `{"uri":"`+listenedURI+`"}`)
	waitFilter("no resource, tools list changes", func(f gjson.Result) bool {
		return !f.Get("resourceSubscriptions.0").Exists() && f.Get("toolsListChanged").Bool()
	})
}

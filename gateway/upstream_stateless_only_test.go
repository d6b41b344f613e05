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

	"github.com/mcpx-dev/mcpx/engine"
)

// stubModern makes the stub a server that speaks only 2026-07-28: it
// refuses initialize, answers server/discover, serves only requests that
// carry the stateless _meta, and its tool "mrtr" answers input_required
// until its input request "q" is answered.
const stubModern = "modern"

func runModernStub() {
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	write := func(s string) { out.WriteString(s + "\n"); out.Flush() }
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			return
		}
		id := gjson.GetBytes(line, "id").Raw
		if id == "" {
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
			result(`{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"serverInfo":{"name":"modern","version":"1"},"resultType":"complete"}`)
		case "tools/list":
			result(`{"tools":[{"name":"mrtr","inputSchema":{"type":"object"}}],"resultType":"complete"}`)
		case "tools/call":
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
// stateless client gets the upstream's input_required unchanged (issue 9).
func TestUpstreamStatelessOnly(t *testing.T) {
	cfg := stubServer(t)
	cfg.Env = map[string]string{stubEnv: stubModern}
	g := newTestGateway(t, map[string]ServerConfig{"modern": cfg}, engine.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g.WaitReady(ctx)
	if !g.ups["modern"].statelessOnly.Load() {
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

package upstream

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/tidwall/gjson"

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

// TestStatelessParamsUpstream: a remote upstream's session-era connection
// gets a stateless request without the protocol keys of its _meta (its
// Mcp-Protocol-Version header would contradict them); the call's own
// _meta stays, and a stdio upstream gets the request as it is.
func TestStatelessParamsUpstream(t *testing.T) {
	in := json.RawMessage(statelessParams(`{"name":"echo"}`, `,"progressToken":"p1","io.modelcontextprotocol/logLevel":"info"`))
	remote := &lanes{cfg: config.ServerConfig{URL: "http://127.0.0.1:1/mcp"}}
	out := remote.statelessParams(in)
	if strings.Contains(string(out), "io.modelcontextprotocol/") || gjson.GetBytes(out, "_meta.progressToken").String() != "p1" || gjson.GetBytes(out, "name").String() != "echo" {
		t.Errorf("remote upstream gets %s", out)
	}
	bare := remote.statelessParams(json.RawMessage(statelessParams(`{"name":"echo"}`, "")))
	if gjson.GetBytes(bare, "_meta").Exists() {
		t.Errorf("an emptied _meta is kept: %s", bare)
	}
	local := &lanes{cfg: config.ServerConfig{Command: "x"}}
	if got := local.statelessParams(in); string(got) != string(in) {
		t.Errorf("stdio upstream gets %s, want the request as it is", got)
	}
}

// TestWithStatelessMeta: a request the gateway builds for a stateless
// client carries the client's protocol keys upstream; its own keys win,
// and the client's bytes are not written.
func TestWithStatelessMeta(t *testing.T) {
	meta := json.RawMessage(`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}},"traceparent":"x"}`)
	got := withStatelessMeta(json.RawMessage(`{"cursor":"c2"}`), meta)
	if gjson.GetBytes(got, `_meta.io\.modelcontextprotocol/protocolVersion`).String() != "2026-07-28" || !gjson.GetBytes(got, `_meta.io\.modelcontextprotocol/clientCapabilities.sampling`).Exists() || gjson.GetBytes(got, "cursor").String() != "c2" {
		t.Errorf("built request %s", got)
	}
	if gjson.GetBytes(got, "_meta.traceparent").Exists() {
		t.Errorf("a non-protocol key was copied: %s", got)
	}
	if got := withStatelessMeta(nil, meta); !gjson.GetBytes(got, `_meta.io\.modelcontextprotocol/protocolVersion`).Exists() {
		t.Errorf("no params: %s", got)
	}
	own := []byte(`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`)
	keep := string(own)
	out := withStatelessMeta(own, meta)
	if string(own) != keep || gjson.GetBytes(out, `_meta.io\.modelcontextprotocol/clientCapabilities.sampling`).Exists() {
		t.Errorf("the request's own keys were changed: %s (input now %s)", out, own)
	}
	if err := (config.ServerConfig{URL: "http://x/mcp", Mcpx: config.ServerOptions{Protocol: "2099"}}).Validate("s"); err == nil || !strings.Contains(err.Error(), "mcpx.protocol") {
		t.Errorf("Validate(protocol 2099) = %v", err)
	}
}

// answerConn is a conn that answers every call with res.
type answerConn struct{ res json.RawMessage }

func (c answerConn) call(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	return c.res, nil
}
func (answerConn) notify(context.Context, string, json.RawMessage) error { return nil }
func (answerConn) done() <-chan struct{}                                 { return nil }
func (answerConn) cause() error                                          { return nil }
func (answerConn) close() error                                          { return nil }

// TestLaneResultWithoutServerInfo: a result from the stateless lane
// loses the server's identity (the gateway names itself there, and the
// go-sdk server's carries a data: URI icon the engine would otherwise
// store on every call); the rest of its _meta and the result stay.
func TestLaneResultWithoutServerInfo(t *testing.T) {
	if p := jsonrpc.MetaPath(mcp.MetaKeyServerInfo); p != pathMetaServerInfo {
		t.Fatalf("pathMetaServerInfo is %s, MetaPath gives %s", pathMetaServerInfo, p)
	}
	l := &lanes{name: "up", cfg: config.ServerConfig{Command: "up"}}
	for _, tc := range []struct{ name, res, wantMeta string }{
		{"only serverInfo", `{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"everything","icons":[{"src":"data:image/png;base64,iVBORw0KGgo="}]}},"content":[{"type":"text","text":"Hi"}]}`, ""},
		{"other keys kept", `{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"everything"},"trace":"t1"},"content":[{"type":"text","text":"Hi"}]}`, `{"trace":"t1"}`},
		{"none", `{"content":[{"type":"text","text":"Hi"}]}`, ""},
	} {
		out, err := l.call(context.Background(), answerConn{res: json.RawMessage(tc.res)}, "tools/call", json.RawMessage(statelessParams(`{"name":"greet"}`, "")))
		if err != nil {
			t.Fatal(err)
		}
		if m := gjson.GetBytes(out, "_meta"); m.Raw != tc.wantMeta || gjson.GetBytes(out, "content.0.text").String() != "Hi" {
			t.Errorf("%s: %s, want _meta %q and the content", tc.name, out, tc.wantMeta)
		}
	}
}

package upstream

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/gateway/config"
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

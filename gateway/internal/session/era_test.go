package session

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/tidwall/gjson"
)

// TestDecorate: a stateless result gets resultType (an upstream's kept),
// the gateway's identity in _meta (the rest of _meta kept) and, on lists
// and reads, caching hints, whichever path decorate takes.
func TestDecorate(t *testing.T) {
	r := &Rooms{Version: `1.2 "q"`}
	for _, tc := range []struct {
		name, method, res, resultType, keep string
	}{
		{"plain", "tools/call", `{"content":[{"type":"text","text":"Hi"}]}`, "complete", "content.0.text"},
		{"spaces", "tools/call", " {\"content\":[] }\n", "complete", "content"},
		{"empty", "tools/call", `{}`, "complete", ""},
		{"own _meta", "tools/call", `{"content":[],"_meta":{"trace":"t1"}}`, "complete", "_meta.trace"},
		{"own resultType", "tools/call", `{"resultType":"input_required","inputRequests":{"a":{}}}`, "input_required", "inputRequests.a"},
		{"go-sdk second round", "prompts/get", `{"inputRequests":{"a":{}}}`, "input_required", "inputRequests.a"},
		{"escaped key", "tools/call", `{"\u005fmeta":{"trace":"t1"}}`, "complete", "_meta.trace"},
		{"list", "tools/list", `{"tools":[]}`, "complete", "tools"},
	} {
		out := r.decorate(tc.method, json.RawMessage(`{}`), json.RawMessage(tc.res))
		if !json.Valid(out) {
			t.Errorf("%s: invalid JSON %s", tc.name, out)
			continue
		}
		g := gjson.ParseBytes(out)
		switch {
		case g.Get("resultType").String() != tc.resultType:
			t.Errorf("%s: resultType in %s, want %s", tc.name, out, tc.resultType)
		case g.Get(`_meta.io\.modelcontextprotocol/serverInfo.name`).String() != "mcpx" || g.Get(`_meta.io\.modelcontextprotocol/serverInfo.version`).String() != r.Version:
			t.Errorf("%s: no gateway identity in %s", tc.name, out)
		case tc.keep != "" && !g.Get(tc.keep).Exists():
			t.Errorf("%s: %s lost in %s", tc.name, tc.keep, out)
		case (tc.method == "tools/list") != g.Get("ttlMs").Exists():
			t.Errorf("%s: caching hints in %s", tc.name, out)
		}
	}
}

// TestDecorateInputParams: every input request of a stateless result
// reaches the client with params (an empty object where the upstream
// wrote none; the go-sdk client fails the call without them), keys that
// an sjson path would have to escape included; params an entry has are
// kept as they are.
func TestDecorateInputParams(t *testing.T) {
	r := &Rooms{Version: "1"}
	for _, tc := range []struct{ name, res, want string }{
		{"roots without params", `{"resultType":"input_required","inputRequests":{"r":{"method":"roots/list"}},"requestState":"s"}`,
			`{"r":{"method":"roots/list","params":{}}}`},
		{"keys with path characters", `{"inputRequests":{"a.b":{"method":"roots/list"},"c*":{"method":"elicitation/create","params":{"message":"m"}}}}`,
			`{"a.b":{"method":"roots/list","params":{}},"c*":{"method":"elicitation/create","params":{"message":"m"}}}`},
		{"all with params", `{"resultType":"input_required","inputRequests":{"q":{"method":"elicitation/create","params":{"message":"m"}}}}`,
			`{"q":{"method":"elicitation/create","params":{"message":"m"}}}`},
	} {
		out := r.decorate("tools/call", json.RawMessage(`{}`), json.RawMessage(tc.res))
		got := gjson.GetBytes(out, "inputRequests")
		var g, w any
		if err := json.Unmarshal([]byte(got.Raw), &g); err != nil {
			t.Errorf("%s: inputRequests %q in %s: %v", tc.name, got.Raw, out, err)
			continue
		}
		_ = json.Unmarshal([]byte(tc.want), &w)
		if !reflect.DeepEqual(g, w) || gjson.GetBytes(out, "resultType").String() != "input_required" {
			t.Errorf("%s: %s, want inputRequests %s", tc.name, out, tc.want)
		}
	}
}

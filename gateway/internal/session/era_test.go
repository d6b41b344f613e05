package session

import (
	"encoding/json"
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

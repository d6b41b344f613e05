package wasm_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/layers/wasm"
)

// FuzzBuildRequest: for any JSON result the request is valid JSON, and
// every candidate names a string of its stated length where it says.
func FuzzBuildRequest(f *testing.F) {
	f.Add([]byte(`{"content":[{"type":"text","text":"{\"a\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}"}]}`), uint8(16))
	f.Add([]byte(`{"structuredContent":{"k":"JVBERi0xLjQKJeLjz9MKMSAwIG9iago8PCAvVHlwZSAvQ2F0YWxvZyA+PgplbmRvYmoK"},"content":[{"type":"image","data":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==","mimeType":"image/png"}]}`), uint8(20))
	f.Add([]byte(`["\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9", {"a\\.b": "yyyyyyyyyyyyyyyyyyyyyyyyyyy"}]`), uint8(8))
	if b, err := os.ReadFile(filepath.Join("testdata", "docs", "tableau_download_workbook.json")); err == nil {
		f.Add(b, uint8(255))
	}
	f.Fuzz(func(t *testing.T, raw []byte, threshold uint8) {
		if !json.Valid(raw) || hasDuplicateKeys(raw) {
			return // a path names the first of duplicate keys only
		}
		d := layer.NewDoc(engine.Call{Server: "s", Tool: "t"}, raw)
		if d.Err() != nil {
			return
		}
		long := int(threshold)
		if long < 8 {
			long = 8
		}
		req := wasm.BuildRequest(d, wasm.ModeCustom, nil, long)
		if !json.Valid(req) {
			t.Fatalf("request is not JSON: %s", req)
		}
		r := gjson.ParseBytes(req)
		for _, c := range r.Get("candidates").Array() {
			src := d.Raw
			if c.Get("target").String() == "payload" {
				src = d.Carriers()[0].Payload
			}
			v := gjson.GetBytes(src, c.Get("path").String())
			if c.Get("path").String() == "" {
				v = gjson.ParseBytes(src) // the root
			}
			if v.Type != gjson.String || int64(len(v.Raw)-2) != c.Get("len").Int() {
				t.Fatalf("candidate %s does not name a string of len %d in %s (got %s)", c.Raw, c.Get("len").Int(), src, v.Raw)
			}
		}
	})
}

// hasDuplicateKeys reports whether an object in raw repeats a key.
func hasDuplicateKeys(raw []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(raw))
	type frame struct {
		obj  bool
		keys map[string]bool
		key  bool // the next token of an object is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.obj && top.key {
			if k, ok := tok.(string); ok {
				if top.keys[k] {
					return true
				}
				top.keys[k] = true
				top.key = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			if top != nil && top.obj {
				top.key = true
			}
			stack = append(stack, &frame{obj: true, keys: map[string]bool{}, key: true})
			continue
		case json.Delim('['):
			if top != nil && top.obj {
				top.key = true
			}
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			continue
		}
		if top != nil && top.obj {
			top.key = true
		}
	}
}

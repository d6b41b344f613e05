package wasm_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/layers/wasm"
)

func TestBuildRequest(t *testing.T) {
	t.Parallel()
	pdf := base64.StdEncoding.EncodeToString([]byte("%PDF-1.7\n" + strings.Repeat("stream data ", 100)))
	text := strings.Repeat("é long text line\n", 30)
	payload := `{"name":"Q3","pdf":"` + pdf + `","notes":"` + strings.ReplaceAll(text, "\n", `\n`) + `","small":"x"}`
	raw := `{"content":[{"type":"text","text":"hello"},{"type":"image","data":"` + base64.StdEncoding.EncodeToString(append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 400)...)) + `","mimeType":"image/png"}],"structuredContent":` + payload + `}`
	d := layer.NewDoc(engine.Call{Server: "srv", Tool: "tl", Arguments: []byte(`{"id":7}`)}, []byte(raw))
	req := wasm.BuildRequest(d, wasm.ModeCustom, []byte(`{"k":"v"}`), 256)
	if !gjson.ValidBytes(req) {
		t.Fatalf("request is not JSON: %s", req)
	}
	r := gjson.ParseBytes(req)
	for path, want := range map[string]string{
		"abi": "1", "mode": "custom", "server": "srv", "tool": "tl", "arguments.id": "7", "config.k": "v",
		"payload.name": "Q3", "payload.small": "x",
		"payload.pdf.$mcpx": "long_string", "payload.pdf.mime": "application/pdf", "payload.pdf.encoding": "base64",
		"payload.notes.mime": "text/plain", "payload.notes.encoding": "text",
		"result.content.1.data.mime": "image/png", "result.structuredContent.$mcpx": "payload",
		"result.content.0.text": "hello",
	} {
		if got := r.Get(strings.ReplaceAll(path, "$", `\$`)).String(); got != want {
			t.Errorf("%s = %q, want %q", path, got, want)
		}
	}
	if got := r.Get("payload.pdf.len").Int(); got != int64(len(pdf)) {
		t.Errorf("payload.pdf.len = %d, want %d", got, len(pdf))
	}
	if h := r.Get("payload.notes.head").String(); !strings.HasPrefix(text, h) || len(h) > 64 || len(h) < 60 {
		t.Errorf("head %q: want a prefix of the text of at most 64 bytes", h)
	}
	var cands []string
	for _, c := range r.Get("candidates").Array() {
		cands = append(cands, c.Get("target").String()+":"+c.Get("path").String()+":"+c.Get("mime").String())
	}
	want := "payload:pdf:application/pdf payload:notes:text/plain result:content.1.data:image/png"
	if strings.Join(cands, " ") != want {
		t.Errorf("candidates = %v, want %s", cands, want)
	}
	if i, j := strings.Index(string(req), `"candidates"`), strings.Index(string(req), `"payload"`); i < 0 || j < i {
		t.Errorf("candidates should come before the skeletons: %s", req)
	}
	if len(req) > 3000 {
		t.Errorf("request is %d bytes: the skeleton should not carry the long strings", len(req))
	}

	// A non-MCP document: the payload is all of it and result is null.
	d = layer.NewDoc(engine.Call{}, []byte(`{"a":"`+pdf+`"}`))
	r = gjson.ParseBytes(wasm.BuildRequest(d, wasm.ModeRewrites, nil, 256))
	if r.Get("result").Type != gjson.Null || r.Get("payload.a.mime").String() != "application/pdf" || r.Get("config").Raw != "{}" {
		t.Errorf("raw document request: %s", r.Raw)
	}
}

// TestParseResponseKeepsTheDecoderError: a response that is not JSON is
// ErrBadResponse with the decoder's *json.SyntaxError (its offset) kept.
func TestParseResponseKeepsTheDecoderError(t *testing.T) {
	_, err := wasm.ParseResponse([]byte(`{"rewrites":[] nope}`), wasm.ModeRewrites)
	var se *json.SyntaxError
	if !errors.Is(err, wasm.ErrBadResponse) || !errors.As(err, &se) {
		t.Fatalf("err = %v, want ErrBadResponse wrapping a *json.SyntaxError", err)
	}
}

func TestParseResponse(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, in string
		mode     wasm.Mode
		want     int
		err      string
	}{
		{"empty", `{"rewrites":[]}`, wasm.ModeRewrites, 0, ""},
		{"one", `{"rewrites":[{"path":"a.b","action":"artifact","encoding":"base64","summary":"{size}"}]}`, wasm.ModeRewrites, 1, ""},
		{"payload", `{"payload":{"x":1}}`, wasm.ModeCustom, 1, ""},
		{"payload in rewrites mode", `{"payload":{"x":1}}`, wasm.ModeRewrites, 0, "custom mode"},
		{"both", `{"payload":{},"rewrites":[{"path":"a","action":"drop"}]}`, wasm.ModeCustom, 0, "both"},
		{"bad action", `{"rewrites":[{"path":"a","action":"zap"}]}`, wasm.ModeRewrites, 0, `action "zap"`},
		{"no action", `{"rewrites":[{"path":"a"}]}`, wasm.ModeRewrites, 0, "action is required"},
		{"bad path", `{"rewrites":[{"path":"a|b","action":"drop"}]}`, wasm.ModeRewrites, 0, "unsupported gjson syntax"},
		{"drop root", `{"rewrites":[{"path":"","action":"drop"}]}`, wasm.ModeRewrites, 0, "payload root"},
		{"bad encoding", `{"rewrites":[{"path":"a","action":"artifact","encoding":"hex"}]}`, wasm.ModeRewrites, 0, "encoding"},
		{"unknown field", `{"rewrites":[],"extra":1}`, wasm.ModeRewrites, 0, "unknown field"},
		{"trailing", `{"rewrites":[]} {}`, wasm.ModeRewrites, 0, "trailing"},
		{"not json", `nope`, wasm.ModeRewrites, 0, "invalid character"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rws, err := wasm.ParseResponse([]byte(tc.in), tc.mode)
			if tc.err != "" {
				if !errors.Is(err, wasm.ErrBadResponse) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want ErrBadResponse saying %q", err, tc.err)
				}
				return
			}
			if err != nil || len(rws) != tc.want {
				t.Fatalf("got %d rewrites, %v; want %d", len(rws), err, tc.want)
			}
			if tc.name == "payload" && (rws[0].Path != "" || rws[0].Action != layer.ActionReplace || string(rws[0].Value) != `{"x":1}`) {
				t.Fatalf("payload became %+v, want a replace at the root", rws[0])
			}
		})
	}
}

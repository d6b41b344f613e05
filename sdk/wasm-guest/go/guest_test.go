package guest_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	guest "github.com/mcpx-dev/mcpx/sdk/wasm-guest/go"
)

func TestAppendString(t *testing.T) {
	for _, s := range []string{"", "plain", `quote " and \ back`, "line\nbreak\ttab\r", "\x00\x01\x1f", "é 😀 中文", "bad \xff utf8 \xc3", "</script>"} {
		got := guest.Quote(s)
		var back string
		if err := json.Unmarshal([]byte(got), &back); err != nil {
			t.Fatalf("%q -> %s: %v", s, got, err)
		}
		want := s
		if !utf8.ValidString(s) {
			want = strings.ToValidUTF8(s, "\ufffd")
		}
		if back != want {
			t.Errorf("%q -> %s -> %q", s, got, back)
		}
	}
}

func TestResponseJSON(t *testing.T) {
	r := &guest.Response{}
	r.Add(guest.Rewrite{Path: "a.b", Target: guest.Result, Action: guest.Artifact, Encoding: guest.Base64, Verify: true,
		MIME: "application/pdf", Filename: "{.name}.pdf", Summary: "x \"y\"", Keep: 5, KeepLast: 3, Form: guest.FormBlock,
		MinSize: 10, Meta: map[string]string{"z": "1", "a": "2"}})
	r.Add(guest.Rewrite{Path: "c", Action: guest.Replace, Value: []byte(`{"k":[1,2]}`), Splat: false})
	b := r.AppendJSON(nil)
	var v struct {
		Rewrites []map[string]any `json:"rewrites"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if len(v.Rewrites) != 2 || v.Rewrites[0]["verify"] != true || v.Rewrites[0]["keep"].(float64) != 5 || v.Rewrites[0]["keep_last"].(float64) != 3 || v.Rewrites[1]["value"] == nil {
		t.Fatalf("%s", b)
	}
	if !strings.Contains(string(b), `"meta":{"a":"2","z":"1"}`) {
		t.Fatalf("meta keys not sorted: %s", b)
	}
	if got := string((&guest.Response{Payload: []byte(`[1]`)}).AppendJSON(nil)); got != `{"payload":[1]}` {
		t.Fatal(got)
	}
	var nilResp *guest.Response
	if got := string(nilResp.AppendJSON(nil)); got != `{"rewrites":[]}` {
		t.Fatal(got)
	}
}

// The handler registered for the package's tests.
func init() {
	guest.Register(func(req *guest.Request) (*guest.Response, error) {
		switch req.Tool() {
		case "fail":
			return nil, errors.New("cannot do that")
		case "badpayload":
			return &guest.Response{Payload: []byte(`{`)}, nil
		case "log":
			guest.Log(guest.LevelInfo, "hello")
			v, _ := guest.GetValue("x")
			return &guest.Response{Payload: v}, nil
		}
		var out guest.Response
		for _, c := range req.Candidates() {
			if c.IsBinary() {
				out.Add(guest.Rewrite{Path: c.Path, Target: c.Target, Action: guest.Artifact, Encoding: guest.Base64})
			}
		}
		if long, ok := guest.Long(req.Payload().Get("data")); !ok || long.MIME != "application/pdf" {
			return nil, errors.New("no stub")
		}
		return &out, nil
	})
}

const request = `{"abi":1,"mode":"custom","server":"s","tool":"t","arguments":null,
 "candidates":[{"target":"payload","path":"data","len":400,"head":"JVBE","mime":"application/pdf","encoding":"base64"},
               {"target":"payload","path":"note","len":300,"head":"hi","mime":"text/plain","encoding":"text"}],
 "config":{},"payload":{"data":{"$mcpx":"long_string","len":400,"head":"JVBE","mime":"application/pdf","encoding":"base64"}},"result":null}`

func TestHandle(t *testing.T) {
	out, isErr := guest.Handle([]byte(request))
	if isErr || gjson.GetBytes(out, "rewrites.#").Int() != 1 || gjson.GetBytes(out, "rewrites.0.path").String() != "data" {
		t.Fatalf("%s %v", out, isErr)
	}
	for tool, want := range map[string]string{"fail": "cannot do that", "badpayload": "not valid JSON"} {
		out, isErr := guest.Handle([]byte(strings.Replace(request, `"tool":"t"`, `"tool":"`+tool+`"`, 1)))
		if !isErr || !strings.Contains(string(out), want) {
			t.Errorf("%s: %s %v", tool, out, isErr)
		}
	}
	out, isErr = guest.Handle([]byte(strings.Replace(request, `"abi":1`, `"abi":2`, 1)))
	if !isErr || !strings.Contains(string(out), "ABI version 2") {
		t.Errorf("abi 2: %s", out)
	}
	var logged string
	guest.TestHost.Log = func(l guest.Level, msg string) { logged = msg }
	guest.TestHost.Values = map[string][]byte{"x": []byte(`{"full":true}`)}
	out, isErr = guest.Handle([]byte(strings.Replace(request, `"tool":"t"`, `"tool":"log"`, 1)))
	if isErr || string(out) != `{"payload":{"full":true}}` || logged != "hello" {
		t.Errorf("log: %s %v %q", out, isErr, logged)
	}
}

package jsonrpc

import (
	"errors"
	"strings"
	"testing"
)

// TestParseTooDeep: gjson's validator recursed once per level, so a line
// of 8,000,000 "[" ended the process with a stack overflow; Parse refuses
// a message past MaxDepth before any recursive reader sees it, and reads
// one at MaxDepth.
func TestParseTooDeep(t *testing.T) {
	nest := func(n int) []byte {
		return []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"v":` +
			strings.Repeat("[", n) + strings.Repeat("]", n) + `}}}`)
	}
	_, err := Parse(nest(8_000_000))
	if !errors.Is(err, ErrInvalidJSON) || !errors.Is(err, ErrTooDeep) || !strings.Contains(err.Error(), "at most 100000 levels") {
		t.Fatalf("8,000,000 levels: %v, want ErrInvalidJSON and ErrTooDeep naming the limit", err)
	}
	m, err := Parse(nest(MaxDepth - 3)) // the message's own objects are 3 levels
	if err != nil || m.Method != "tools/call" {
		t.Fatalf("%d levels: %v, %+v", MaxDepth, err, m)
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in      string
		err     error  // matched with errors.Is; nil: no error
		id      string // the id Parse returns, even with an error
		kind    string // request, notification, response
		message string // the error's text, when it has no sentinel
	}{
		{in: `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}`, id: "7", kind: "request"},
		{in: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, kind: "notification"},
		{in: `{"jsonrpc":"2.0","id":"a","result":{"x":1}}`, id: `"a"`, kind: "response"},
		{in: `{"jsonrpc":"2.0","id":3,"method":"x","params":{`, err: ErrInvalidJSON, id: "3"},
		{in: `[{"jsonrpc":"2.0","id":1,"method":"x"}]`, err: ErrBatch},
		{in: `"hello"`, err: ErrNotObject},
		{in: `{"jsonrpc":"2.0","id":1,"method":5}`, id: "1", message: "json-rpc method is not a string"},
		{in: `{"jsonrpc":"2.0","id":1,"error":"no"}`, id: "1", message: "json-rpc error object: json: cannot unmarshal string into Go value of type jsonrpc.Error"},
		{in: `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`, err: ErrNoMethodNorID},
	} {
		m, err := Parse([]byte(tc.in))
		switch {
		case tc.err != nil && !errors.Is(err, tc.err), tc.message != "" && (err == nil || err.Error() != tc.message), tc.err == nil && tc.message == "" && err != nil:
			t.Errorf("%s: error %v, want %v %q", tc.in, err, tc.err, tc.message)
			continue
		}
		if m != nil && string(m.ID) != tc.id {
			t.Errorf("%s: id %s, want %s", tc.in, m.ID, tc.id)
		}
		if tc.kind != "" && (m.IsRequest() != (tc.kind == "request") || m.IsNotification() != (tc.kind == "notification") || m.IsResponse() != (tc.kind == "response")) {
			t.Errorf("%s: not a %s", tc.in, tc.kind)
		}
	}
	// The id read from broken JSON is marked as a guess, which
	// no error answer may echo.
	if m, _ := Parse([]byte(`{"jsonrpc":"2.0","id":7,"method":`)); m == nil || !m.IDGuessed || string(m.ID) != "7" {
		t.Errorf("broken JSON: %+v, want id 7 marked IDGuessed", m)
	}
	if m, _ := Parse([]byte(`{"jsonrpc":"2.0","id":7,"method":"x"}`)); m == nil || m.IDGuessed {
		t.Errorf("valid JSON: %+v, want IDGuessed false", m)
	}
	// A null-id error response keeps its error object: the HTTP
	// transports answer with it the request it came back to.
	m, _ := Parse([]byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`))
	if m == nil || m.Error == nil || m.Error.Code != -32700 || !m.HasID || m.ID != nil {
		t.Errorf("null-id error response: %+v", m)
	}
}

// The parts of a message are sub-slices of its bytes: a large result is
// not copied.
func TestParseKeepsPartsInPlace(t *testing.T) {
	b := []byte(`{"jsonrpc":"2.0","id":1,"result":{"big":"xxxxxxxx"}}`)
	m, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if &m.Result[0] != &b[len(`{"jsonrpc":"2.0","id":1,"result":`)] {
		t.Error("the result was copied")
	}
}

func TestEncodeRequest(t *testing.T) {
	if got := string(EncodeRequest([]byte("4"), "tools/call", []byte(`{"name":"a\"b"}`))); got != `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"a\"b"}}` {
		t.Errorf("request: %s", got)
	}
	if got := string(EncodeRequest(nil, `notifications/x"y`, nil)); got != `{"jsonrpc":"2.0","method":"notifications/x\"y"}` {
		t.Errorf("notification: %s", got)
	}
}

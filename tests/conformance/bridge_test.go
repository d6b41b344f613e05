package conformance

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// post sends one JSON-RPC message to url with hdr and returns the
// response and its messages (the body, or an SSE stream's events, each
// handed to onEvent as it arrives).
func post(t *testing.T, url string, hdr map[string]string, body string, onEvent func(gjson.Result)) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		if len(b) > 0 && onEvent != nil {
			onEvent(gjson.ParseBytes(b))
		}
		return resp
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && onEvent != nil {
			onEvent(gjson.Parse(d))
		}
	}
	return resp
}

const statelessMeta = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},"io.modelcontextprotocol/clientInfo":{"name":"bridge-test","version":"1"}}`

// statelessCall is one 2026-07-28 tools/call through url; it returns the
// result.
func statelessCall(t *testing.T, url, params string) gjson.Result {
	t.Helper()
	params, _ = sjson.SetRaw(params, "_meta", statelessMeta)
	var got gjson.Result
	post(t, url, map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": gjson.Get(params, "name").String()},
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`+params+`}`, func(m gjson.Result) {
			if m.Get("id").Exists() && !m.Get("method").Exists() {
				got = m
			}
		})
	if !got.Get("result").Exists() {
		t.Fatalf("tools/call %s: %s", params, got.Raw)
	}
	return got.Get("result")
}

// TestBridgeOldServerNewClient: the go-sdk server held to 2025-11-25
// (mcpx.protocol) asks for input with elicitation/create, which mcpx
// turns into an input_required result for a 2026-07-28 client, under its
// own keys and an authenticated requestState; the client's retry answers
// the server's request and the call completes. A tampered requestState is
// refused.
func TestBridgeOldServerNewClient(t *testing.T) {
	tl := needTools(t)
	url := tl.viaMcpx(t, map[string]any{"command": tl.server, "mcpx": map[string]any{"protocol": "2025-11-25"}}, true)
	call := `{"name":"test_input_required_result_elicitation","arguments":{}}`
	first := statelessCall(t, url, call)
	if first.Get("resultType").String() != "input_required" {
		t.Fatalf("first round: %s", first.Raw)
	}
	var key string
	var req gjson.Result
	first.Get("inputRequests").ForEach(func(k, v gjson.Result) bool { key, req = k.String(), v; return true })
	if req.Get("method").String() != "elicitation/create" || req.Get("params.message").String() != "What is your name?" {
		t.Fatalf("inputRequests: %s", first.Get("inputRequests").Raw)
	}
	if key == "user_name" {
		t.Fatalf("the server's own key reached the client: it was served in 2026-07-28, not bridged")
	}
	state := first.Get("requestState").String()
	retry, _ := sjson.SetRaw(call, "inputResponses."+key, `{"action":"accept","content":{"name":"Ada"}}`)
	// Flip one character of the signature to another: replacing the tail
	// with a fixed string is no change when the signature ends with it.
	i := len(state) - 5
	flip := byte('A')
	if state[i] == 'A' {
		flip = 'B'
	}
	tampered, _ := sjson.Set(retry, "requestState", state[:i]+string(flip)+state[i+1:])
	var bad gjson.Result
	post(t, url, map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "test_input_required_result_elicitation"},
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":`+mustSetMeta(tampered)+`}`, func(m gjson.Result) { bad = m })
	if bad.Get("error.code").Int() != -32602 {
		t.Errorf("tampered requestState: %s, want invalid params", bad.Raw)
	}
	retry, _ = sjson.Set(retry, "requestState", state)
	done := statelessCall(t, url, retry)
	if done.Get("resultType").String() != "complete" || done.Get("content.0.text").String() != "Hello, Ada!" {
		t.Fatalf("retry: %s", done.Raw)
	}
}

func mustSetMeta(params string) string {
	out, _ := sjson.SetRaw(params, "_meta", statelessMeta)
	return out
}

// TestBridgeNewServerOldClient: a 2025-11-25 session client calls the
// go-sdk server's input_required tool through mcpx: the client is asked
// elicitation/create on the call's stream, and its answer completes the
// call.
func TestBridgeNewServerOldClient(t *testing.T) {
	tl := needTools(t)
	url := tl.viaMcpx(t, map[string]any{"command": tl.server}, true)
	hdr := map[string]string{}
	resp := post(t, url, hdr, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"bridge-test","version":"1"}}}`, nil)
	sid := resp.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatal("no session id")
	}
	hdr["Mcp-Session-Id"] = sid
	hdr["Mcp-Protocol-Version"] = "2025-11-25"
	post(t, url, hdr, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil)
	var asked, result gjson.Result
	var answered sync.WaitGroup
	defer answered.Wait()
	post(t, url, hdr, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"test_input_required_result_elicitation","arguments":{}}}`, func(m gjson.Result) {
		switch {
		case m.Get("method").String() == "elicitation/create":
			asked = m
			answer, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(m.Get("id").Raw), "result": map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}})
			answered.Add(1)
			go func() { // the stream stays open until the answer is in
				defer answered.Done()
				req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(string(answer)))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				for k, v := range hdr {
					req.Header.Set(k, v)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Errorf("answering elicitation/create: %v", err)
					return
				}
				resp.Body.Close()
			}()
		case m.Get("id").Int() == 2 && !m.Get("method").Exists():
			result = m
		}
	})
	if asked.Get("params.message").String() != "What is your name?" {
		t.Fatalf("the client was not asked: %s", asked.Raw)
	}
	if result.Get("result.content.0.text").String() != "Hello, Ada!" {
		t.Fatalf("tools/call: %s", result.Raw)
	}
}

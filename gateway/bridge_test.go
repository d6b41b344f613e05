package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
	"github.com/mcpx-dev/mcpx/gateway/internal/session"
)

// bridgeParams is a stateless tools/call of the asker stub's "ask" tool
// by a client with caps.
func bridgeParams(method, askParams, caps string) string {
	p := `{"name":"ask","arguments":{"method":"` + method + `","params":` + askParams + `},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}}`
	return p
}

// retryParams is params with the client's answers and the requestState.
func retryParams(params, state string, responses map[string]string) string {
	out := params
	for k, v := range responses {
		out, _ = sjson.SetRaw(out, "inputResponses."+k, v)
	}
	out, _ = sjson.Set(out, "requestState", state)
	return out
}

func newBridgeServer(t *testing.T, tokens map[string]string) statelessHTTP {
	g := newTestGateway(t, map[string]config.ServerConfig{"asker": askerStub(t)}, engine.Options{})
	srv := httptest.NewServer(g.HTTPHandler(HTTPOptions{Tokens: tokens}))
	t.Cleanup(srv.Close)
	return statelessHTTP{t: t, url: srv.URL}
}

// TestBridgeOldUpstreamToStatelessClient: a 2025-11-25 upstream's
// elicitation, sampling and roots requests during a 2026-07-28 client's
// call reach the client as an input_required result; its retry with
// inputResponses and the requestState resumes the call, whose result
// carries the answer the upstream got.
func TestBridgeOldUpstreamToStatelessClient(t *testing.T) {
	t.Parallel()
	c := newBridgeServer(t, nil)
	caps := `{"elicitation":{},"sampling":{},"roots":{}}`
	for _, tc := range serverRequestCases {
		t.Run(tc.method, func(t *testing.T) {
			params := bridgeParams(tc.method, tc.params, caps)
			st, res := c.post("", "tools/call", params, nil)
			r := res.Get("result")
			if st != http.StatusOK || r.Get("resultType").String() != "input_required" {
				t.Fatalf("first round: %d %s", st, res.Raw)
			}
			var key string
			var req gjson.Result
			r.Get("inputRequests").ForEach(func(k, v gjson.Result) bool { key, req = k.String(), v; return true })
			if n := len(r.Get("inputRequests").Map()); n != 1 || req.Get("method").String() != tc.method {
				t.Fatalf("inputRequests %s: want one %s", r.Get("inputRequests").Raw, tc.method)
			}
			if req.Get("params").Raw != gjson.Parse(tc.params).Raw {
				t.Errorf("params reached the client as %s, want %s", req.Get("params").Raw, tc.params)
			}
			state := r.Get("requestState").String()
			if !strings.HasPrefix(state, session.RequestStatePrefix) {
				t.Fatalf("requestState %q is not the gateway's", state)
			}
			st, res = c.post("", "tools/call", retryParams(params, state, map[string]string{key: tc.answer}), nil)
			text := res.Get("result.content.0.text").String()
			if st != http.StatusOK || res.Get("result.resultType").String() != "complete" || res.Get("result.isError").Bool() || !strings.Contains(text, tc.want) {
				t.Fatalf("retry: %d %s, want the upstream to have got %s", st, res.Raw, tc.want)
			}
			// the state is spent: a replay finds no parked call
			st, res = c.post("", "tools/call", retryParams(params, state, map[string]string{key: tc.answer}), nil)
			if st != http.StatusBadRequest || res.Get("error.code").Int() != jsonrpc.CodeInvalidParams {
				t.Fatalf("replayed requestState: %d %s, want invalid params", st, res.Raw)
			}
		})
	}
}

// TestBridgeRequestStateAuthenticated: a tampered requestState, or one
// presented by another principal, is refused and leaves the parked call
// as it was; the rightful retry then completes it.
func TestBridgeRequestStateAuthenticated(t *testing.T) {
	t.Parallel()
	c := newBridgeServer(t, map[string]string{"tok-a": "alice", "tok-b": "bob"})
	params := bridgeParams("elicitation/create", `{"message":"Your name?","requestedSchema":{"type":"object","properties":{}}}`, `{"elicitation":{}}`)
	st, res := c.post("tok-a", "tools/call", params, nil)
	if st != http.StatusOK || res.Get("result.resultType").String() != "input_required" {
		t.Fatalf("first round: %d %s", st, res.Raw)
	}
	state := res.Get("result.requestState").String()
	var key string
	res.Get("result.inputRequests").ForEach(func(k, _ gjson.Result) bool { key = k.String(); return true })
	answer := map[string]string{key: `{"action":"accept","content":{"name":"Ada"}}`}
	body, sig, _ := strings.Cut(strings.TrimPrefix(state, session.RequestStatePrefix), ".")
	flipped := []byte(body)
	flipped[len(flipped)/2] ^= 1
	for name, tc := range map[string]struct{ token, state string }{
		"tampered payload":   {"tok-a", session.RequestStatePrefix + string(flipped) + "." + sig},
		"tampered signature": {"tok-a", session.RequestStatePrefix + body + "." + strings.Repeat("A", len(sig))},
		"malformed":          {"tok-a", session.RequestStatePrefix + "x"},
		"another principal":  {"tok-b", state},
	} {
		st, res := c.post(tc.token, "tools/call", retryParams(params, tc.state, answer), nil)
		if st != http.StatusBadRequest || res.Get("error.code").Int() != jsonrpc.CodeInvalidParams || !strings.Contains(res.Get("error.message").String(), session.ErrBadRequestState.Error()) {
			t.Errorf("%s: %d %s, want requestState rejected", name, st, res.Raw)
		}
	}
	// A retry without the answer is asked again (SEP-2322: re-request,
	// not an error), under a new requestState; the call stays parked.
	st, res = c.post("tok-a", "tools/call", retryParams(params, state, map[string]string{}), nil)
	again := res.Get("result.requestState").String()
	if st != http.StatusOK || res.Get("result.resultType").String() != "input_required" || !res.Get("result.inputRequests."+key).Exists() || !strings.HasPrefix(again, session.RequestStatePrefix) {
		t.Fatalf("retry without the answer: %d %s, want the missing key asked again", st, res.Raw)
	}
	st, res = c.post("tok-a", "tools/call", retryParams(params, again, answer), nil)
	if st != http.StatusOK || !strings.Contains(res.Get("result.content.0.text").String(), "Ada") {
		t.Fatalf("rightful retry: %d %s", st, res.Raw)
	}
}

// TestBridgeNeedsClientCapability: a stateless client that declared no
// elicitation is not asked; the upstream gets "method not found".
func TestBridgeNeedsClientCapability(t *testing.T) {
	t.Parallel()
	c := newBridgeServer(t, nil)
	st, res := c.post("", "tools/call", bridgeParams("elicitation/create", `{"message":"x","requestedSchema":{"type":"object"}}`, `{}`), nil)
	if st != http.StatusOK || res.Get("result.resultType").String() != "complete" || !res.Get("result.isError").Bool() || !strings.Contains(res.Get("result.content.0.text").String(), "-32601") {
		t.Fatalf("%d %s: want the upstream refused with method not found", st, res.Raw)
	}
}

// TestBridgeGoSDKClient: the go-sdk client (v1.8.0) at 2026-07-28
// decodes every input request's params, roots/list's included (its
// InputRequestMap unmarshals an absent params as "unexpected end of JSON
// input" and fails the call), fulfils the bridged requests itself and
// retries: each call completes with the answer the upstream got.
func TestBridgeGoSDKClient(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, map[string]config.ServerConfig{"asker": askerStub(t)}, engine.Options{})
	srv := httptest.NewServer(g.HTTPHandler(HTTPOptions{}))
	t.Cleanup(srv.Close)
	cl := gosdk.NewClient(&gosdk.Implementation{Name: "bridge-test", Version: "1"}, &gosdk.ClientOptions{
		ElicitationHandler: func(context.Context, *gosdk.ElicitRequest) (*gosdk.ElicitResult, error) {
			return &gosdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		},
		CreateMessageHandler: func(context.Context, *gosdk.CreateMessageRequest) (*gosdk.CreateMessageResult, error) {
			return &gosdk.CreateMessageResult{Role: "assistant", Content: &gosdk.TextContent{Text: "hello"}, Model: "m"}, nil
		},
	})
	cl.AddRoots(&gosdk.Root{URI: "file:///home/ada", Name: "home"})
	ctx, cs := dialGoSDKStateless(t, cl, srv.URL)
	for _, tc := range serverRequestCases {
		t.Run(tc.method, func(t *testing.T) {
			args := map[string]any{"method": tc.method, "params": json.RawMessage(tc.params)}
			res, err := cs.CallTool(ctx, &gosdk.CallToolParams{Name: "ask", Arguments: args})
			if err != nil {
				t.Fatalf("the client rejected the result: %v", err)
			}
			text := ""
			if len(res.Content) == 1 {
				if c, ok := res.Content[0].(*gosdk.TextContent); ok {
					text = c.Text
				}
			}
			if res.IsError || !strings.Contains(text, tc.want) {
				b, _ := json.Marshal(res)
				t.Fatalf("result %s, want the upstream to have got %s", b, tc.want)
			}
		})
	}
}

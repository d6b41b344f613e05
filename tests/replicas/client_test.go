package replicas

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// statelessMeta is the _meta of a 2026-07-28 request.
const statelessMeta = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// client sends stateless 2026-07-28 requests as one principal and
// records which replica answered each (haproxy's X-Mcpx-Replica).
type client struct {
	t     *testing.T
	url   string
	token string
	hc    *http.Client
	// Trail is the replica of each request, in order.
	Trail []string
}

func newClient(t *testing.T, url, token string) *client {
	return &client{t: t, url: url, token: token, hc: &http.Client{Transport: &http.Transport{}}}
}

// request builds a stateless request with the headers the revision wants.
func (c *client) request(method, params string) *http.Request {
	var p map[string]json.RawMessage
	if err := json.Unmarshal([]byte(params), &p); err != nil {
		c.t.Fatalf("params %s: %v", params, err)
	}
	p["_meta"] = json.RawMessage(statelessMeta)
	pb, _ := json.Marshal(p)
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + string(pb) + `}`
	req, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name := gjson.Get(params, "name").String(); name != "" {
		req.Header.Set("Mcp-Name", name)
	} else if uri := gjson.Get(params, "uri").String(); uri != "" {
		req.Header.Set("Mcp-Name", uri)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return req
}

// do sends one request and returns the replica that answered and the
// JSON-RPC response (the last event of an SSE answer).
func (c *client) do(method, params string) (string, gjson.Result) {
	c.t.Helper()
	resp, err := c.hc.Do(c.request(method, params))
	if err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	replica := resp.Header.Get("X-Mcpx-Replica")
	c.Trail = append(c.Trail, replica)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var last string
		for _, l := range strings.Split(string(b), "\n") {
			if d, ok := strings.CutPrefix(l, "data: "); ok {
				last = d
			}
		}
		b = []byte(last)
	}
	if resp.StatusCode != http.StatusOK {
		c.t.Fatalf("%s via %s: HTTP %d: %s", method, replica, resp.StatusCode, b)
	}
	return replica, gjson.ParseBytes(b)
}

// on sends a read-only request until the replica want answers it (round
// robin: the next one at the latest, unless another client interleaves).
func (c *client) on(want, method, params string) gjson.Result {
	c.t.Helper()
	for range 4 {
		if r, res := c.do(method, params); r == want {
			return res
		}
	}
	c.t.Fatalf("%s never reached replica %s: trail %v", method, want, c.Trail)
	return gjson.Result{}
}

// get fetches a URL through the load balancer until replica want answers.
func (c *client) get(want, url string) (int, []byte) {
	c.t.Helper()
	for range 4 {
		resp, err := c.hc.Get(url)
		if err != nil {
			c.t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		r := resp.Header.Get("X-Mcpx-Replica")
		c.Trail = append(c.Trail, r)
		if r == want {
			return resp.StatusCode, b
		}
	}
	c.t.Fatalf("GET %s never reached replica %s: trail %v", url, want, c.Trail)
	return 0, nil
}

// other is the replica that is not r.
func other(r string) string {
	if r == "r1" {
		return "r2"
	}
	return "r1"
}

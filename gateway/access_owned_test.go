package gateway

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpx-dev/mcpx/auth"
	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

// A user without a tenant reads (resources/read, artifacts_query) what
// it put, never what a tenant's user of the same name put, whoever put
// the bytes first: the first put of theirs was a third, tenant-less,
// user's; and the first put of its own was another tenant's.
func TestMCPReadNeedsAnOwnedScope(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Config{})
	put := func(data string, sc store.Scope) string {
		ref, err := st.Put(ctx, strings.NewReader(data), store.PutOptions{Namespace: "t", MIMEType: "text/plain", Scope: sc})
		if err != nil {
			t.Fatal(err)
		}
		return ref.ID
	}
	theirs := put("acme's alice's notes", store.Scope{UserID: "carol"})
	put("acme's alice's notes", store.Scope{TenantID: "acme", UserID: "alice", SessionID: "acme-session"})
	mine := put("bare alice's notes", store.Scope{TenantID: "acme", UserID: "alice"})
	put("bare alice's notes", store.Scope{UserID: "alice", SessionID: "bare-session"})

	g := newGatewayWith(t, Options{Servers: map[string]ServerConfig{"stub": stubServer(t)}, Engine: engine.Options{Store: st}})
	a := newAuth(t, auth.Config{Tokens: map[string]auth.Identity{"tok-bare": {User: "alice"}}, Limits: auth.Limits{RequestsPerSecond: -1}})
	ts := httptest.NewServer(g.HTTPHandler(HTTPOptions{Auth: a}))
	defer ts.Close()
	resp, _ := authPost(t, ts.URL, "tok-bare", "", initBody)
	sid := resp.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatalf("initialize: %d", resp.StatusCode)
	}
	read := func(id string) string {
		_, r := authPost(t, ts.URL, "tok-bare", sid, `{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"mcpx://artifacts/`+id+`"}}`)
		if r.Get("error").Exists() {
			return "error: " + r.Get("error.message").String()
		}
		return r.Get("result.contents.0.text").String()
	}
	query := func(id string) string {
		_, r := authPost(t, ts.URL, "tok-bare", sid, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"artifacts_query","arguments":{"id":"`+id+`","lines":"1"}}}`)
		return r.Get("result.content.0.text").String()
	}
	if got := read(theirs); !strings.HasPrefix(got, "error: ") {
		t.Errorf("bare alice reads acme's alice's artifact (first put by carol): %q", got)
	}
	if got := query(theirs); !strings.Contains(got, "not found") || strings.Contains(got, "notes") {
		t.Errorf("bare alice queries acme's alice's artifact: %q", got)
	}
	if got := read(mine); got != "bare alice's notes" {
		t.Errorf("bare alice reads what she put (first put by acme's alice): %q", got)
	}
	if got := query(mine); !strings.Contains(got, "bare alice's notes") {
		t.Errorf("bare alice queries what she put: %q", got)
	}
}

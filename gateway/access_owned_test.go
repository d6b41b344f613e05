package gateway

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpx-dev/mcpx/auth"
	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/gateway/internal/artifacts"
	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

// A user without a tenant reads (resources/read, artifacts_query) what
// it put, never what a tenant's user of the same name put, whoever put
// the bytes first: the first put of theirs was a third, tenant-less,
// user's; and the first put of its own was another tenant's.
func TestMCPReadNeedsAnOwnedScope(t *testing.T) {
	t.Parallel()
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

	g := newGatewayWith(t, Options{Servers: map[string]config.ServerConfig{"a": resourceStub(t, "a")}, Engine: engine.Options{Store: st, Linker: sessionLinker{}}})
	a := newAuth(t, auth.Config{Tokens: map[string]auth.Identity{"tok-bare": {User: "alice"}}, Limits: auth.Limits{RequestsPerSecond: -1}})
	ts := httptest.NewServer(g.HTTPHandler(HTTPOptions{Auth: a}))
	defer ts.Close()
	resp, _ := authPost(t, ts.URL, "tok-bare", "", initBody)
	sid := resp.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatalf("initialize: %d", resp.StatusCode)
	}
	var meta string // the last read's ref
	read := func(id string) string {
		_, r := authPost(t, ts.URL, "tok-bare", sid, `{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"mcpx://artifacts/`+id+`"}}`)
		if r.Get("error").Exists() {
			return "error: " + r.Get("error.message").String()
		}
		meta = r.Get("result.contents.0._meta." + strings.ReplaceAll(artifacts.MetaKey, "/", `\/`)).Raw
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
	// She is shown her own scope and a link for her own session.
	if !strings.Contains(meta, `"session_id":"bare-session"`) || !strings.Contains(meta, `"url":"link-for-bare-session"`) || strings.Contains(meta, "acme") {
		t.Errorf("resources/read's ref: %s, want bare alice's own scope and link", meta)
	}
	_, r := authPost(t, ts.URL, "tok-bare", sid, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"a_resources_read","arguments":{"uri":"mcpx://artifacts/`+mine+`"}}}`)
	if text := r.Get("result.content.0.text").String(); !strings.Contains(text, "bare-session") || strings.Contains(text, "acme") {
		t.Errorf("the artifact's summary: %s, want bare alice's own scope and link", r.Raw)
	}
	if got := query(mine); !strings.Contains(got, "bare alice's notes") {
		t.Errorf("bare alice queries what she put: %q", got)
	}
	// As a tool's argument it becomes a link for her own session.
	_, r = authPost(t, ts.URL, "tok-bare", sid, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{"v":"mcpx://artifacts/`+mine+`"}}}`)
	if v := r.Get("result.structuredContent.v").String(); v != "link-for-bare-session" {
		t.Errorf("the argument reached the tool as %q (%s), want a link for bare alice's session", v, r.Raw)
	}
	_, r = authPost(t, ts.URL, "tok-bare", sid, `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"echo","arguments":{"v":"mcpx://artifacts/`+theirs+`"}}}`)
	if !r.Get("error").Exists() {
		t.Errorf("acme's alice's artifact as an argument: %s, want refused", r.Raw)
	}
}

// sessionLinker links an artifact to the session its ref names.
type sessionLinker struct{}

func (sessionLinker) ArtifactURL(ref engine.ArtifactRef) string {
	if ref.Scope == nil {
		return "link-for-none"
	}
	return "link-for-" + ref.Scope.SessionID
}

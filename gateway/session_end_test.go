package gateway

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

// TestOnSessionEndDropsArtifacts: Options.OnSessionEnd is called with the
// id of a session that ends, and what mcpx serve does there (retention's
// drop_on_session_end: DropScope of the session) removes that session's
// artifacts and keeps another session's.
func TestOnSessionEndDropsArtifacts(t *testing.T) {
	t.Parallel()
	st := memstore.New(memstore.Config{})
	ended := make(chan string, 4)
	g := newGatewayWith(t, Options{
		Servers: map[string]config.ServerConfig{"stub": stubServer(t)},
		Engine:  engine.Options{Store: st},
		OnSessionEnd: func(id string) {
			if _, err := st.DropScope(context.Background(), store.Scope{SessionID: id}); err != nil {
				t.Errorf("drop scope: %v", err)
			}
			ended <- id
		},
	})
	idOf := func(c *client, args string) string {
		t.Helper()
		res := gjson.ParseBytes(c.call("tools/call", toolCall("echo", args)))
		uri := strings.TrimPrefix(res.Get(`result.content.#(type=="resource_link").uri`).String(), engine.URIScheme)
		if uri == "" {
			// an in-place rewrite: the ref is in the text
			raw := res.Raw
			i := strings.Index(raw, engine.URIScheme)
			if i < 0 {
				t.Fatalf("nothing stored: %.300s", raw)
			}
			uri = raw[i+len(engine.URIScheme):]
			uri = uri[:strings.IndexAny(uri, `" \`)]
		}
		return uri
	}
	leaving, staying := connect(t, g), connect(t, g)
	gone := idOf(leaving, `{"v":"`+strings.Repeat("leaving ", 3000)+`"}`)
	kept := idOf(staying, `{"v":"`+strings.Repeat("staying ", 3000)+`"}`)

	leaving.w.Close() // the client leaves: ServeStdio ends and closes the session
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("OnSessionEnd was not called when the session ended")
	}
	ctx := context.Background()
	if _, err := st.Stat(ctx, gone); err == nil {
		t.Errorf("the ended session's artifact %s is still stored", gone)
	}
	if _, err := st.Stat(ctx, kept); err != nil {
		t.Errorf("another session's artifact %s: %v", kept, err)
	}
}

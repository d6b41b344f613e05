package web

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/auth"
	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/fsstore"
)

// fuzzSecret is alice's artifact's content: no other caller's answer may
// hold it.
const fuzzSecret = "SECRET-OF-ALICE-4f1c"

// FuzzAPI sends any request (method, path and query, bearer token, body)
// to the HTTP API: no answer is a 5xx, and only alice's token gets her
// artifact's bytes or metadata.
func FuzzAPI(f *testing.F) {
	f.Add("GET", "/artifacts", "tok-alice", []byte(nil))
	f.Add("GET", "/artifacts/ID", "tok-bob", []byte(nil))
	f.Add("GET", "/artifacts/ID/meta", "", []byte(nil))
	f.Add("GET", "/artifacts/ID?sig=AAAA&exp=99999999999&kid=x", "", []byte(nil))
	f.Add("GET", "/artifacts?cursor=%ff%00&limit=-1&session=s1", "tok-bob", []byte(nil))
	f.Add("POST", "/transform", "tok-alice", []byte(`{"server":"s","tool":"t","result":{"content":[{"type":"text","text":"x"}]}}`))
	f.Add("POST", "/transform", "tok-bob", []byte(`{"server":"../..","result":[`))
	f.Add("GET", "/resources/docs/read?uri=file:///readme", "tok-alice", []byte(nil))
	f.Add("GET", "/artifacts/ID", "tok-alice", []byte(nil))
	f.Add("GET", "/artifacts/ID", "tok-alice", []byte(nil))
	ctx, cancel := context.WithCancel(context.Background())
	f.Cleanup(cancel)
	st, err := fsstore.Open(ctx, f.TempDir(), fsstore.Config{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = st.Close(context.Background()) })
	ref, err := st.Put(ctx, strings.NewReader(fuzzSecret), store.PutOptions{Namespace: "t", MIMEType: "text/plain", Filename: "a.txt",
		Scope: store.Scope{TenantID: "acme", UserID: "alice", SessionID: "s1"}})
	if err != nil {
		f.Fatal(err)
	}
	base := "http://127.0.0.1:9"
	keys, err := LoadKeys(ctx, KeyFile(f.TempDir()+"/keys.json"))
	if err != nil {
		f.Fatal(err)
	}
	signer, err := NewSigner(SignerConfig{BaseURL: base, Keys: keys})
	if err != nil {
		f.Fatal(err)
	}
	au, err := auth.New(ctx, auth.Options{Config: auth.Config{Tokens: testTokens}, Loopback: true, BaseURL: base})
	if err != nil {
		f.Fatal(err)
	}
	bus := NewEventBus(Limits{EventBuffer: 8})
	eng, err := engine.New(engine.Options{Store: st, Linker: signer, Listener: bus})
	if err != nil {
		f.Fatal(err)
	}
	api, err := NewAPI(APIOptions{Store: st, Signer: signer, Auth: au, Events: bus, Resources: &fakeResources{}, Transformer: eng,
		Retention: store.Retention{TTL: store.Duration(time.Hour)}, Limits: Limits{EventKeepAlive: store.Duration(50 * time.Millisecond)}})
	if err != nil {
		f.Fatal(err)
	}
	h := api.Handler()
	f.Fuzz(func(t *testing.T, method, target, token string, body []byte) {
		if method == "GET" && strings.HasPrefix(target, "/events") {
			return // a stream: it ends with the client, not with the request
		}
		target = strings.ReplaceAll(target, "ID", ref.ID)
		u, err := url.ParseRequestURI(target)
		if err != nil || u.Host != "" || !strings.HasPrefix(target, "/") {
			return
		}
		req, err := http.NewRequest(method, "http://127.0.0.1:9"+target, bytes.NewReader(body))
		if err != nil || strings.HasPrefix(u.Path, "/events") {
			return
		}
		req.RemoteAddr = "192.0.2.1:1234" // not loopback: no local user
		if token != "" {
			if strings.ContainsAny(token, "\r\n\x00") {
				return
			}
			req.Header.Set("Authorization", "Bearer "+token)
		}
		rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
		defer rcancel()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req.WithContext(rctx))
		if rec.Code >= 500 && rec.Code != http.StatusServiceUnavailable {
			t.Fatalf("%s %s (token %q): HTTP %d: %s", method, target, token, rec.Code, rec.Body.Bytes())
		}
		if token != "tok-alice" && (bytes.Contains(rec.Body.Bytes(), []byte(fuzzSecret)) || bytes.Contains(rec.Body.Bytes(), []byte(`"a.txt"`))) {
			t.Fatalf("%s %s with token %q got alice's artifact: HTTP %d: %s", method, target, token, rec.Code, rec.Body.Bytes())
		}
	})
}

package web

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/auth"
	"github.com/mcpx-dev/mcpx/engine"
	_ "github.com/mcpx-dev/mcpx/layers"
	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/fsstore"
)

// The callers of the API tests: two users of one tenant, a same-named
// user of another tenant, and two with no tenant.
var testTokens = map[string]auth.Identity{
	"tok-alice":       {Tenant: "acme", User: "alice"},
	"tok-bob":         {Tenant: "acme", User: "bob"},
	"tok-other-alice": {Tenant: "globex", User: "alice"},
	"tok-bare-alice":  {User: "alice"},
	"tok-bare-carol":  {User: "carol"},
}

type apiFixture struct {
	t      *testing.T
	srv    *httptest.Server
	st     store.Store
	api    *API
	signer *Signer
	res    *fakeResources
}

// fakeResources answers for server "docs" with the principal it was
// asked for, so the test sees the caller reach the browser.
type fakeResources struct {
	mu   sync.Mutex
	seen []auth.Principal
}

func (f *fakeResources) ListResources(_ context.Context, p auth.Principal, server, cursor string) (json.RawMessage, error) {
	f.mu.Lock()
	f.seen = append(f.seen, p)
	f.mu.Unlock()
	if server == "tools-only" {
		return nil, ErrNoResources
	}
	if server != "docs" {
		return nil, ErrUnknownServer
	}
	return json.RawMessage(`{"resources":[{"uri":"file:///readme","name":"readme"}]}`), nil
}

// ResourceServers makes fakeResources a ResourceServerLister.
func (f *fakeResources) ResourceServers(context.Context, auth.Principal) ([]string, error) {
	return []string{"docs"}, nil
}

func (f *fakeResources) ReadResource(_ context.Context, p auth.Principal, server, uri string) (json.RawMessage, error) {
	if server == "tools-only" {
		return nil, ErrNoResources
	}
	if server != "docs" {
		return nil, ErrUnknownServer
	}
	if uri != "file:///readme" {
		return nil, ErrUnknownResource
	}
	b, _ := json.Marshal(map[string]any{"contents": []map[string]string{{"uri": uri, "text": "hello " + p.Key()}}})
	return b, nil
}

// newAPIFixture serves an API on an fsstore with an engine behind
// POST /transform; each of tune adjusts the engine's options.
func newAPIFixture(t *testing.T, tokens map[string]auth.Identity, limits auth.Limits, tune ...func(*engine.Options)) *apiFixture {
	t.Helper()
	return newAPIFixtureWith(t, tokens, limits, nil, tune...)
}

// newAPIFixtureWith is newAPIFixture with apiTune (when not nil)
// adjusting the API's options.
func newAPIFixtureWith(t *testing.T, tokens map[string]auth.Identity, limits auth.Limits, apiTune func(*APIOptions), tune ...func(*engine.Options)) *apiFixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	st, err := fsstore.Open(ctx, t.TempDir(), fsstore.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close(context.Background()) })
	srv := httptest.NewUnstartedServer(nil)
	base := "http://" + srv.Listener.Addr().String()
	keys, err := LoadKeys(ctx, KeyFile(t.TempDir()+"/keys.json"))
	if err != nil {
		t.Fatal(err)
	}
	signer, err := NewSigner(SignerConfig{BaseURL: base, Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	au, err := auth.New(ctx, auth.Options{Config: auth.Config{Tokens: tokens, Limits: limits}, Loopback: true, BaseURL: base})
	if err != nil {
		t.Fatal(err)
	}
	bus := NewEventBus(Limits{EventBuffer: 8})
	eo := engine.Options{Store: st, Linker: signer, Listener: bus}
	for _, f := range tune {
		f(&eo)
	}
	eng, err := engine.New(eo)
	if err != nil {
		t.Fatal(err)
	}
	res := &fakeResources{}
	ao := APIOptions{Store: st, Signer: signer, Auth: au, Events: bus, Resources: res, Transformer: eng,
		Retention: store.Retention{TTL: store.Duration(time.Hour)}, Limits: Limits{EventKeepAlive: store.Duration(50 * time.Millisecond)}}
	if apiTune != nil {
		apiTune(&ao)
	}
	api, err := NewAPI(ao)
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = api.Handler()
	srv.Start()
	t.Cleanup(srv.Close)
	return &apiFixture{t: t, srv: srv, st: st, api: api, signer: signer, res: res}
}

func (f *apiFixture) put(body, mime, filename string, sc store.Scope) store.Ref {
	f.t.Helper()
	ref, err := f.st.Put(context.Background(), strings.NewReader(body), store.PutOptions{Namespace: "t", MIMEType: mime, Filename: filename, Scope: sc})
	if err != nil {
		f.t.Fatal(err)
	}
	return ref
}

func (f *apiFixture) do(method, path, token string, body io.Reader, hdr ...string) (int, []byte, http.Header) {
	f.t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, body)
	if err != nil {
		f.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp.Header
}

func (f *apiFixture) list(token, query string) ArtifactPage {
	f.t.Helper()
	code, b, _ := f.do("GET", "/artifacts"+query, token, nil)
	var page ArtifactPage
	if err := json.Unmarshal(b, &page); code != 200 || err != nil {
		f.t.Fatalf("list: %d %s %v", code, b, err)
	}
	return page
}

func ids(page ArtifactPage) []string {
	var out []string
	for _, a := range page.Artifacts {
		out = append(out, a.Artifact.ID)
	}
	return out
}

// Another user's or tenant's artifact answers 404 on every
// endpoint, as a missing one does.
func TestAPIScopeIsolation(t *testing.T) {
	t.Parallel()
	f := newAPIFixture(t, testTokens, auth.Limits{})
	alice := f.put("alice's report", "text/plain", "a.txt", store.Scope{TenantID: "acme", UserID: "alice", SessionID: "s1"})
	bob := f.put("bob's report", "text/plain", "b.txt", store.Scope{TenantID: "acme", UserID: "bob"})
	other := f.put("globex alice's report", "text/plain", "g.txt", store.Scope{TenantID: "globex", UserID: "alice"})

	if code, b, _ := f.do("GET", "/artifacts/"+alice.ID, "tok-alice", nil); code != 200 || string(b) != "alice's report" {
		t.Fatalf("own download: %d %q", code, b)
	}
	code, b, _ := f.do("GET", "/artifacts/"+alice.ID+"/meta", "tok-alice", nil)
	var info ArtifactInfo
	if err := json.Unmarshal(b, &info); code != 200 || err != nil || info.Artifact.ID != alice.ID || info.ExpiresAt == nil || info.Artifact.URL == "" || info.LastAccess == nil {
		t.Fatalf("own meta: %d %s", code, b)
	}
	for _, tc := range []struct {
		who, id string
	}{
		{"tok-bob", alice.ID}, {"tok-other-alice", alice.ID}, {"tok-bare-alice", alice.ID},
		{"tok-alice", bob.ID}, {"tok-alice", other.ID}, {"tok-bare-alice", other.ID},
		{"tok-alice", "t_ffffffffffff"},
	} {
		for _, path := range []string{"/artifacts/" + tc.id, "/artifacts/" + tc.id + "/meta"} {
			for _, m := range []string{"GET", "HEAD"} {
				if code, b, _ := f.do(m, path, tc.who, nil); code != http.StatusNotFound {
					t.Errorf("%s %s %s: %d %q, want 404", tc.who, m, path, code, b)
				}
			}
		}
	}
	for tok, want := range map[string][]string{
		"tok-alice": {alice.ID}, "tok-bob": {bob.ID}, "tok-other-alice": {other.ID}, "tok-bare-alice": nil,
	} {
		if got := ids(f.list(tok, "")); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s lists %v, want %v", tok, got, want)
		}
	}
	if got := ids(f.list("tok-alice", "?session=s2")); len(got) != 0 {
		t.Errorf("session filter: %v", got)
	}
	for _, path := range []string{"/artifacts/" + alice.ID, "/artifacts/" + alice.ID + "/meta", "/artifacts", "/events", "/resources/docs", "/readyz"} {
		if code, _, h := f.do("GET", path, "", nil); path != "/readyz" && (code != 401 || !strings.Contains(h.Get("WWW-Authenticate"), "resource_metadata=")) {
			t.Errorf("%s without a token: %d %q", path, code, h.Get("WWW-Authenticate"))
		}
		if code, _, _ := f.do("GET", path, "tok-wrong", nil); path != "/readyz" && code != 401 {
			t.Errorf("%s with a wrong token: %d", path, code)
		}
	}
	// the resource browser is asked as the caller
	if code, b, _ := f.do("GET", "/resources/docs/read?uri="+url.QueryEscape("file:///readme"), "tok-bob", nil); code != 200 || !strings.Contains(string(b), "hello acme/bob") {
		t.Errorf("resource read: %d %s", code, b)
	}
	for path, want := range map[string]int{"/resources/docs": 200, "/resources/nope": 404, "/resources/docs/read?uri=x": 404, "/resources/docs/read": 400} {
		if code, _, _ := f.do("GET", path, "tok-alice", nil); code != want {
			t.Errorf("%s: %d, want %d", path, code, want)
		}
	}
}

// The signed URL is its own authority and the API's bearer path its own:
// a signed URL of one session does not open another's artifact.
func TestAPISignedAndBearerDownloads(t *testing.T) {
	t.Parallel()
	f := newAPIFixture(t, testTokens, auth.Limits{})
	a := f.put("%PDF-1.4 a", "application/pdf", "a.pdf", store.Scope{TenantID: "acme", UserID: "alice", SessionID: "s1"})
	u, _ := url.Parse(f.signer.URL(a.ID, "s1"))
	if code, b, _ := f.do("GET", u.RequestURI(), "", nil); code != 200 || string(b) != "%PDF-1.4 a" {
		t.Fatalf("signed: %d %q", code, b)
	}
	u, _ = url.Parse(f.signer.URL(a.ID, "s2"))
	if code, _, _ := f.do("GET", u.RequestURI(), "", nil); code != 403 {
		t.Errorf("signed for another session: %d", code)
	}
	// a bad signature is refused even with a good token: no fallback
	if code, _, _ := f.do("GET", "/artifacts/"+a.ID+"?sig=x&exp=1", "tok-alice", nil); code != 403 {
		t.Errorf("forged signature with a token: %d", code)
	}
}

// Filenames carry no header into the response and ids no path out of
// the store.
func TestAPIFilenameAndPathAttacks(t *testing.T) {
	t.Parallel()
	f := newAPIFixture(t, testTokens, auth.Limits{})
	sc := store.Scope{TenantID: "acme", UserID: "alice"}
	for _, name := range []string{"a\r\nSet-Cookie: x=1\r\n.txt", "../../etc/passwd", `q"uote.txt`, "résumé.pdf", "a\x00b.txt", "x;\tfilename=evil.html"} {
		ref := f.put("body of "+name, "text/html", name, sc)
		code, b, h := f.do("GET", "/artifacts/"+ref.ID, "tok-alice", nil)
		disp := h.Get("Content-Disposition")
		if code != 200 || string(b) != "body of "+name || h.Get("Set-Cookie") != "" || strings.ContainsAny(disp, "\r\n\x00") || !strings.HasPrefix(disp, "attachment") {
			t.Errorf("%q: %d Content-Disposition %q Set-Cookie %q", name, code, disp, h.Get("Set-Cookie"))
		}
		if strings.Contains(disp, "evil.html") && !strings.Contains(disp, "filename*=") && !strings.Contains(disp, `"x;`) {
			t.Errorf("%q: a second filename parameter: %q", name, disp)
		}
	}
	for _, p := range []string{"/artifacts/..%2F..%2Fetc%2Fpasswd", "/artifacts/%2e%2e/meta", "/artifacts/..%2fkeys.json/meta", "/artifacts/t_%00/meta", "/artifacts/index.sqlite"} {
		code, b, _ := f.do("GET", p, "tok-alice", nil)
		if code == 200 || strings.Contains(string(b), "root:") {
			t.Errorf("%s: %d %q", p, code, b)
		}
	}
}

func TestAPIRebindingAndRateLimits(t *testing.T) {
	t.Parallel()
	f := newAPIFixture(t, testTokens, auth.Limits{RequestsPerSecond: 0.001, RequestBurst: 2, ToolCallsPerSecond: 0.001, ToolCallBurst: 1})
	if code, _, _ := f.do("GET", "/artifacts", "tok-alice", nil, "Host", "evil.example"); code != 403 {
		t.Errorf("rebound Host: %d", code)
	}
	if code, _, _ := f.do("GET", "/healthz", "", nil); code != 200 {
		t.Errorf("healthz: %d", code)
	}
	f.do("GET", "/artifacts", "tok-alice", nil)
	f.do("GET", "/artifacts", "tok-alice", nil)
	code, _, h := f.do("GET", "/artifacts", "tok-alice", nil)
	if code != http.StatusTooManyRequests || h.Get("Retry-After") == "" {
		t.Errorf("3rd request: %d Retry-After %q", code, h.Get("Retry-After"))
	}
	// per tool: bob's second transform of one tool is refused, another tool passes
	if code, b, _ := f.do("POST", "/transform?server=s&tool=t1", "tok-bob", strings.NewReader(`{"content":[]}`)); code != 200 {
		t.Fatalf("transform: %d %s", code, b)
	}
	if code, _, h := f.do("POST", "/transform?server=s&tool=t1", "tok-bob", strings.NewReader(`{}`)); code != 429 || h.Get("Retry-After") == "" {
		t.Errorf("2nd transform of a tool: %d", code)
	}
}

// sseEvent is one event of a GET /events response.
type sseEvent struct{ id, typ, data string }

// readSSE reads events from a GET /events response.
func readSSE(t *testing.T, body io.Reader, n int, ch chan<- sseEvent) {
	sc := bufio.NewScanner(body)
	var ev sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev.typ != "" {
				ch <- ev
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, "id: "):
			ev.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			ev.typ = line[7:]
		case strings.HasPrefix(line, "data: "):
			ev.data = line[6:]
		}
	}
	close(ch)
}

func (f *apiFixture) stream(token, lastID string) (<-chan sseEvent, func()) {
	f.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", f.srv.URL+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		f.t.Fatalf("events: %v %v", resp, err)
	}
	ch := make(chan sseEvent, 64)
	go readSSE(f.t, resp.Body, 0, ch)
	return ch, func() { cancel(); resp.Body.Close() }
}

func next(t *testing.T, ch <-chan sseEvent) sseEvent {
	t.Helper()
	return receive(t, ch)
}

// receive returns the next value of ch; none in 5 s, or ch closed, fails
// t.
func receive[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v, ok := <-ch:
		if !ok {
			t.Fatal("stream ended")
		}
		return v
	case <-time.After(5 * time.Second):
		t.Fatal("no event in 5s")
	}
	var zero T
	return zero
}

// Events reach their owner only, carry refs and never bytes, and a
// stream resumed with Last-Event-ID gets what it missed.
func TestAPIEventsFilteredAndResumed(t *testing.T) {
	t.Parallel()
	f := newAPIFixture(t, testTokens, auth.Limits{})
	aliceCh, stopAlice := f.stream("tok-alice", "")
	bobCh, stopBob := f.stream("tok-bob", "")
	defer stopBob()
	time.Sleep(50 * time.Millisecond) // both subscribed

	pdf := "%PDF-1.4\n" + strings.Repeat("secret bytes ", 2000)
	result := `{"content":[{"type":"resource","resource":{"uri":"file:///r.pdf","mimeType":"application/pdf","blob":"` + base64.StdEncoding.EncodeToString([]byte(pdf)) + `"}}]}`
	code, out, _ := f.do("POST", "/transform?server=files&tool=get", "tok-alice", strings.NewReader(result))
	if code != 200 || strings.Contains(string(out), base64.StdEncoding.EncodeToString([]byte(pdf))[:100]) {
		t.Fatalf("transform: %d %.300s", code, out)
	}
	ev := next(t, aliceCh)
	var got Event
	if err := json.Unmarshal([]byte(ev.data), &got); err != nil || ev.typ != EventArtifactStored || got.Artifact == nil || got.Artifact.SizeBytes != int64(len(pdf)) {
		t.Fatalf("alice's event: %+v %v", ev, err)
	}
	if strings.Contains(ev.data, "secret bytes") || strings.Contains(ev.data, "acme") {
		t.Errorf("the event carries bytes or the scope: %s", ev.data)
	}
	artifactID := got.Artifact.ID
	// then the call's result_rewritten: its artifacts, no bytes
	ev = next(t, aliceCh)
	var rw Event
	if err := json.Unmarshal([]byte(ev.data), &rw); err != nil || ev.typ != EventResultRewritten || len(rw.Artifacts) != 1 || rw.Artifacts[0].ID != artifactID || rw.Tool != "get" {
		t.Fatalf("alice's result_rewritten: %+v %v", ev, err)
	}
	// the artifact is alice's: bob cannot read it, alice can
	if code, _, _ := f.do("GET", "/artifacts/"+artifactID, "tok-bob", nil); code != 404 {
		t.Errorf("bob reads alice's transform artifact: %d", code)
	}
	if code, b, _ := f.do("GET", "/artifacts/"+artifactID, "tok-alice", nil); code != 200 || string(b) != pdf {
		t.Errorf("alice reads her transform artifact: %d", code)
	}
	// alice drops off; events go on; she resumes
	stopAlice()
	lastSeen := ev.id
	bus := f.api.Events()
	bus.Publish(Event{Type: EventResourceUpdated, URI: "file:///r1", Scope: store.Scope{TenantID: "acme", UserID: "alice"}})
	bus.Publish(Event{Type: EventResourceUpdated, URI: "file:///bob", Scope: store.Scope{TenantID: "acme", UserID: "bob"}})
	bus.Evicted(store.Removal{ID: artifactID, Bytes: int64(len(pdf)), Why: "ttl"})
	aliceCh, stopAlice = f.stream("tok-alice", lastSeen)
	defer stopAlice()
	if ev := next(t, aliceCh); ev.typ != EventResourceUpdated || !strings.Contains(ev.data, "file:///r1") {
		t.Errorf("resumed 1: %+v", ev)
	}
	if ev := next(t, aliceCh); ev.typ != EventArtifactEvicted || !strings.Contains(ev.data, artifactID) {
		t.Errorf("resumed 2 (the eviction reaches the owner): %+v", ev)
	}
	if ev := next(t, bobCh); ev.typ != EventResourceUpdated || !strings.Contains(ev.data, "file:///bob") {
		t.Errorf("bob's only event: %+v", ev)
	}
	// the buffer holds 8: a stream resumed from before it gets a gap first
	for range 10 {
		bus.Publish(Event{Type: EventLayerFailed, Scope: store.Scope{TenantID: "acme", UserID: "alice"}})
	}
	ch, stop := f.stream("tok-alice", "1")
	defer stop()
	if ev := next(t, ch); ev.typ != "gap" {
		t.Errorf("resume past the buffer: %+v, want a gap", ev)
	}
	if ev := next(t, ch); ev.id != "8" {
		t.Errorf("first event after the gap: id %s, want 8 (the oldest kept)", ev.id)
	}
}

func TestAPIHealthAndReady(t *testing.T) {
	t.Parallel()
	f := newAPIFixture(t, nil, auth.Limits{})
	if code, _, _ := f.do("GET", "/readyz", "", nil); code != 200 {
		t.Errorf("readyz: %d", code)
	}
	if got := ids(f.list("", "")); len(got) != 0 {
		t.Errorf("the readiness probe left artifacts: %v", got)
	}
	f.api.o.Ready = readyFunc(func(context.Context) error { return errors.New("upstream docs: connecting") })
	if code, b, _ := f.do("GET", "/readyz", "", nil); code != 503 || !strings.Contains(string(b), "docs") {
		t.Errorf("readyz with an upstream down: %d %s", code, b)
	}
	if code, b, _ := f.do("GET", "/.well-known/oauth-protected-resource", "", nil); code != 200 || !strings.Contains(string(b), `"resource"`) {
		t.Errorf("metadata: %d %s", code, b)
	}
	if code, _, _ := f.do("GET", "/.well-known/oauth-protected-resource/mcp", "", nil); code != 200 {
		t.Errorf("metadata for /mcp: %d", code)
	}
}

type readyFunc func(context.Context) error

func (f readyFunc) Ready(ctx context.Context) error { return f(ctx) }

// With no tokens on loopback, the one local user sees everything.
func TestAPILocalUserSeesAll(t *testing.T) {
	t.Parallel()
	f := newAPIFixture(t, nil, auth.Limits{})
	a := f.put("a", "text/plain", "", store.Scope{TenantID: "acme", UserID: "alice"})
	b := f.put("b", "text/plain", "", store.Scope{SessionID: "s"})
	if got := ids(f.list("", "")); len(got) != 2 || got[0] != b.ID {
		t.Errorf("local lists %v, want [%s %s] newest first", got, b.ID, a.ID)
	}
	if code, body, _ := f.do("GET", "/artifacts/"+a.ID, "", nil); code != 200 || !bytes.Equal(body, []byte("a")) {
		t.Errorf("local download: %d", code)
	}
}

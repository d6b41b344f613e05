package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
	"github.com/mcpx-dev/mcpx/gateway/internal/session"
	"github.com/mcpx-dev/mcpx/gateway/internal/upstream"
	"github.com/mcpx-dev/mcpx/store"
)

// stubMemo makes the stub a server that keeps its user's state in its
// process, as a browser server keeps pages and logins (see runMemoStub).
const stubMemo = "memo"

// runMemoStub serves "remember" (keeps its argument v in the process,
// then says so: a log message "remembered V" and
// notifications/resources/updated of memo://note, as a server reports
// what its user did) and "recall" (answers what the process keeps and
// its pid, as structuredContent {memo, pid}); resources/read of
// memo://note answers the memo too.
func runMemoStub() {
	memo := ""
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	serveStub(func(r stubRequest) {
		switch r.method() {
		case "initialize":
			r.result(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"logging":{},"resources":{"subscribe":true}},"serverInfo":{"name":"memo","version":"1"}}`)
		case "tools/list":
			r.result(`{"tools":[{"name":"remember","inputSchema":{"type":"object","properties":{"v":{"type":"string"}}}},{"name":"recall","inputSchema":{"type":"object"}}]}`)
		case "tools/call":
			switch gjson.GetBytes(r.line, "params.name").String() {
			case "remember":
				memo = gjson.GetBytes(r.line, "params.arguments.v").String()
				r.write(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"warning","data":` + q("remembered "+memo) + `}}`)
				r.write(`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"memo://note"}}`)
				r.result(`{"content":[{"type":"text","text":"ok"}]}`)
			case "recall":
				s := fmt.Sprintf(`{"memo":%s,"pid":%d}`, q(memo), os.Getpid())
				r.result(`{"content":[{"type":"text","text":` + q(s) + `}],"structuredContent":` + s + `}`)
			}
		case "resources/list":
			r.result(`{"resources":[{"uri":"memo://note","name":"note","mimeType":"text/plain"}]}`)
		case "resources/read":
			r.result(`{"contents":[{"uri":"memo://note","mimeType":"text/plain","text":` + q(memo) + `}]}`)
		case "resources/subscribe", "resources/unsubscribe", "logging/setLevel", "ping":
			r.result(`{}`)
		default:
			r.notFound()
		}
	})
}

// memoServer is the ServerConfig that runs the memo stub.
func memoServer(t testing.TB) config.ServerConfig {
	c := stubServer(t)
	c.Env = map[string]string{stubEnv: stubMemo}
	return c
}

// memoUsers runs the memo stub (with mcpx.instances set to instances)
// behind a gateway with o and three principals' tokens: "ta" alice,
// "tb" bob, "tc" carol.
func memoUsers(t *testing.T, o Options, instances string) (*Gateway, string) {
	t.Helper()
	memo := memoServer(t)
	memo.Mcpx.Instances = instances
	o.Servers = map[string]config.ServerConfig{"memo": memo}
	g := newGatewayWith(t, o)
	srv := httptest.NewServer(g.HTTPHandler(HTTPOptions{Tokens: map[string]string{"ta": "alice", "tb": "bob", "tc": "carol"}}))
	t.Cleanup(srv.Close)
	return g, srv.URL
}

// memoSession opens an initialized session as token.
func memoSession(t *testing.T, url, token string) *httpClient {
	t.Helper()
	c := &httpClient{t: t, url: url, token: token, hc: &http.Client{Timeout: 60 * time.Second}}
	c.initialize()
	return c
}

// recalled is what the memo stub answers c's recall with.
func recalled(c *httpClient) (memo string, pid int64) {
	c.t.Helper()
	r := c.result("tools/call", toolCall("recall", ""))
	return r.Get("structuredContent.memo").String(), r.Get("structuredContent.pid").Int()
}

// notes reads the notifications of c's GET stream into a channel.
func notes(c *httpClient) <-chan gjson.Result {
	c.t.Helper()
	resp := c.request(http.MethodGet, "", map[string]string{"Accept": "text/event-stream"})
	if resp.StatusCode != http.StatusOK {
		c.t.Fatalf("GET stream: status %d", resp.StatusCode)
	}
	c.t.Cleanup(func() { resp.Body.Close() })
	ch := make(chan gjson.Result, 64)
	go func() {
		defer close(ch)
		br := bufio.NewReader(resp.Body)
		for {
			line, err := br.ReadString('\n')
			if d, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "data: "); ok {
				if n := gjson.Parse(d); n.Get("method").Exists() && !n.Get("id").Exists() {
					ch <- n
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return ch
}

// nextNote is the next notification on ch (bounded).
func nextNote(t *testing.T, who string, ch <-chan gjson.Result) gjson.Result {
	t.Helper()
	select {
	case n := <-ch:
		return n
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: no notification in 20s", who)
		return gjson.Result{}
	}
}

// TestUsersDoNotShareAProcess: behind a gateway that several principals
// may call (Options.Users), a stdio server without mcpx.instances runs a
// process per principal: what alice keeps in hers, bob never recalls,
// in a session or statelessly; alice's sessions and her 2026-07-28
// requests share hers; her process's log messages and resource updates
// reach her sessions, not bob's, though bob subscribes to the same URI;
// resources/read goes to her process. A principal past
// limits.max_user_processes gets -32014 naming the limit.
func TestUsersDoNotShareAProcess(t *testing.T) {
	t.Parallel()
	_, url := memoUsers(t, Options{Users: config.Users{Identities: 3}, Limits: config.Limits{MaxUserProcesses: 2}}, "")
	alice, bob := memoSession(t, url, "ta"), memoSession(t, url, "tb")
	aliceNotes, bobNotes := notes(alice), notes(bob)
	for _, c := range []*httpClient{alice, bob} {
		c.result("resources/subscribe", `{"uri":"memo://note"}`)
	}

	alice.result("tools/call", toolCall("remember", `{"v":"alice's cookie"}`))
	memo, alicePID := recalled(alice)
	if memo != "alice's cookie" {
		t.Fatalf("alice recalls %q", memo)
	}
	if memo, pid := recalled(bob); memo != "" || pid == alicePID {
		t.Fatalf("bob recalls %q from pid %d (alice's is %d): users share a process", memo, pid, alicePID)
	}
	again := memoSession(t, url, "ta")
	if memo, pid := recalled(again); memo != "alice's cookie" || pid != alicePID {
		t.Errorf("alice's second session recalls %q from pid %d, want her process %d", memo, pid, alicePID)
	}
	if r := again.result("resources/read", `{"uri":"memo://note"}`); r.Get("contents.0.text").String() != "alice's cookie" {
		t.Errorf("alice's resources/read: %s", r.Raw)
	}
	st := statelessHTTP{t: t, url: url}
	recall := statelessParams(toolCall("recall", ""), "")
	if _, r := st.post("ta", "tools/call", recall, nil); r.Get("result.structuredContent.memo").String() != "alice's cookie" || r.Get("result.structuredContent.pid").Int() != alicePID {
		t.Errorf("alice's stateless recall: %s, want her process %d", r.Raw, alicePID)
	}
	if _, r := st.post("tb", "tools/call", recall, nil); r.Get("result.structuredContent.memo").String() != "" || r.Get("result.structuredContent.pid").Int() == alicePID {
		t.Errorf("bob's stateless recall: %s (alice's process is %d)", r.Raw, alicePID)
	}

	// alice's process spoke before bob's did: bob's first notification
	// is his own, alice's are hers.
	bob.result("tools/call", toolCall("remember", `{"v":"bob's cookie"}`))
	for _, tc := range []struct {
		who  string
		ch   <-chan gjson.Result
		want string
	}{{"alice", aliceNotes, "remembered alice's cookie"}, {"bob", bobNotes, "remembered bob's cookie"}} {
		n := nextNote(t, tc.who, tc.ch)
		if n.Get("method").String() != "notifications/message" || n.Get("params.data").String() != tc.want {
			t.Errorf("%s's first notification %s, want the log message %q", tc.who, n.Raw, tc.want)
		}
		n = nextNote(t, tc.who, tc.ch)
		if n.Get("method").String() != "notifications/resources/updated" || n.Get("params.uri").String() != "memo://note" {
			t.Errorf("%s's second notification %s, want the update of memo://note", tc.who, n.Raw)
		}
	}

	carol := memoSession(t, url, "tc")
	r := carol.rpc("tools/call", toolCall("recall", ""))
	const want = `tools/call "recall" on memo: upstream[memo]: mcpx: too many upstream processes: 2 users have a process of this per_user server (limits.max_user_processes); retry when one has had no call for 10m0s (limits.user_process_idle_timeout)`
	if r.Get("error.code").Int() != jsonrpc.CodeLimitExceeded || r.Get("error.message").String() != want {
		t.Errorf("carol past max_user_processes 2: %s\nwant code %d and %q", r.Raw, jsonrpc.CodeLimitExceeded, want)
	}
}

// TestUserProcessStopsWhenIdle: a user's process that has had no call
// for limits.user_process_idle_timeout stops, its state with it, and its
// place under limits.max_user_processes is free for another principal.
func TestUserProcessStopsWhenIdle(t *testing.T) {
	t.Parallel()
	g, url := memoUsers(t, Options{
		Users:  config.Users{JWT: true},
		Limits: config.Limits{MaxUserProcesses: 1, UserProcessIdleTimeout: store.Duration(300 * time.Millisecond)},
	}, "")
	alice, bob := memoSession(t, url, "ta"), memoSession(t, url, "tb")
	alice.result("tools/call", toolCall("remember", `{"v":"alice's cookie"}`))
	stopped := func() bool { return len(g.rooms.Ups.Named("memo").Instances().PIDs()) == 0 }
	waitFor(t, "alice's idle process stops", stopped)
	if memo, _ := recalled(bob); memo != "" {
		t.Errorf("bob recalls %q", memo)
	}
	waitFor(t, "bob's idle process stops", stopped)
	if memo, _ := recalled(alice); memo != "" {
		t.Errorf("alice recalls %q after her process stopped: a new one knows nothing", memo)
	}
}

// TestUsersShareWhenTheConfigSaysSo: "instances": "shared" keeps one
// process for every user even where several principals may call.
func TestUsersShareWhenTheConfigSaysSo(t *testing.T) {
	t.Parallel()
	g, url := memoUsers(t, Options{Users: config.Users{Identities: 3}}, "shared")
	alice, bob := memoSession(t, url, "ta"), memoSession(t, url, "tb")
	alice.result("tools/call", toolCall("remember", `{"v":"team notes"}`))
	if memo, pid := recalled(bob); memo != "team notes" || pid != int64(g.rooms.Ups.Named("memo").PID()) {
		t.Errorf("bob recalls %q from pid %d; want alice's memo from the shared process %d", memo, pid, g.rooms.Ups.Named("memo").PID())
	}
}

// TestServeUsersDoNotShareAProcess: two users behind one `mcpx serve
// --listen` with tokens, in front of a stdio server that keeps its
// user's state (as Playwright keeps pages, cookies and logins), drove
// the same process: bob recalled what alice's process kept. Now each
// drives a process of its own, in a session and statelessly.
func TestServeUsersDoNotShareAProcess(t *testing.T) {
	t.Parallel()
	memo := memoServer(t)
	cfg, _ := json.Marshal(map[string]any{
		"mcpServers": map[string]any{"memo": map[string]any{"command": memo.Command, "args": memo.Args, "env": memo.Env}},
		"serve":      map[string]any{"tokens": map[string]string{"ta": "alice", "tb": "bob"}},
	})
	p := startServe(t, string(cfg))
	alice, bob := p.client(t, "ta"), p.client(t, "tb")
	alice.initialize()
	bob.initialize()
	alice.result("tools/call", toolCall("remember", `{"v":"alice's cookie"}`))
	if memo, _ := recalled(alice); memo != "alice's cookie" {
		t.Fatalf("alice recalls %q", memo)
	}
	if memo, _ := recalled(bob); memo != "" {
		t.Errorf("bob recalls %q in his session: users share a process", memo)
	}
	st := statelessHTTP{t: t, url: p.url}
	if _, r := st.post("tb", "tools/call", statelessParams(toolCall("recall", ""), ""), nil); r.Get("result.structuredContent.memo").String() != "" {
		t.Errorf("bob recalls statelessly: %s", r.Raw)
	}
}

// TestUserProcessAsksItsOwnerOnly: a request a user's process sends
// outside any call (roots/list as it starts) is relayed to that user's
// session, never to another user's, and refused while the user has
// several sessions that could answer; the shared process of a per_user
// server, which serves no user's call, asks no client at all.
func TestUserProcessAsksItsOwnerOnly(t *testing.T) {
	t.Parallel()
	g, url := memoUsers(t, Options{Users: config.Users{Identities: 2}}, "")
	open := func(token string) {
		c := &httpClient{t: t, url: url, token: token, hc: &http.Client{Timeout: 60 * time.Second}}
		c.result("initialize", `{"protocolVersion":"2025-11-25","capabilities":{"roots":{"listChanged":true}},"clientInfo":{"name":"test","version":"1"}}`)
		resp := c.request(http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil)
		resp.Body.Close()
	}
	open("tb") // bob's session is the only one with roots
	u := g.rooms.Ups.Named("memo")
	ctx := context.Background()
	if c, err := g.rooms.Sessions.Asked(ctx, u, upstream.Owner{Principal: "/alice"}); !errors.Is(err, session.ErrNoCaller) {
		t.Errorf("alice's process, alice not connected: caller %v, %v; want session.ErrNoCaller", c, err)
	}
	open("ta")
	c, err := g.rooms.Sessions.Asked(ctx, u, upstream.Owner{Principal: "/alice"})
	if err != nil || c.User != "alice" {
		t.Fatalf("alice's process: %v, %v; want alice's session", c, err)
	}
	open("ta")
	if _, err := g.rooms.Sessions.Asked(ctx, u, upstream.Owner{Principal: "/alice"}); !errors.Is(err, session.ErrAmbiguousCaller) {
		t.Errorf("alice's process, two of her sessions with roots: %v, want session.ErrAmbiguousCaller", err)
	}
	if _, err := g.rooms.Sessions.Asked(ctx, u, upstream.Owner{}); !errors.Is(err, session.ErrSharedAsksNobody) {
		t.Errorf("the shared process of a per_user server: %v, want session.ErrSharedAsksNobody", err)
	}
}

// TestStatelessOnlyUsersDoNotShareAProcess: a stdio server that speaks
// only 2026-07-28 (never initialized) runs a process per user too, each
// asked server/discover as the shared one was.
func TestStatelessOnlyUsersDoNotShareAProcess(t *testing.T) {
	t.Parallel()
	modern := stubServer(t)
	modern.Env = map[string]string{stubEnv: stubModern}
	g := newGatewayWith(t, Options{Servers: map[string]config.ServerConfig{"modern": modern}, Users: config.Users{Identities: 2}})
	srv := httptest.NewServer(g.HTTPHandler(HTTPOptions{Tokens: map[string]string{"ta": "alice", "tb": "bob"}}))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g.WaitReady(ctx)
	u := g.rooms.Ups.Named("modern")
	if !u.StatelessOnly() {
		t.Fatal("the upstream was not recognised as stateless-only")
	}
	st := statelessHTTP{t: t, url: srv.URL}
	for _, tok := range []string{"ta", "tb", "ta"} {
		if _, r := st.post(tok, "tools/call", statelessParams(toolCall("grow", ""), ""), nil); r.Get("result.content.0.text").String() != "grown" {
			t.Fatalf("%s: %s", tok, r.Raw)
		}
	}
	pids := u.Instances().PIDs()
	if len(pids) != 2 || pids[0] == pids[1] || slices.Contains(pids, u.PID()) {
		t.Errorf("the users' processes %v (shared %d): want two of their own", pids, u.PID())
	}
}

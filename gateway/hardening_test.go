package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
	"github.com/mcpx-dev/mcpx/gateway/internal/router"
	"github.com/mcpx-dev/mcpx/gateway/internal/transport"
	"github.com/mcpx-dev/mcpx/gateway/internal/upstream"
	"github.com/mcpx-dev/mcpx/internal/syncbuf"
	"github.com/mcpx-dev/mcpx/store"
)

// rawCall sends line as it is and waits (bounded) for the response whose
// id is key ("null" for errors about a message without a usable id).
func (c *client) rawCall(line, key string) gjson.Result {
	c.t.Helper()
	ch := make(chan json.RawMessage, 1)
	c.mu.Lock()
	c.resp[key] = ch
	c.mu.Unlock()
	c.send(line)
	select {
	case r := <-ch:
		return gjson.ParseBytes(r)
	case <-time.After(30 * time.Second):
		c.t.Fatalf("%s: no response in 30s", line[:min(len(line), 80)])
		return gjson.Result{}
	}
}

// Stdio upstreams inherited the gateway's whole
// environment, so one server could read another's keys.
func TestUpstreamEnvAllowlist(t *testing.T) {
	t.Setenv("MCPX_TEST_OTHER_SERVERS_KEY", "sk-other-0123456789")
	t.Setenv("LC_TIME", "C")
	plain := stubServer(t)
	plain.Env["OWN_KEY"] = "mine"
	inherit := stubServer(t)
	inherit.InheritEnv = true
	g := newTestGateway(t, map[string]config.ServerConfig{"plain": plain, "inherit": inherit}, Options{}.Engine)
	c := connect(t, g)
	env := func(tool string) []string {
		var out []string
		for _, v := range c.result("tools/call", toolCall(tool, "")).Get("structuredContent.env").Array() {
			out = append(out, v.String())
		}
		return out
	}
	got := env("plain_env")
	for _, kv := range got {
		k, _, _ := strings.Cut(kv, "=")
		if !upstream.Inherits(k) && k != "OWN_KEY" && k != stubEnv {
			t.Errorf("upstream got %s, which is neither allowlisted nor its own", kv)
		}
	}
	for _, want := range []string{"OWN_KEY=mine", "LC_TIME=C", "PATH="} {
		if !slices.ContainsFunc(got, func(kv string) bool { return strings.HasPrefix(kv, want) }) {
			t.Errorf("upstream lacks %s: %v", want, got)
		}
	}
	if !slices.Contains(env("inherit_env"), "MCPX_TEST_OTHER_SERVERS_KEY=sk-other-0123456789") {
		t.Error("inherit_env: true did not pass the whole environment")
	}
}

// An expanded URL with a ${VAR} secret in its query reached
// clients in errors. The client gets a generic error and an error id;
// the log has the error with the secret masked.
func TestSecretNotInClientErrors(t *testing.T) {
	t.Parallel()
	const secret = "sk-live-4242424242"
	var log syncbuf.Buffer
	remote := config.ServerConfig{URL: "http://127.0.0.1:1/mcp?key=" + secret, Timeout: store.Duration(2 * time.Second)}
	g := newGatewayWith(t, Options{
		Servers: map[string]config.ServerConfig{"stub": resourceStub(t, "stub"), "remote": remote},
		Logger:  hclog.New(&hclog.LoggerOptions{Output: &log, Level: hclog.Info}),
		Secrets: map[string]string{"REMOTE_KEY": secret},
	})
	c := connect(t, g)
	r := c.call("resources/read", `{"uri":"`+router.UpstreamURI("remote", "file:///x")+`"}`)
	msg := gjson.GetBytes(r, "error.message").String()
	if strings.Contains(string(r), secret) || strings.Contains(msg, "127.0.0.1:1") || !strings.Contains(msg, "error_id=") {
		t.Fatalf("client error: %s", r)
	}
	if !strings.Contains(log.String(), "${REMOTE_KEY:masked}") {
		t.Errorf("the logged error does not show the masked secret:\n%s", log.String())
	}
	for _, line := range strings.Split(log.String(), "\n") {
		if strings.Contains(line, "error_id=") && strings.Contains(line, secret) {
			t.Errorf("the request's log line shows the secret: %s", line)
		}
	}
}

// An upstream line of 300 MB without a newline grew
// the gateway to 650 MB. readLine holds at most the limit.
func TestReadLineCapsMemory(t *testing.T) {
	const size = 300 << 20
	src := io.LimitReader(repeatReader('x'), size)
	br := bufio.NewReaderSize(src, 64<<10)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	head, over, err := jsonrpc.ReadLine(br, 1<<20)
	runtime.ReadMemStats(&after)
	if !over || !errors.Is(err, io.EOF) || len(head) != jsonrpc.LineHeadBytes {
		t.Fatalf("300 MB line: over %v, err %v, head %d bytes", over, err, len(head))
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 8<<20 {
		t.Fatalf("reading a 300 MB line under a 1 MiB limit allocated %d MiB", grew>>20)
	}
	// lines under the limit come back whole, the last one without newline
	br = bufio.NewReaderSize(strings.NewReader("{\"a\":1}\n"+strings.Repeat("y", 100<<10)+"\nlast"), 16)
	for _, want := range []string{"{\"a\":1}\n", strings.Repeat("y", 100<<10) + "\n", "last"} {
		line, over, _ := jsonrpc.ReadLine(br, 1<<20)
		if over || string(line) != want {
			t.Fatalf("line %q (over %v), want %d bytes", line[:min(len(line), 20)], over, len(want))
		}
	}
}

type repeatReader byte

func (r repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

// An answer over limits.max_upstream_message_bytes fails its call with a
// clear error; the connection stays up.
func TestUpstreamMessageTooLarge(t *testing.T) {
	t.Parallel()
	g := newGatewayWith(t, Options{Servers: map[string]config.ServerConfig{"stub": stubServer(t)}, Limits: config.Limits{MaxUpstreamMessageBytes: 1 << 20}})
	c := connect(t, g)
	r := c.call("tools/call", toolCall("huge", `{"bytes":8388608}`))
	if code := gjson.GetBytes(r, "error.code").Int(); code != jsonrpc.CodeUpstreamInvalid || !strings.Contains(gjson.GetBytes(r, "error.message").String(), "more than 1048576 bytes") {
		t.Fatalf("8 MiB answer under a 1 MiB limit: %s", r)
	}
	if v := c.result("tools/call", toolCall("echo", `{"v":"still up"}`)).Get("structuredContent.v").String(); v != "still up" {
		t.Fatalf("after the dropped answer: %q", v)
	}
	if st := g.Status()[0]; st.Restarts != 0 {
		t.Errorf("the upstream was restarted: %+v", st)
	}
}

// Logging an upstream's stderr unchanged wrote
// 1.4 GB in 8 s. The stub writes 1024 lines at once; at most the limit
// per second are logged, and the rest are counted.
func TestStderrRateLimited(t *testing.T) {
	var log syncbuf.Buffer
	g := newGatewayWith(t, Options{
		Servers: map[string]config.ServerConfig{"stub": stubServer(t)},
		Logger:  hclog.New(&hclog.LoggerOptions{Output: &log, Level: hclog.Info}),
		Limits:  config.Limits{StderrLinesPerSecond: 10},
	})
	c := connect(t, g)
	start := time.Now()
	if txt := c.result("tools/call", toolCall("flood", "")).Get("content.0.text").String(); txt != "flooded" {
		t.Fatalf("flood: %q", txt)
	}
	_ = g.Close(context.Background()) // stderr ends: the count is reported
	secs := int(time.Since(start)/time.Second) + 1
	logged := strings.Count(log.String(), "stderr: line=")
	if logged > 10*secs {
		t.Errorf("%d stderr lines logged in %d s under a limit of 10/s", logged, secs)
	}
	if !strings.Contains(log.String(), "stderr lines suppressed") {
		t.Errorf("no suppressed-lines note:\n%s", log.String())
	}
}

// Batches got -32700, object/array/bool ids were
// echoed, "jsonrpc" was not checked, and a client's parse error was
// worded as the upstream's.
func TestClientJSONRPCValidation(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, map[string]config.ServerConfig{"stub": stubServer(t)}, Options{}.Engine)
	c := connect(t, g)
	for _, tc := range []struct {
		name, line, key string
		code            int64
	}{
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`, "null", jsonrpc.CodeInvalidRequest},
		{"object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, "null", jsonrpc.CodeInvalidRequest},
		{"array id", `{"jsonrpc":"2.0","id":[1],"method":"ping"}`, "null", jsonrpc.CodeInvalidRequest},
		{"bool id", `{"jsonrpc":"2.0","id":true,"method":"ping"}`, "null", jsonrpc.CodeInvalidRequest},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":501,"method":"ping"}`, "501", jsonrpc.CodeInvalidRequest},
		{"jsonrpc missing", `{"id":502,"method":"ping"}`, "502", jsonrpc.CodeInvalidRequest},
		{"method not a string", `{"jsonrpc":"2.0","id":503,"method":7}`, "503", jsonrpc.CodeInvalidRequest},
		// The id of broken JSON is a guess; JSON-RPC 2.0 wants null.
		{"parse error", `{"jsonrpc":"2.0","id":504,"method":`, "null", jsonrpc.CodeParseError},
		{"parse error, id 7", `{"jsonrpc":"2.0","id":7,"method":`, "null", jsonrpc.CodeParseError},
		{"parse error without id", `{"jsonrpc":`, "null", jsonrpc.CodeParseError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := c.rawCall(tc.line, tc.key)
			if r.Get("error.code").Int() != tc.code || r.Get("id").Raw != tc.key {
				t.Fatalf("want code %d and id %s, got %s", tc.code, tc.key, r.Raw)
			}
			if msg := r.Get("error.message").String(); strings.Contains(msg, "upstream") {
				t.Errorf("a client's error is worded as the upstream's: %q", msg)
			}
		})
	}
	if c.result("ping", "").Raw != "{}" {
		t.Error("ping after the invalid messages")
	}
}

// A request whose arguments contain the word "initialize" was
// handled in line (a byte search), delaying every request behind it.
func TestInitializeInArgumentsDoesNotBlock(t *testing.T) {
	t.Parallel()
	s := stubServer(t)
	s.Timeout = store.Duration(time.Minute)
	g := newTestGateway(t, map[string]config.ServerConfig{"stub": s}, Options{}.Engine)
	c := connect(t, g)
	c.start("tools/call", toolCall("hang", `{"note":"initialize"}`))
	_, ch := c.start("ping", "")
	select {
	case r := <-ch:
		if gjson.GetBytes(r, "result").Raw != "{}" {
			t.Fatalf("ping: %s", r)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("ping waited behind a request that mentions initialize")
	}
}

// A client line over limits.max_message_bytes gets -32600 with its id;
// the session goes on.
func TestClientLineTooLarge(t *testing.T) {
	t.Parallel()
	g := newGatewayWith(t, Options{Servers: map[string]config.ServerConfig{"stub": stubServer(t)}, Limits: config.Limits{MaxMessageBytes: 1 << 20}})
	c := connect(t, g)
	line := `{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"echo","arguments":{"v":"` + strings.Repeat("z", 4<<20) + `"}}}`
	r := c.rawCall(line, "42")
	if r.Get("error.code").Int() != jsonrpc.CodeInvalidRequest || !strings.Contains(r.Get("error.message").String(), "more than 1048576 bytes") {
		t.Fatalf("4 MiB line under a 1 MiB limit: %s", r.Raw[:min(len(r.Raw), 300)])
	}
	if c.result("ping", "").Raw != "{}" {
		t.Error("ping after the large line")
	}
}

// Four 60 MB requests at once reached 1.4 GB. Large requests
// share limits.large_request_bytes: one that does not fit waits until
// the one before it is done (over stdio the gateway reads no further line
// meanwhile: back-pressure on the client).
func TestLargeRequestsBounded(t *testing.T) {
	t.Parallel()
	g := newGatewayWith(t, Options{Servers: map[string]config.ServerConfig{"stub": stubServer(t)}, Limits: config.Limits{
		MaxMessageBytes: 3 << 20, LargeMessageBytes: 1 << 20, LargeRequestBytes: 3 << 20,
	}})
	c := connect(t, g)
	pad := strings.Repeat("p", 2<<20)
	hangID, hang := c.start("tools/call", toolCall("hang", `{"pad":"`+pad+`"}`))
	waitFor(t, "the first large request holds its share", func() bool {
		if g.large.TryAcquire(3 << 20) {
			g.large.Release(3 << 20)
			return false
		}
		return true
	})
	_, echo := c.start("tools/call", toolCall("echo", `{"v":"second","pad":"`+pad+`"}`))
	c.notify("notifications/cancelled", `{"requestId":`+hangID+`}`)
	select {
	case r := <-echo:
		t.Fatalf("the second large request ran beside the first: %.200s", r)
	case r := <-hang:
		if !gjson.GetBytes(r, "error").Exists() {
			t.Fatalf("hang: %.200s", r)
		}
	}
	select {
	case r := <-echo:
		if gjson.GetBytes(r, "result.structuredContent.v").String() != "second" {
			t.Fatalf("second: %.200s", r)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the second large request never ran")
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// httpPost posts one JSON-RPC message to h.
func httpPost(t *testing.T, url, session, body string) (*http.Response, gjson.Result) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, gjson.ParseBytes(b)
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// Over HTTP: a batch is -32600 with 400, a body over the limit 413 with
// a JSON-RPC error.
func TestHTTPInvalidAndTooLarge(t *testing.T) {
	t.Parallel()
	g := newGatewayWith(t, Options{Servers: map[string]config.ServerConfig{"stub": stubServer(t)}, Limits: config.Limits{MaxMessageBytes: 1 << 20}})
	ts := httptest.NewServer(g.HTTPHandler(HTTPOptions{}))
	defer ts.Close()
	resp, r := httpPost(t, ts.URL, "", `[`+initBody+`]`)
	if resp.StatusCode != http.StatusBadRequest || r.Get("error.code").Int() != jsonrpc.CodeInvalidRequest {
		t.Errorf("batch: %d %s", resp.StatusCode, r.Raw)
	}
	resp, r = httpPost(t, ts.URL, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"pad":"`+strings.Repeat("q", 2<<20)+`"}}`)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || r.Get("error.code").Int() != jsonrpc.CodeInvalidRequest || !strings.Contains(r.Get("error.message").String(), "max_message_bytes") {
		t.Errorf("2 MiB body under a 1 MiB limit: %d %s", resp.StatusCode, r.Raw)
	}
}

// A parse error over HTTP answered with the id guessed from the
// broken body; JSON-RPC 2.0 wants null when the id cannot be determined.
func TestHTTPParseErrorHasNullID(t *testing.T) {
	t.Parallel()
	g := newGatewayWith(t, Options{Servers: map[string]config.ServerConfig{"stub": stubServer(t)}})
	ts := httptest.NewServer(g.HTTPHandler(HTTPOptions{}))
	defer ts.Close()
	for _, body := range []string{`{"jsonrpc":"2.0","id":7,"method":`, `{"jsonrpc":"2.0","id":"seven","method":"ping","params":{`} {
		resp, r := httpPost(t, ts.URL, "", body)
		if resp.StatusCode != http.StatusBadRequest || r.Get("error.code").Int() != jsonrpc.CodeParseError || r.Get("id").Raw != "null" {
			t.Errorf("%s: %d %s, want 400 with -32700 and id null", body, resp.StatusCode, r.Raw)
		}
	}
}

// 40,000 initialize requests without a DELETE grew memory linearly.
// Sessions are capped (the least recently used idle one goes) and expire
// when idle.
func TestHTTPSessionsCappedAndExpire(t *testing.T) {
	t.Parallel()
	g := newTestGateway(t, map[string]config.ServerConfig{"stub": stubServer(t)}, Options{}.Engine)
	h := g.HTTPHandler(HTTPOptions{MaxSessions: 3, SessionIdleTimeout: 300 * time.Millisecond})
	srv := h.(*transport.HTTP)
	ts := httptest.NewServer(h)
	defer ts.Close()
	count := srv.Sessions
	var ids []string
	for range 20 {
		resp, r := httpPost(t, ts.URL, "", initBody)
		if resp.StatusCode != http.StatusOK || !r.Get("result").Exists() {
			t.Fatalf("initialize: %d %s", resp.StatusCode, r.Raw)
		}
		ids = append(ids, resp.Header.Get("Mcp-Session-Id"))
		if n := count(); n > 3 {
			t.Fatalf("%d sessions open under a cap of 3", n)
		}
	}
	if resp, _ := httpPost(t, ts.URL, ids[0], `{"jsonrpc":"2.0","id":2,"method":"ping"}`); resp.StatusCode != http.StatusNotFound {
		t.Errorf("the first, evicted session: status %d, want 404", resp.StatusCode)
	}
	if resp, r := httpPost(t, ts.URL, ids[19], `{"jsonrpc":"2.0","id":2,"method":"ping"}`); resp.StatusCode != http.StatusOK || r.Get("result").Raw != "{}" {
		t.Errorf("the newest session: %d %s", resp.StatusCode, r.Raw)
	}
	waitFor(t, "idle sessions expire", func() bool { return count() == 0 })
	if resp, _ := httpPost(t, ts.URL, ids[19], `{"jsonrpc":"2.0","id":3,"method":"ping"}`); resp.StatusCode != http.StatusNotFound {
		t.Errorf("an expired session: status %d, want 404", resp.StatusCode)
	}
}

// A session with a request in flight is neither evicted nor expired: at
// the cap with every session busy, initialize gets 503.
func TestHTTPBusySessionsKept(t *testing.T) {
	t.Parallel()
	s := stubServer(t)
	s.Timeout = store.Duration(3 * time.Second)
	g := newTestGateway(t, map[string]config.ServerConfig{"stub": s}, Options{}.Engine)
	h := g.HTTPHandler(HTTPOptions{MaxSessions: 1, SessionIdleTimeout: 50 * time.Millisecond})
	ts := httptest.NewServer(h)
	defer ts.Close()
	resp, _ := httpPost(t, ts.URL, "", initBody)
	sid := resp.Header.Get("Mcp-Session-Id")
	var wg sync.WaitGroup
	wg.Add(1)
	var hung gjson.Result
	go func() {
		defer wg.Done()
		_, hung = httpPost(t, ts.URL, sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":%s}`, toolCall("hang", "")))
	}()
	srv := h.(*transport.HTTP)
	waitFor(t, "the call is in flight", func() bool { return srv.Busy(sid) })
	resp, r := httpPost(t, ts.URL, "", initBody)
	if resp.StatusCode != http.StatusServiceUnavailable || r.Get("error").Raw == "" {
		t.Errorf("initialize at the cap with the only session busy: %d %s", resp.StatusCode, r.Raw)
	}
	wg.Wait()
	if hung.Get("error.code").Int() != jsonrpc.CodeUpstreamTimeout {
		t.Errorf("the busy session's call ended early: %s", hung.Raw)
	}
}

// A message nested 8,000,000 levels deep (16 MB) ended the process with a
// stack overflow in gjson's validator, over HTTP and stdio alike. It is
// a parse error naming the depth limit, and the gateway goes on.
func TestClientMessageTooDeep(t *testing.T) {
	t.Parallel()
	g := newGatewayWith(t, Options{Servers: map[string]config.ServerConfig{"stub": stubServer(t)}})
	deep := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{"v":` +
		strings.Repeat("[", 8_000_000) + strings.Repeat("]", 8_000_000) + `}}}`
	ts := httptest.NewServer(g.HTTPHandler(HTTPOptions{}))
	defer ts.Close()
	resp, r := httpPost(t, ts.URL, "", deep)
	if resp.StatusCode != http.StatusBadRequest || r.Get("error.code").Int() != jsonrpc.CodeParseError ||
		!strings.Contains(r.Get("error.message").String(), "at most 100000 levels") {
		t.Errorf("HTTP: %d %.300s", resp.StatusCode, r.Raw)
	}
	c := connect(t, g)
	r = c.rawCall(deep, "null")
	if r.Get("error.code").Int() != jsonrpc.CodeParseError || !strings.Contains(r.Get("error.message").String(), "at most 100000 levels") {
		t.Errorf("stdio: %.300s", r.Raw)
	}
	if c.result("ping", "").Raw != "{}" {
		t.Error("ping after the deep message")
	}
}

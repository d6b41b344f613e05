package upstreamhttp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// rpcIn is one JSON-RPC message a test server received.
type rpcIn struct {
	id     string // raw; "" for a notification
	method string
	params string
	result string
	header http.Header
}

func readRPC(t *testing.T, r *http.Request) rpcIn {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Errorf("reading the request: %v", err)
	}
	g := gjson.ParseBytes(b)
	return rpcIn{id: g.Get("id").Raw, method: g.Get("method").String(), params: g.Get("params").Raw, result: g.Get("result").Raw, header: r.Header.Clone()}
}

func writeJSON(w http.ResponseWriter, format string, args ...any) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, format, args...)
}

// writeEvent writes one SSE message event and flushes it.
func writeEvent(w http.ResponseWriter, format string, args ...any) {
	fmt.Fprintf(w, "event: message\ndata: "+format+"\n\n", args...)
	w.(http.Flusher).Flush()
}

func newStreamable(t *testing.T, url string, cfg Config) *Streamable {
	t.Helper()
	cfg.URL = url
	c, err := NewStreamable(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// A JSON response: the request goes out with the transport's headers, the
// configured ones and the call's own; the result comes back.
func TestStreamableJSONResponse(t *testing.T) {
	var got rpcIn
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = readRPC(t, r)
		writeJSON(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[]}}`, got.id)
	}))
	defer ts.Close()
	c := newStreamable(t, ts.URL, Config{Headers: map[string]string{"Authorization": "Bearer x"}})
	c.SetProtocolVersion("2026-07-28")
	h := http.Header{}
	h.Set("Mcp-Method", "tools/list")
	res, err := c.Call(context.Background(), 7, "tools/list", json.RawMessage(`{"cursor":"c"}`), h)
	if err != nil {
		t.Fatal(err)
	}
	if string(res) != `{"tools":[]}` {
		t.Errorf("result %s", res)
	}
	if got.id != "7" || got.method != "tools/list" || got.params != `{"cursor":"c"}` {
		t.Errorf("request %+v", got)
	}
	for k, want := range map[string]string{
		"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Authorization": "Bearer x", "Mcp-Method": "tools/list", "Mcp-Protocol-Version": "2026-07-28",
	} {
		if v := got.header.Get(k); v != want {
			t.Errorf("header %s = %q, want %q", k, v, want)
		}
	}
	if v := got.header.Get("Mcp-Session-Id"); v != "" {
		t.Errorf("a session ID %q before initialize", v)
	}
}

// Error answers: a JSON-RPC error (under 200 or a 4xx) is a
// *ResponseError with code, message and data; any other status a
// *StatusError.
func TestStreamableErrors(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		code   int
		http   int
	}{
		{"error response", 200, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad","data":{"x":1}}}`, -32602, 0},
		{"error under a 4xx", 404, `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no such method"}}`, -32601, 0},
		{"error with a null id", 400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid"}}`, -32600, 0},
		{"plain 500", 500, "boom", 0, 500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}))
			defer ts.Close()
			c := newStreamable(t, ts.URL, Config{})
			_, err := c.Call(context.Background(), 1, "tools/call", nil, nil)
			var re *ResponseError
			var se *StatusError
			switch {
			case tt.code != 0:
				if !errors.As(err, &re) || re.Code != tt.code {
					t.Fatalf("error %v, want code %d", err, tt.code)
				}
				if tt.name == "error response" && string(re.Data) != `{"x":1}` {
					t.Errorf("data %s", re.Data)
				}
			case !errors.As(err, &se) || se.StatusCode != tt.http || se.Body != tt.body:
				t.Fatalf("error %v, want HTTP %d", err, tt.http)
			}
			select {
			case <-c.Done():
				t.Error("an error answer ended the connection")
			default:
			}
		})
	}
}

// An SSE response carries a notification and a server-to-client request
// before the result: the notification reaches the handler first, the
// request's answer is POSTed back (with the session), and then the result
// arrives.
func TestStreamableSSEResponse(t *testing.T) {
	answered := make(chan rpcIn, 1)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in := readRPC(t, r)
		switch {
		case in.method == "initialize":
			w.Header().Set("Mcp-Session-Id", "sess-1")
			writeJSON(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25"}}`, in.id)
		case in.method == "tools/call":
			w.Header().Set("Content-Type", "text/event-stream")
			writeEvent(w, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`)
			writeEvent(w, `{"jsonrpc":"2.0","id":"s1","method":"elicitation/create","params":{"message":"ok?"}}`)
			select {
			case a := <-answered:
				writeEvent(w, `{"jsonrpc":"2.0","id":%s,"result":{"answer":%s}}`, in.id, a.result)
			case <-time.After(10 * time.Second):
				t.Error("no answer to the server's request")
			}
		case in.id == `"s1"`:
			answered <- in
			w.WriteHeader(http.StatusAccepted)
		default:
			t.Errorf("unexpected %+v", in)
		}
	}))
	defer ts.Close()
	var mu sync.Mutex
	var seen []string
	c := newStreamable(t, ts.URL, Config{Handlers: Handlers{
		Notification: func(method string, params json.RawMessage) {
			mu.Lock()
			seen = append(seen, method+" "+string(params))
			mu.Unlock()
		},
		Request: func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
			mu.Lock()
			seen = append(seen, method+" "+string(params))
			mu.Unlock()
			return json.RawMessage(`{"action":"accept"}`), nil
		},
	}})
	if _, err := c.Call(context.Background(), 1, "initialize", json.RawMessage(`{}`), nil); err != nil {
		t.Fatal(err)
	}
	res, err := c.Call(context.Background(), 2, "tools/call", json.RawMessage(`{"name":"x"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(res) != `{"answer":{"action":"accept"}}` {
		t.Errorf("result %s", res)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{`notifications/progress {"progress":1}`, `elicitation/create {"message":"ok?"}`}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Errorf("handlers saw %q, want %q", seen, want)
	}
}

// A server request with no handler is answered with method not found.
func TestStreamableRequestWithoutHandler(t *testing.T) {
	answers := make(chan string, 1)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		g := gjson.ParseBytes(b)
		if !g.Get("method").Exists() {
			answers <- string(b)
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		writeEvent(w, `{"jsonrpc":"2.0","id":9,"method":"roots/list"}`)
		answer := <-answers
		writeEvent(w, `{"jsonrpc":"2.0","id":%s,"result":{"answer":%s}}`, g.Get("id").Raw, answer)
	}))
	defer ts.Close()
	c := newStreamable(t, ts.URL, Config{})
	res, err := c.Call(context.Background(), 1, "tools/list", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := gjson.GetBytes(res, "answer")
	if a.Get("id").Raw != "9" || a.Get("error.code").Int() != codeMethodNotFound || a.Get("result").Exists() {
		t.Errorf("answer %s, want method not found for id 9", a.Raw)
	}
}

// A done ctx abandons the call at once, with ctx's error, while the
// server is still working.
func TestStreamableCancel(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer ts.Close()
	c := newStreamable(t, ts.URL, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	errc := startCall(ctx, c, "tools/call")
	cancel()
	wantCallErr(t, errc, context.Canceled, "the call did not end with its ctx")
}

// Close ends a call in flight with ErrClosed.
func TestStreamableCloseEndsCalls(t *testing.T) {
	started := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		close(started)
		<-r.Context().Done()
	}))
	defer ts.Close()
	c := newStreamable(t, ts.URL, Config{})
	errc := startCall(context.Background(), c, "tools/call")
	<-started
	_ = c.Close()
	wantCallErr(t, errc, ErrClosed, "Close left the call waiting")
}

// A server that ends the response stream after an event ID, before the
// response, is resumed with a GET carrying Last-Event-ID (SEP-1699); the
// response arrives on the resumed stream.
func TestStreamableResume(t *testing.T) {
	lastEventID := make(chan string, 1)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		if r.Method == http.MethodGet {
			lastEventID <- r.Header.Get("Last-Event-ID")
			fmt.Fprintf(w, "id: ev-2\ndata: {\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{\"ok\":true}}\n\n")
			return
		}
		fmt.Fprintf(w, "id: ev-1\nretry: 5\ndata: \n\n")
	}))
	defer ts.Close()
	c := newStreamable(t, ts.URL, Config{})
	res, err := c.Call(context.Background(), 5, "tools/call", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if id := <-lastEventID; string(res) != `{"ok":true}` || id != "ev-1" {
		t.Errorf("result %s after resuming from %q", res, id)
	}
}

// A stream that ends without an event ID and without the response fails
// the call with ErrNoResponse.
func TestStreamableNoResponse(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		writeEvent(w, `{"jsonrpc":"2.0","method":"notifications/message","params":{}}`)
	}))
	defer ts.Close()
	c := newStreamable(t, ts.URL, Config{})
	if _, err := c.Call(context.Background(), 1, "tools/call", nil, nil); !errors.Is(err, ErrNoResponse) {
		t.Errorf("error %v, want ErrNoResponse", err)
	}
}

// From 2026-07-28 on a stream is never resumed: one the server ends
// before the response fails the call, with no GET.
func TestStreamableNoResumeWhenStateless(t *testing.T) {
	gets := make(chan struct{}, 1)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			gets <- struct{}{}
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "id: ev-1\nretry: 1\ndata: \n\n")
	}))
	defer ts.Close()
	c := newStreamable(t, ts.URL, Config{})
	c.SetProtocolVersion("2026-07-28")
	if _, err := c.Call(context.Background(), 5, "subscriptions/listen", nil, nil); !errors.Is(err, ErrNoResponse) {
		t.Errorf("error %v, want ErrNoResponse", err)
	}
	select {
	case <-gets:
		t.Error("a 2026-07-28 stream was resumed with a GET")
	default:
	}
}

// Calls answered as SSE streams reuse their connections, though each
// caller's context ends as soon as its call returns (as the gateway's
// per-call timeouts do): the stream's end is read after the response, so
// the connection goes back to the pool instead of being closed. The next
// call may still start before its predecessor's stream ends and dial a
// second connection (the race is the transport's, and -race on a loaded
// machine loses it now and then), so the test counts closed connections,
// which only a torn-down stream makes.
func TestStreamableSSEReusesConnection(t *testing.T) {
	// The server ends each stream once the test saw the call's answer:
	// the stream's end comes after the response, as over a network.
	// Buffered, so that a stream the client tore down does not hold the
	// test up: its token ends the next stream early instead.
	release := make(chan struct{}, 20)
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in := readRPC(t, r)
		w.Header().Set("Content-Type", "text/event-stream")
		writeEvent(w, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`)
		writeEvent(w, `{"jsonrpc":"2.0","id":%s,"result":{"n":%s}}`, in.id, in.id)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	var mu sync.Mutex
	conns, closed := 0, 0
	ts.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		mu.Lock()
		defer mu.Unlock()
		switch st {
		case http.StateNew:
			conns++
		case http.StateClosed, http.StateHijacked:
			closed++
		}
	}
	ts.Start()
	defer ts.Close()
	c := newStreamable(t, ts.URL, Config{Client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}})
	for i := 1; i <= 20; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := c.Call(ctx, int64(i), "tools/call", json.RawMessage(`{}`), nil)
		cancel()
		if err != nil || gjson.GetBytes(res, "n").Int() != int64(i) {
			t.Fatalf("call %d: %s %v", i, res, err)
		}
		release <- struct{}{}
	}
	mu.Lock()
	defer mu.Unlock()
	if closed > 0 || conns > 10 {
		t.Errorf("20 sequential calls opened %d connections and closed %d, want them kept and reused", conns, closed)
	}
}

// startCall runs c.Call(ctx, 1, method) in the background and returns
// where its error arrives.
func startCall(ctx context.Context, c Transport, method string) <-chan error {
	errc := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, 1, method, nil, nil)
		errc <- err
	}()
	return errc
}

// wantCallErr waits (bounded) for a call's error and checks it is want;
// stuck says what it means when none comes.
func wantCallErr(t *testing.T, errc <-chan error, want error, stuck string) {
	t.Helper()
	select {
	case err := <-errc:
		if !errors.Is(err, want) {
			t.Errorf("error %v, want %v", err, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal(stuck)
	}
}

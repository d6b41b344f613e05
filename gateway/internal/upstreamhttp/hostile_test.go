package upstreamhttp

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// testCap is the message cap of the hostile tests: small, so that
// reaching it is quick.
const testCap = 2 << 20

// testLimits are the limits of a reader under test.
var testLimits = limits{maxMessage: testCap}

// hostileServer is an HTTP upstream that misbehaves on purpose, one way
// per path (see ServeHTTP). It listens on 127.0.0.1 only.
type hostileServer struct {
	*httptest.Server
	// other is where the redirects point: it must receive nothing.
	other      *httptest.Server
	otherConns atomic.Int64
	otherReqs  atomic.Int64

	mu      sync.Mutex
	headers []http.Header // of each request /echo answered
}

// hostileMember is one gzip member inflating to 1 MiB of "A": written
// again and again, a bomb of any size costs the server nothing (Go's
// gzip reader reads concatenated members as one stream).
var hostileMember = func() []byte {
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	_, _ = zw.Write(bytes.Repeat([]byte("A"), 1<<20))
	_ = zw.Close()
	return b.Bytes()
}()

// chunkA is what the endless writers repeat.
var chunkA = bytes.Repeat([]byte("A"), 64<<10)

func newHostileServer(t *testing.T) *hostileServer {
	t.Helper()
	s := &hostileServer{}
	s.other = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.otherReqs.Add(1)
		writeJSON(w, `{"jsonrpc":"2.0","id":1,"result":{"stolen":true}}`)
	}))
	s.other.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.otherConns.Add(1)
		}
	}
	s.other.Start()
	t.Cleanup(s.other.Close)
	s.Server = httptest.NewServer(s)
	t.Cleanup(s.Close)
	return s
}

// otherPort is the port of the server the redirects point to.
func (s *hostileServer) otherPort() string {
	_, port, _ := net.SplitHostPort(s.other.Listener.Addr().String())
	return port
}

// ServeHTTP misbehaves as the path says.
func (s *hostileServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	switch r.URL.Path {
	case "/gzip-bomb", "/gzip-400m": // a JSON body inflating to 1 GiB, or 400 MiB
		w.Header().Set("Content-Type", mediaJSON)
		w.Header().Set("Content-Encoding", "gzip")
		writeMembers(w, bombMiB(r.URL.Path))
	case "/gzip-bomb-sse", "/gzip-400m-sse": // an SSE stream whose one line inflates likewise
		w.Header().Set("Content-Type", mediaStream)
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		_, _ = zw.Write([]byte("data: "))
		_ = zw.Close()
		writeMembers(w, bombMiB(r.URL.Path))
	case "/big-json": // valid JSON, twice the cap
		w.Header().Set("Content-Type", mediaJSON)
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":1,"result":{"x":"%s"}}`, strings.Repeat("A", 2*testCap))
	case "/lying-length": // Content-Length: 2000000000, then 10 bytes
		conn, bw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		fmt.Fprintf(bw, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2000000000\r\n\r\n{\"a\":1234}")
		_ = bw.Flush()
	case "/endless-line": // an SSE data line of 3 GiB, never ended
		w.Header().Set("Content-Type", mediaStream)
		_, _ = io.WriteString(w, "data: ")
		writeFor(w, r, 3<<30)
	case "/big-event": // an event of many short data lines, together over the cap
		w.Header().Set("Content-Type", mediaStream)
		line := []byte("data: " + strings.Repeat("A", 1000) + "\n")
		for i := 0; i < 2*testCap/len(line) && r.Context().Err() == nil; i++ {
			if _, err := w.Write(line); err != nil {
				return
			}
		}
	case "/trickle-json": // headers, then one byte of body now and then, forever
		w.Header().Set("Content-Type", mediaJSON)
		w.Header().Set("Content-Length", "1000000")
		trickle(w, r, []byte(" "))
	case "/trickle-sse": // a stream of keep-alives and nothing else, forever
		w.Header().Set("Content-Type", mediaStream)
		trickle(w, r, []byte(":\n"))
	case "/redirect-307":
		http.Redirect(w, r, "http://localhost:"+s.otherPort()+"/mcp", http.StatusTemporaryRedirect)
	case "/redirect-302":
		http.Redirect(w, r, "http://127.0.0.1:"+s.otherPort()+"/mcp", http.StatusFound)
	case "/redirect-same":
		http.Redirect(w, r, "/echo", http.StatusTemporaryRedirect)
	case "/echo":
		s.mu.Lock()
		s.headers = append(s.headers, r.Header.Clone())
		s.mu.Unlock()
		writeJSON(w, `{"jsonrpc":"2.0","id":1,"result":{"ok":true}}`)
	default:
		http.NotFound(w, r)
	}
}

// bombMiB is how many MiB a gzip bomb's path inflates to.
func bombMiB(path string) int {
	if strings.HasPrefix(path, "/gzip-400m") {
		return 400
	}
	return 1024
}

// writeMembers writes n copies of hostileMember, flushing as it goes.
func writeMembers(w http.ResponseWriter, n int) {
	for range n {
		if _, err := w.Write(hostileMember); err != nil {
			return
		}
	}
}

// writeFor writes "A"s until n bytes are out or the client is gone.
func writeFor(w http.ResponseWriter, r *http.Request, n int64) {
	for ; n > 0 && r.Context().Err() == nil; n -= int64(len(chunkA)) {
		if _, err := w.Write(chunkA); err != nil {
			return
		}
	}
}

// trickle writes b every 20 ms until the client is gone.
func trickle(w http.ResponseWriter, r *http.Request, b []byte) {
	w.WriteHeader(http.StatusOK)
	for {
		if _, err := w.Write(b); err != nil {
			return
		}
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// countingClient is an HTTP client that counts the body bytes its
// caller reads, after Go's transport has undone any gzip.
func countingClient(read *atomic.Int64) *http.Client {
	return observingClient(func(n int) { read.Add(int64(n)) })
}

// observingClient is an HTTP client that calls seen after each read of a
// response body with the bytes read, after Go's transport has undone any
// gzip.
func observingClient(seen func(n int)) *http.Client {
	return &http.Client{Transport: observingTransport{http.DefaultTransport.(*http.Transport).Clone(), seen}}
}

type observingTransport struct {
	base *http.Transport
	seen func(n int)
}

func (c observingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(req)
	if err == nil {
		resp.Body = observedBody{resp.Body, c.seen}
	}
	return resp, err
}

type observedBody struct {
	io.ReadCloser
	seen func(n int)
}

func (b observedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.seen(n)
	return n, err
}

// allocatedDuring is how many bytes the process allocated while f ran.
func allocatedDuring(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// hostileCall calls tools/call at path of s with cfg, bounded by 20 s.
func hostileCall(t *testing.T, s *hostileServer, path string, cfg Config) (json.RawMessage, error) {
	t.Helper()
	c := newStreamable(t, s.URL+path, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return c.Call(ctx, 1, "tools/call", json.RawMessage(`{}`), nil)
}

// A gzip body inflating to 1 GiB is read only up to the cap, its
// inflated bytes counted, and the call fails with ErrMessageTooLarge.
func TestHostileGzipBomb(t *testing.T) {
	s := newHostileServer(t)
	for _, path := range []string{"/gzip-bomb", "/gzip-bomb-sse"} {
		t.Run(path, func(t *testing.T) {
			var read atomic.Int64
			var err error
			alloc := allocatedDuring(func() {
				_, err = hostileCall(t, s, path, Config{Client: countingClient(&read), MaxMessageBytes: testCap})
			})
			if !errors.Is(err, ErrMessageTooLarge) {
				t.Fatalf("error %v, want ErrMessageTooLarge", err)
			}
			if n := read.Load(); n > testCap+2*sseReadBuffer {
				t.Errorf("read %d inflated bytes, want no more than the cap (%d) and a buffer", n, testCap)
			}
			if alloc > 16*testCap {
				t.Errorf("allocated %d bytes for a cap of %d", alloc, testCap)
			}
		})
	}
}

// A plain JSON body over the cap fails the call.
func TestHostileBigJSON(t *testing.T) {
	s := newHostileServer(t)
	var read atomic.Int64
	_, err := hostileCall(t, s, "/big-json", Config{Client: countingClient(&read), MaxMessageBytes: testCap})
	if !errors.Is(err, ErrMessageTooLarge) {
		t.Fatalf("error %v, want ErrMessageTooLarge", err)
	}
	if n := read.Load(); n > testCap+1 {
		t.Errorf("read %d bytes, want no more than the cap (%d)", n, testCap)
	}
	// Under the cap, the same body is a result.
	res, err := hostileCall(t, s, "/big-json", Config{MaxMessageBytes: 4 * testCap})
	if err != nil || len(gjson.GetBytes(res, "x").Str) != 2*testCap {
		t.Fatalf("under the cap: %d bytes, %v", len(res), err)
	}
}

// A declared Content-Length is no reason to allocate: over the cap it is
// refused unread; under it, a body that ends early costs what it held.
func TestHostileLyingContentLength(t *testing.T) {
	s := newHostileServer(t)
	var read atomic.Int64
	_, err := hostileCall(t, s, "/lying-length", Config{Client: countingClient(&read), MaxMessageBytes: testCap})
	if !errors.Is(err, ErrMessageTooLarge) || !strings.Contains(err.Error(), "2000000000") {
		t.Fatalf("error %v, want ErrMessageTooLarge naming the declared length", err)
	}
	if n := read.Load(); n != 0 {
		t.Errorf("read %d bytes of a body declared over the cap, want none", n)
	}
	alloc := allocatedDuring(func() {
		_, err = hostileCall(t, s, "/lying-length", Config{MaxMessageBytes: 4 << 30})
	})
	if err == nil || errors.Is(err, ErrMessageTooLarge) {
		t.Fatalf("error %v, want the body's early end", err)
	}
	if alloc > 16<<20 {
		t.Errorf("allocated %d bytes for a 10-byte body declared as 2000000000", alloc)
	}
}

// An SSE line that never ends, or an event whose data lines add up past
// the cap, drops the stream and fails the call with ErrMessageTooLarge.
func TestHostileSSE(t *testing.T) {
	s := newHostileServer(t)
	for _, path := range []string{"/endless-line", "/big-event"} {
		t.Run(path, func(t *testing.T) {
			var read atomic.Int64
			var err error
			alloc := allocatedDuring(func() {
				_, err = hostileCall(t, s, path, Config{Client: countingClient(&read), MaxMessageBytes: testCap})
			})
			if !errors.Is(err, ErrMessageTooLarge) {
				t.Fatalf("error %v, want ErrMessageTooLarge", err)
			}
			if n := read.Load(); n > testCap+testCap/100+2*sseReadBuffer { // data lines hold less than the lines
				t.Errorf("read %d bytes, want no more than the cap (%d) and a buffer", n, testCap)
			}
			if alloc > 16*testCap {
				t.Errorf("allocated %d bytes for a cap of %d", alloc, testCap)
			}
		})
	}
}

// The legacy transport's stream drops an endless line too: the
// connection ends, and the call waiting on it fails, with
// ErrMessageTooLarge.
func TestHostileLegacyEndlessLine(t *testing.T) {
	posted := make(chan struct{}, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /sse", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", mediaStream)
		fmt.Fprintf(w, "event: endpoint\ndata: /message\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-posted:
		case <-r.Context().Done():
			return
		}
		_, _ = io.WriteString(w, "data: ")
		writeFor(w, r, 3<<30)
	})
	mux.HandleFunc("POST /message", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusAccepted)
		posted <- struct{}{}
	})
	ts := httptest.NewServer(mux)
	defer ts.Close()
	c := dialLegacy(t, ts.URL+"/sse", Config{MaxMessageBytes: testCap})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := c.Call(ctx, 1, "tools/call", nil, nil)
	if !errors.Is(err, ErrMessageTooLarge) || !errors.Is(c.Err(), ErrMessageTooLarge) {
		t.Fatalf("call: %v; connection: %v; want both ErrMessageTooLarge", err, c.Err())
	}
}

// Config.Timeout bounds the whole call, the body or stream included, and
// a notification's answer: a server trickling forever fails them at it.
func TestHostileTrickle(t *testing.T) {
	s := newHostileServer(t)
	const timeout = 300 * time.Millisecond
	for _, path := range []string{"/trickle-json", "/trickle-sse"} {
		t.Run(path, func(t *testing.T) {
			c := newStreamable(t, s.URL+path, Config{Timeout: timeout})
			// The caller's own bound, far past the timeout, only keeps a
			// failing test from hanging.
			ctx, cancel := context.WithTimeout(context.Background(), 30*timeout)
			defer cancel()
			start := time.Now()
			_, err := c.Call(ctx, 1, "tools/call", nil, nil)
			took := time.Since(start)
			if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("call: error %v, want ErrTimeout", err)
			}
			if took < timeout || took > 10*timeout {
				t.Errorf("call: failed after %s, want about %s", took, timeout)
			}
			start = time.Now()
			err = c.Notify(ctx, "notifications/initialized", nil)
			if took := time.Since(start); !errors.Is(err, ErrTimeout) && took > 10*timeout {
				t.Errorf("notify: %v after %s, want done by the timeout", err, took)
			}
		})
	}
}

// A redirect to another origin (another host name for the same machine,
// another port) is refused before anything is sent there: the headers,
// body and session ID stay home. One within the origin is followed.
func TestHostileRedirect(t *testing.T) {
	s := newHostileServer(t)
	headers := map[string]string{"Authorization": "Bearer secret", "X-Api-Key": "key"}
	for _, path := range []string{"/redirect-307", "/redirect-302"} {
		t.Run(path, func(t *testing.T) {
			_, err := hostileCall(t, s, path, Config{Headers: headers})
			if !errors.Is(err, ErrCrossOriginRedirect) {
				t.Fatalf("error %v, want ErrCrossOriginRedirect", err)
			}
			if !strings.Contains(err.Error(), s.Listener.Addr().String()) || !strings.Contains(err.Error(), ":"+s.otherPort()) {
				t.Errorf("error %q does not name both origins", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if _, err := DialLegacy(ctx, Config{URL: s.URL + path, Headers: headers}); !errors.Is(err, ErrCrossOriginRedirect) {
				t.Errorf("legacy dial: error %v, want ErrCrossOriginRedirect", err)
			}
		})
	}
	if n, c := s.otherReqs.Load(), s.otherConns.Load(); n != 0 || c != 0 {
		t.Errorf("the other origin got %d requests on %d connections, want none", n, c)
	}
	res, err := hostileCall(t, s, "/redirect-same", Config{Headers: headers})
	if err != nil || !gjson.GetBytes(res, "ok").Bool() {
		t.Fatalf("a same-origin redirect: %s %v", res, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.headers) != 1 || s.headers[0].Get("X-Api-Key") != "key" || s.headers[0].Get("Authorization") != "Bearer secret" {
		t.Errorf("the redirected request's headers: %v", s.headers)
	}
}

// Many calls at once queue for a bounded number of connections instead
// of each opening its own.
func TestConnectionCap(t *testing.T) {
	const maxConns, calls = 4, 64
	var mu sync.Mutex
	open, most := 0, 0
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in := readRPC(t, r)
		time.Sleep(10 * time.Millisecond)
		writeJSON(w, `{"jsonrpc":"2.0","id":%s,"result":{}}`, in.id)
	}))
	ts.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		mu.Lock()
		defer mu.Unlock()
		switch st {
		case http.StateNew:
			open++
			most = max(most, open)
		case http.StateClosed, http.StateHijacked:
			open--
		}
	}
	ts.Start()
	defer ts.Close()
	c := newStreamable(t, ts.URL, Config{MaxConnsPerHost: maxConns})
	var wg sync.WaitGroup
	errs := make(chan error, calls)
	for i := 1; i <= calls; i++ {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if _, err := c.Call(ctx, int64(i), "tools/call", nil, nil); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if most > maxConns {
		t.Errorf("%d connections open at once, want at most %d", most, maxConns)
	}
}

// Calls holding every connection of their pool, each waiting for the
// answer to a request of the server's, still get them: answers go
// through the other pool.
func TestConnectionCapAnswersDoNotWaitForCalls(t *testing.T) {
	const maxConns, calls = 2, 4
	var mu sync.Mutex
	answered := map[string]chan struct{}{}
	waitFor := func(id string) chan struct{} {
		mu.Lock()
		defer mu.Unlock()
		if answered[id] == nil {
			answered[id] = make(chan struct{})
		}
		return answered[id]
	}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in := readRPC(t, r)
		if in.method == "" { // an answer
			close(waitFor(strings.Trim(in.id, `"`)))
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", mediaStream)
		writeEvent(w, `{"jsonrpc":"2.0","id":"s-%s","method":"ping"}`, in.id)
		select {
		case <-waitFor("s-" + in.id):
			writeEvent(w, `{"jsonrpc":"2.0","id":%s,"result":{}}`, in.id)
		case <-r.Context().Done():
		}
	}))
	defer ts.Close()
	c := newStreamable(t, ts.URL, Config{MaxConnsPerHost: maxConns, Handlers: Handlers{
		Request: func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{}`), nil
		},
	}})
	var wg sync.WaitGroup
	for i := 1; i <= calls; i++ {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if _, err := c.Call(ctx, int64(i), "tools/call", nil, nil); err != nil {
				t.Errorf("call %d: %v", i, err)
			}
		})
	}
	wg.Wait()
}

// The reader never holds more than the cap of a line or an event.
func TestEventReaderCap(t *testing.T) {
	lim := limits{maxMessage: 100}
	for _, tt := range []struct{ name, in string }{
		{"a line", "data: " + strings.Repeat("A", 200) + "\n\n"},
		{"a line without its end", ": " + strings.Repeat("A", 200)},
		{"an event", strings.Repeat("data: "+strings.Repeat("A", 30)+"\n", 5) + "\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newEventReader(bufio.NewReader(strings.NewReader(tt.in)), lim)
			if _, err := r.next(); !errors.Is(err, ErrMessageTooLarge) {
				t.Fatalf("error %v, want ErrMessageTooLarge", err)
			}
			if r.data != nil {
				t.Errorf("the reader still holds %d bytes", len(r.data))
			}
		})
	}
	r := newEventReader(strings.NewReader("data: "+strings.Repeat("A", 100)+"\n\n"), lim)
	if ev, err := r.next(); err != nil || len(ev.data) != 100 {
		t.Fatalf("an event of the cap: %d bytes, %v", len(ev.data), err)
	}
}

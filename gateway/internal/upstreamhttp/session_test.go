package upstreamhttp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// sessionServer is a Streamable HTTP server with one session: initialize
// opens it, DELETE ends it, and a request carrying any other session ID
// gets 404. Its GET stream, when offered, sends the messages of getMsgs.
type sessionServer struct {
	t        *testing.T
	mu       sync.Mutex
	session  string
	gone     bool // the session expired
	log      []string
	offerGET bool
	getMsgs  chan string
}

func (s *sessionServer) record(line string) {
	s.mu.Lock()
	s.log = append(s.log, line)
	s.mu.Unlock()
}

func (s *sessionServer) lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.log...)
}

func (s *sessionServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sid := r.Header.Get("Mcp-Session-Id")
	s.mu.Lock()
	known := sid != "" && sid == s.session && !s.gone
	s.mu.Unlock()
	switch r.Method {
	case http.MethodDelete:
		s.record("DELETE " + sid)
		w.WriteHeader(http.StatusNoContent)
		return
	case http.MethodGet:
		s.record("GET " + sid)
		if !s.offerGET {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		if !known {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		for {
			select {
			case m := <-s.getMsgs:
				writeEvent(w, "%s", m)
			case <-r.Context().Done():
				return
			}
		}
	}
	in := readRPC(s.t, r)
	s.record(fmt.Sprintf("POST %s %s pv=%s", in.method, sid, r.Header.Get("Mcp-Protocol-Version")))
	if in.method == "initialize" {
		s.mu.Lock()
		s.session = "sess-42"
		s.mu.Unlock()
		w.Header().Set("Mcp-Session-Id", "sess-42")
		writeJSON(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25"}}`, in.id)
		return
	}
	if !known {
		http.Error(w, "session not found", http.StatusNotFound)
		return
	}
	if in.id == "" {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	writeJSON(w, `{"jsonrpc":"2.0","id":%s,"result":{}}`, in.id)
}

// startSession starts a sessionServer and a client of it; the server
// closes when the test ends.
func startSession(t *testing.T, cfg Config) (*sessionServer, *Streamable) {
	t.Helper()
	srv := &sessionServer{t: t}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return srv, newStreamable(t, ts.URL, cfg)
}

// initialize opens c's session (request id 1).
func initialize(t *testing.T, c *Streamable) {
	t.Helper()
	if _, err := c.Call(context.Background(), 1, "initialize", json.RawMessage(`{}`), nil); err != nil {
		t.Fatal(err)
	}
}

// The session ID of initialize's response goes with every later request,
// MCP-Protocol-Version once set, and Close deletes the session.
func TestStreamableSession(t *testing.T) {
	srv, c := startSession(t, Config{})
	ctx := context.Background()
	initialize(t, c)
	if c.SessionID() != "sess-42" {
		t.Fatalf("session %q", c.SessionID())
	}
	c.SetProtocolVersion("2025-11-25")
	if err := c.Notify(ctx, "notifications/initialized", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Call(ctx, 2, "tools/list", nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Call(ctx, 3, "tools/list", nil, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("a call after Close: %v, want ErrClosed", err)
	}
	want := []string{
		"POST initialize  pv=",
		"POST notifications/initialized sess-42 pv=2025-11-25",
		"POST tools/list sess-42 pv=2025-11-25",
		"DELETE sess-42",
	}
	if got := srv.lines(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the server saw\n%q\nwant\n%q", got, want)
	}
}

// A 404 to a request carrying the session is the session's end: the call
// fails with ErrSessionExpired, the connection ends (Done), and Close
// deletes nothing.
func TestStreamableSessionExpired(t *testing.T) {
	srv, c := startSession(t, Config{})
	ctx := context.Background()
	initialize(t, c)
	srv.mu.Lock()
	srv.gone = true
	srv.mu.Unlock()
	_, err := c.Call(ctx, 2, "tools/list", nil, nil)
	if !errors.Is(err, ErrSessionExpired) {
		t.Fatalf("error %v, want ErrSessionExpired", err)
	}
	select {
	case <-c.Done():
	default:
		t.Fatal("the connection goes on after its session expired")
	}
	if !errors.Is(c.Err(), ErrSessionExpired) {
		t.Errorf("Err %v", c.Err())
	}
	_ = c.Close()
	for _, l := range srv.lines() {
		if l[:6] == "DELETE" {
			t.Errorf("Close deleted an expired session: %q", srv.lines())
		}
	}
}

// With Listen, the GET stream opens on the session once initialize
// succeeded, and its messages reach the handlers; Close ends it.
func TestStreamableListen(t *testing.T) {
	srv := &sessionServer{t: t, offerGET: true, getMsgs: make(chan string, 1)}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	got := make(chan string, 1)
	c := newStreamable(t, ts.URL, Config{Listen: true, Handlers: Handlers{
		Notification: func(method string, params json.RawMessage) { got <- method },
	}})
	if _, err := c.Call(context.Background(), 1, "initialize", json.RawMessage(`{}`), nil); err != nil {
		t.Fatal(err)
	}
	srv.getMsgs <- `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`
	select {
	case m := <-got:
		if m != "notifications/tools/list_changed" {
			t.Errorf("notification %q", m)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no notification from the GET stream")
	}
	_ = c.Close()
	lines := srv.lines()
	if fmt.Sprint(lines) != fmt.Sprint([]string{"POST initialize  pv=", "GET sess-42", "DELETE sess-42"}) {
		t.Errorf("the server saw %q", lines)
	}
}

// A server answering the GET with 405 does not offer the stream: the
// transport asks once and calls go on.
func TestStreamableListenNotOffered(t *testing.T) {
	srv, c := startSession(t, Config{Listen: true})
	c.retry = time.Millisecond // a transport that retried would ask again at once
	ctx := context.Background()
	initialize(t, c)
	deadline := time.Now().Add(10 * time.Second)
	for !contains(srv.lines(), "GET sess-42") && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	for i := range 5 {
		if _, err := c.Call(ctx, int64(2+i), "tools/list", nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	_ = c.Close()
	n := 0
	for _, l := range srv.lines() {
		if l == "GET sess-42" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d GETs, want 1: %q", n, srv.lines())
	}
	select {
	case <-c.Done():
	default:
		t.Error("Done not closed after Close")
	}
}

func contains(lines []string, s string) bool {
	for _, l := range lines {
		if l == s {
			return true
		}
	}
	return false
}

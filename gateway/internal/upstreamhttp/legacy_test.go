package upstreamhttp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// legacyServer is a 2024-11-05 HTTP+SSE server: GET /sse opens the stream
// and names /message?sessionId=1 as the endpoint (relative); a POSTed
// request is accepted with 202 and answered on the stream. tools/call
// first asks the client roots/list and answers with what it said.
type legacyServer struct {
	t      *testing.T
	events chan string // messages to send on the stream
	end    chan struct{}
	posts  chan string // every POSTed message
	header chan http.Header
}

func newLegacyServer(t *testing.T) (*legacyServer, *httptest.Server) {
	s := &legacyServer{t: t, events: make(chan string, 16), end: make(chan struct{}), posts: make(chan string, 16), header: make(chan http.Header, 16)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /sse", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, ": hello\nevent: endpoint\ndata: /message?sessionId=1\n\n")
		w.(http.Flusher).Flush()
		for {
			select {
			case m := <-s.events:
				writeEvent(w, "%s", m)
			case <-s.end:
				return
			case <-r.Context().Done():
				return
			}
		}
	})
	mux.HandleFunc("POST /message", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("sessionId") != "1" {
			http.Error(w, "no session", http.StatusBadRequest)
			return
		}
		b, _ := io.ReadAll(r.Body)
		s.posts <- string(b)
		s.header <- r.Header.Clone()
		w.WriteHeader(http.StatusAccepted)
		g := gjson.ParseBytes(b)
		switch g.Get("method").String() {
		case "tools/call":
			s.events <- `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`
			s.events <- fmt.Sprintf(`{"jsonrpc":"2.0","id":"r-%s","method":"roots/list"}`, g.Get("id").Raw)
		case "":
			if id := g.Get("id").String(); len(id) > 2 && id[:2] == "r-" {
				s.events <- fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"roots":%s}}`, id[2:], g.Get("result.roots").Raw)
			}
		case "bad":
			s.events <- fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"bad params"}}`, g.Get("id").Raw)
		case "hang":
		default:
			if g.Get("id").Exists() {
				s.events <- fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{}}`, g.Get("id").Raw)
			}
		}
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return s, ts
}

func dialLegacy(t *testing.T, url string, cfg Config) *Legacy {
	t.Helper()
	cfg.URL = url
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := DialLegacy(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// The endpoint event names where messages go; responses, notifications
// and server requests arrive on the stream, and the answer to a server
// request is POSTed back.
func TestLegacy(t *testing.T) {
	srv, ts := newLegacyServer(t)
	notes := make(chan string, 1)
	c := dialLegacy(t, ts.URL+"/sse", Config{
		Headers: map[string]string{"Authorization": "Bearer y"},
		Handlers: Handlers{
			Notification: func(method string, params json.RawMessage) { notes <- method + " " + string(params) },
			Request: func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
				if method != "roots/list" {
					return nil, &ResponseError{Code: codeMethodNotFound, Message: method}
				}
				return json.RawMessage(`{"roots":[{"uri":"file:///w"}]}`), nil
			},
		},
	})
	ctx := context.Background()
	if _, err := c.Call(ctx, 1, "initialize", json.RawMessage(`{}`), nil); err != nil {
		t.Fatal(err)
	}
	if h := <-srv.header; h.Get("Authorization") != "Bearer y" || h.Get("Content-Type") != "application/json" {
		t.Errorf("POST headers %v", h)
	}
	<-srv.posts
	res, err := c.Call(ctx, 2, "tools/call", json.RawMessage(`{"name":"x"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(res) != `{"roots":[{"uri":"file:///w"}]}` {
		t.Errorf("result %s", res)
	}
	if n := <-notes; n != `notifications/progress {"progress":1}` {
		t.Errorf("notification %q", n)
	}
	if _, err := c.Call(ctx, 3, "bad", nil, nil); err == nil {
		t.Error("an error response gave no error")
	} else if re := (*ResponseError)(nil); !errors.As(err, &re) || re.Code != -32602 {
		t.Errorf("error %v, want code -32602", err)
	}
	if err := c.Notify(ctx, "notifications/initialized", nil); err != nil {
		t.Fatal(err)
	}
}

// The end of the stream ends the connection: a call waiting fails with
// ErrConnectionLost, and Done closes.
func TestLegacyConnectionLost(t *testing.T) {
	srv, ts := newLegacyServer(t)
	c := dialLegacy(t, ts.URL+"/sse", Config{})
	errc := startCall(context.Background(), c, "hang")
	<-srv.posts
	close(srv.end)
	wantCallErr(t, errc, ErrConnectionLost, "the call outlived the stream")
	<-c.Done()
	if !errors.Is(c.Err(), ErrConnectionLost) {
		t.Errorf("Err %v", c.Err())
	}
}

// A stream that ends before its endpoint event, or a status other than
// 200, fails DialLegacy.
func TestLegacyDialFails(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/gone" {
			http.Error(w, "nope", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		// an endpoint on another origin is ignored, then the stream ends
		fmt.Fprintf(w, "event: endpoint\ndata: http://elsewhere.example/message\n\n")
	}))
	defer ts.Close()
	for _, path := range []string{"/gone", "/sse"} {
		_, err := DialLegacy(context.Background(), Config{URL: ts.URL + path})
		var se *StatusError
		switch {
		case path == "/gone" && (!errors.As(err, &se) || se.StatusCode != http.StatusNotFound):
			t.Errorf("%s: %v, want HTTP 404", path, err)
		case path == "/sse" && !errors.Is(err, ErrConnectionLost):
			t.Errorf("%s: %v, want ErrConnectionLost", path, err)
		}
	}
}

// Close ends the stream and every call in flight.
func TestLegacyClose(t *testing.T) {
	srv, ts := newLegacyServer(t)
	c := dialLegacy(t, ts.URL+"/sse", Config{})
	errc := startCall(context.Background(), c, "hang")
	<-srv.posts
	_ = c.Close()
	wantCallErr(t, errc, ErrClosed, "Close left the call waiting")
}

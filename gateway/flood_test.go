package gateway

// Floods: an upstream that sends a call's client thousands of
// server-to-client requests, and a client that opens thousands of
// subscriptions/listen streams. The hostile upstreams are a stdio stub
// (this test binary re-executed) and an httptest server on 127.0.0.1.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
	"github.com/mcpx-dev/mcpx/gateway/internal/upstream"
)

// stubFlooder makes the stub an upstream whose tool "flood" sends the
// gateway arguments.n sampling/createMessage requests at once and answers
// when every one is answered; "tally" says how they were answered so far;
// "echo" answers at once.
const stubFlooder = "flooder"

// init runs the flooder stub in the re-executed test binary; the other
// stub modes are dispatched by TestMain.
func init() {
	if os.Getenv(stubEnv) == stubFlooder {
		runFlooderStub()
		os.Exit(0)
	}
}

func flooderStub(t testing.TB) config.ServerConfig {
	c := stubServer(t)
	c.Env = map[string]string{stubEnv: stubFlooder}
	return c
}

// floodTally counts how the gateway answered a flood's requests.
type floodTally struct {
	mu      sync.Mutex
	sent    int
	results int
	errors  int
	refusal map[string]int // error messages that name the cap, by count
	other   string         // an error message that does not
}

// answered counts the answer m to one of the flood's requests.
func (f *floodTally) answered(m gjson.Result) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if e := m.Get("error"); e.Exists() {
		f.errors++
		msg := e.Get("message").String()
		if strings.Contains(msg, "too many outstanding server requests") && e.Get("code").Int() == jsonrpc.CodeLimitExceeded {
			if f.refusal == nil {
				f.refusal = map[string]int{}
			}
			f.refusal[msg[strings.Index(msg, "mcpx:"):]]++
		} else {
			f.other = msg
		}
		return
	}
	f.results++
}

// done reports whether every request sent has its answer.
func (f *floodTally) done() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sent > 0 && f.results+f.errors == f.sent
}

// result is the tally as a tool result's structuredContent.
func (f *floodTally) result() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, _ := json.Marshal(map[string]any{"sent": f.sent, "results": f.results, "errors": f.errors, "refusal": f.refusal, "other": f.other})
	return `{"content":[],"structuredContent":` + string(b) + `}`
}

// floodRequest is the i-th request of a flood.
func floodRequest(i int) string {
	return `{"jsonrpc":"2.0","id":"f-` + strconv.Itoa(i) + `","method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"flood"}}],"maxTokens":1}}`
}

const floodTools = `{"tools":[{"name":"flood","inputSchema":{"type":"object"}},{"name":"tally","inputSchema":{"type":"object"}},{"name":"echo","inputSchema":{"type":"object"}}]}`

func runFlooderStub() {
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriterSize(os.Stdout, 1<<20)
	write := func(s string) { out.WriteString(s + "\n"); out.Flush() }
	var tally floodTally
	floodCall := ""
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			return
		}
		m := gjson.ParseBytes(line)
		id, method := m.Get("id").Raw, m.Get("method").String()
		result := func(callID, res string) { write(`{"jsonrpc":"2.0","id":` + callID + `,"result":` + res + `}`) }
		if method == "" && id != "" {
			tally.answered(m)
			if floodCall != "" && tally.done() {
				result(floodCall, tally.result())
				floodCall = ""
			}
			continue
		}
		switch method {
		case "initialize":
			result(id, `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"flooder","version":"1"}}`)
		case "tools/list":
			result(id, floodTools)
		case "tools/call":
			switch m.Get("params.name").String() {
			case "flood":
				n := int(m.Get("params.arguments.n").Int())
				floodCall = id
				tally.mu.Lock()
				tally.sent = n
				tally.mu.Unlock()
				for i := 1; i <= n; i++ {
					out.WriteString(floodRequest(i) + "\n")
				}
				out.Flush()
			case "tally":
				result(id, tally.result())
			default:
				result(id, `{"content":[{"type":"text","text":"ok"}]}`)
			}
		case "ping":
			result(id, `{}`)
		default:
			if id != "" {
				write(`{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32601,"message":"method not found"}}`)
			}
		}
	}
}

// goroutinePeak samples runtime.NumGoroutine until stop and returns the
// highest count seen.
func goroutinePeak() (stop func() int) {
	var peak atomic.Int64
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			if n := int64(runtime.NumGoroutine()); n > peak.Load() {
				peak.Store(n)
			}
			select {
			case <-quit:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	return func() int {
		close(quit)
		<-done
		return int(peak.Load())
	}
}

// floodCase is one cap a flood meets.
type floodCase struct {
	name    string
	limits  config.Limits
	cap     int    // the cap that applies
	refusal string // the refusal the upstream gets past it
}

var floodCases = []floodCase{
	{"per call", config.Limits{MaxServerRequestsPerCall: 8, MaxServerRequestsPerUpstream: 64}, 8, "mcpx: too many outstanding server requests (limit 8 per call)"},
	{"per upstream", config.Limits{MaxServerRequestsPerCall: 1000, MaxServerRequestsPerUpstream: 8}, 8, "mcpx: too many outstanding server requests (limit 8 per upstream)"},
}

// runFlood floods client a's call (flood, n requests) on the gateway's
// only upstream, and checks what the caps promise: a is asked at most
// cap requests, the rest are refused upstream with the cap's error and
// never relayed, the goroutines stay bounded (peakBound over the count
// before; 0: logged, not checked), and another client's calls to the upstream go through
// meanwhile (tally). tally reads the upstream's count of answers.
func runFlood(t *testing.T, g *Gateway, fc floodCase, n, peakBound int, tally func(*client) gjson.Result) {
	a := connectWith(t, g, `{"sampling":{}}`)
	b := connectWith(t, g, `{"sampling":{}}`)
	b.result("tools/call", toolCall("echo", "")) // the upstream is up
	runtime.GC()
	base := runtime.NumGoroutine()
	peak := goroutinePeak()
	start := time.Now()
	_, flood := a.start("tools/call", toolCall("flood", `{"n":`+strconv.Itoa(n)+`}`))
	var asked []string
	for len(asked) < fc.cap {
		id, _ := a.waitRequest("sampling/createMessage", 30*time.Second)
		asked = append(asked, id)
	}
	// Another client's calls go through while the flood is refused.
	var last gjson.Result
	for deadline := time.Now().Add(30 * time.Second); ; {
		callStart := time.Now()
		last = tally(b)
		if d := time.Since(callStart); d > 10*time.Second {
			t.Errorf("another client's call took %s during the flood", d)
		}
		if last.Get("errors").Int() >= int64(n-fc.cap) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the upstream's requests were not all answered: %s", last.Raw)
		}
		time.Sleep(10 * time.Millisecond)
	}
	steady := runtime.NumGoroutine()
	peakN := peak()
	t.Logf("%d requests refused in %s; goroutines: %d before, peak %d, %d with the cap's requests outstanding", n-fc.cap, time.Since(start), base, peakN, steady)
	if last.Get("errors").Int() != int64(n-fc.cap) || last.Get("results").Int() != 0 {
		t.Errorf("the upstream got %s, want %d errors and no results yet", last.Raw, n-fc.cap)
	}
	if last.Get("refusal").Get(gjson.Escape(fc.refusal)).Int() == 0 {
		t.Errorf("no refusal %q among %s", fc.refusal, last.Raw)
	}
	if peakBound > 0 && peakN-base > peakBound {
		t.Errorf("goroutines peaked at %d, %d over the %d before the flood (bound %d)", peakN, peakN-base, base, peakBound)
	}
	// Only the cap's requests reached the client.
	time.Sleep(50 * time.Millisecond)
	for _, m := range a.drainNotes() {
		if m.Get("method").String() == "sampling/createMessage" {
			t.Errorf("the client was asked past the cap: %s", m.Raw)
		}
	}
	// The client answers what it was asked; the flood's call ends.
	for _, id := range asked {
		a.send(`{"jsonrpc":"2.0","id":` + id + `,"result":{"role":"assistant","content":{"type":"text","text":"no"},"model":"m"}}`)
	}
	select {
	case r := <-flood:
		sc := gjson.GetBytes(r, "result.structuredContent")
		if sc.Get("results").Int() != int64(fc.cap) || sc.Get("errors").Int() != int64(n-fc.cap) {
			t.Errorf("the flood's call ended with %s, want %d results and %d errors", r, fc.cap, n-fc.cap)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the flood's call did not end once its requests were answered")
	}
}

// TestFloodServerRequestsStdio: a stdio upstream sends 5,000 sampling
// requests on one call. Before the caps every one was relayed (100,000
// reached 866 MB).
func TestFloodServerRequestsStdio(t *testing.T) {
	for _, fc := range floodCases {
		t.Run(fc.name, func(t *testing.T) {
			g := newGatewayWith(t, Options{Servers: map[string]config.ServerConfig{"flooder": flooderStub(t)}, Limits: fc.limits})
			tally := func(c *client) gjson.Result {
				return c.result("tools/call", toolCall("tally", "")).Get("structuredContent")
			}
			// answer goroutines: the upstream cap's relayed ones and
			// upstream.AnswerSpare more; the rest is the test's own
			runFlood(t, g, fc, 5000, fc.limits.MaxServerRequestsPerUpstream+upstream.AnswerSpare+100, tally)
		})
	}
}

// floodHTTPUpstream is a Streamable HTTP upstream (no session, no GET
// stream) whose tool "flood" sends n sampling requests on its POST's SSE
// stream and ends the stream when all are answered.
type floodHTTPUpstream struct {
	tally floodTally
	conns atomic.Int64 // connections the gateway opened
}

func (f *floodHTTPUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	b, _ := io.ReadAll(r.Body)
	m := gjson.ParseBytes(b)
	id, method := m.Get("id").Raw, m.Get("method").String()
	if method == "" && id != "" {
		f.tally.answered(m)
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if id == "" {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	reply := func(res string) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, id, res)
	}
	switch method {
	case "initialize":
		reply(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"flooder","version":"1"}}`)
	case "tools/list":
		reply(floodTools)
	case "tools/call":
		switch m.Get("params.name").String() {
		case "flood":
			f.flood(w, r, id, int(m.Get("params.arguments.n").Int()))
		case "tally":
			reply(f.tally.result())
		default:
			reply(`{"content":[{"type":"text","text":"ok"}]}`)
		}
	default:
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, id)
	}
}

func (f *floodHTTPUpstream) flood(w http.ResponseWriter, r *http.Request, id string, n int) {
	f.tally.mu.Lock()
	f.tally.sent = n
	f.tally.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	bw := bufio.NewWriterSize(w, 64<<10)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(bw, "data: %s\n\n", floodRequest(i))
	}
	bw.Flush()
	w.(http.Flusher).Flush()
	for !f.tally.done() {
		select {
		case <-r.Context().Done():
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
	fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":%s}\n\n", id, f.tally.result())
}

// TestFloodServerRequestsHTTP: an HTTP upstream sends 2,000 sampling
// requests on one call's SSE stream. Before the caps every one was
// relayed, and answered with a POST of its own when the call was
// cancelled (30,000: 17,786 open fds, 705 MB; another principal's call
// timed out).
func TestFloodServerRequestsHTTP(t *testing.T) {
	for _, fc := range floodCases {
		t.Run(fc.name, func(t *testing.T) {
			up := &floodHTTPUpstream{}
			ts := httptest.NewUnstartedServer(up)
			ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateNew {
					up.conns.Add(1)
				}
			}
			ts.Start()
			t.Cleanup(ts.Close)
			g := newGatewayWith(t, Options{Servers: map[string]config.ServerConfig{"flooder": {Type: config.TypeStreamableHTTP, URL: ts.URL}}, Limits: fc.limits})
			tally := func(c *client) gjson.Result {
				return c.result("tools/call", toolCall("tally", "")).Get("structuredContent")
			}
			// answer goroutines: MaxAnswering's, each with a
			// connection (a goroutine at each end, two in the client)
			runFlood(t, g, fc, 2000, 4*(fc.limits.MaxServerRequestsPerUpstream+upstream.AnswerSpare)+100, tally)
			t.Logf("the gateway opened %d connections to the upstream", up.conns.Load())
		})
	}
}

// TestListenStreamCaps: past max_listen_streams_per_principal a
// principal's new subscriptions/listen stream is refused (503,
// Retry-After, CodeLimitExceeded) while another principal still opens
// one; past max_listen_streams everyone's is; a closed stream frees its
// slot. Before the caps one principal held 5,000 (5,017 fds).
func TestListenStreamCaps(t *testing.T) {
	t.Parallel()
	g := newGatewayWith(t, Options{Servers: map[string]config.ServerConfig{"stub": stubServer(t)}, Limits: config.Limits{MaxListenStreamsPerPrincipal: 3, MaxListenStreams: 5}})
	srv := httptest.NewServer(g.HTTPHandler(HTTPOptions{Tokens: map[string]string{"ta": "alice", "tb": "bob", "tc": "carol"}}))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// listen opens a stream; it returns the response (its body open on
	// success) and, on a refusal, the JSON-RPC error.
	listen := func(ctx context.Context, token string) (*http.Response, gjson.Result) {
		t.Helper()
		params := statelessParams(`{"notifications":{"toolsListChanged":true}}`, "")
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader(`{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":`+params+`}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "subscriptions/listen")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode == http.StatusOK && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			t.Cleanup(func() { resp.Body.Close() })
			return resp, gjson.Result{}
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, gjson.GetBytes(body, "error")
	}
	opened := func(who string, resp *http.Response, e gjson.Result) {
		t.Helper()
		if e.Exists() || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: stream refused: %d %s", who, resp.StatusCode, e.Raw)
		}
	}
	refused := func(who string, resp *http.Response, e gjson.Result, limit string) {
		t.Helper()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Errorf("%s: status %d, Retry-After %q; want 503 with Retry-After", who, resp.StatusCode, resp.Header.Get("Retry-After"))
		}
		if e.Get("code").Int() != jsonrpc.CodeLimitExceeded || !strings.Contains(e.Get("message").String(), "too many subscriptions/listen streams") || !strings.Contains(e.Get("message").String(), limit) {
			t.Errorf("%s: error %s, want code %d naming %s", who, e.Raw, jsonrpc.CodeLimitExceeded, limit)
		}
	}
	actx, closeAlice := context.WithCancel(ctx)
	for i := range 3 {
		r, e := listen(actx, "ta")
		opened("alice #"+strconv.Itoa(i+1), r, e)
	}
	r, e := listen(ctx, "ta")
	refused("alice #4", r, e, "limits.max_listen_streams_per_principal")
	for i := range 2 {
		r, e := listen(ctx, "tb")
		opened("bob #"+strconv.Itoa(i+1), r, e)
	}
	r, e = listen(ctx, "tc")
	refused("carol, all 5 open", r, e, "limits.max_listen_streams")
	closeAlice()
	waitFor(t, "alice's streams are closed", func() bool {
		return g.rooms.Listen.Open() == 2
	})
	r, e = listen(ctx, "tc")
	opened("carol after alice left", r, e)
}

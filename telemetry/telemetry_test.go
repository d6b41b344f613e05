package telemetry_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/tidwall/gjson"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway"
	"github.com/mcpx-dev/mcpx/gateway/config"
	_ "github.com/mcpx-dev/mcpx/layers"
	"github.com/mcpx-dev/mcpx/store/memstore"
	"github.com/mcpx-dev/mcpx/telemetry"
	"github.com/mcpx-dev/mcpx/telemetry/promtext"
)

// testChain is the engine chain of these tests: each layer runs, so each
// makes a span.
var testChain = []string{"typedcontent", "magicbytes", "sizenet", "guardrail"}

// upstream is a stateless streamable-HTTP MCP server with one tool, "pic",
// whose result carries a 48 KiB base64 image (the engine stores it), and
// "fail", a tool error. It keeps the _meta.traceparent of each call.
type upstream struct {
	mu           sync.Mutex
	traceparents []string
}

func (u *upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	b, _ := io.ReadAll(r.Body)
	m := gjson.ParseBytes(b)
	id := m.Get("id").Raw
	if id == "" {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch m.Get("method").String() {
	case "initialize":
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"up","version":"1"}}}`, id)
	case "tools/list":
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"pic","inputSchema":{"type":"object"}},{"name":"fail","inputSchema":{"type":"object"}},{"name":"small","inputSchema":{"type":"object"}}]}}`, id)
	case "tools/call":
		u.mu.Lock()
		u.traceparents = append(u.traceparents, m.Get("params._meta.traceparent").String())
		u.mu.Unlock()
		if m.Get("params.name").String() == "small" {
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"small"}]}}`, id)
			return
		}
		if m.Get("params.name").String() == "fail" {
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"no"}],"isError":true}}`, id)
			return
		}
		img := make([]byte, 48<<10)
		copy(img, "\x89PNG\r\n\x1a\n")
		for i := 8; i < len(img); i++ {
			img[i] = byte(i * 7)
		}
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"image","mimeType":"image/png","data":%q}]}}`, id, base64.StdEncoding.EncodeToString(img))
	default:
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, id)
	}
}

func (u *upstream) lastTraceparent() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.traceparents) == 0 {
		return ""
	}
	return u.traceparents[len(u.traceparents)-1]
}

// newGateway serves a gateway over up at an httptest /mcp, with o's
// observer and tracer.
func newGateway(t testing.TB, up http.Handler, o gateway.Options) string {
	t.Helper()
	us := httptest.NewServer(up)
	t.Cleanup(us.Close)
	o.Servers = map[string]config.ServerConfig{"up": {Type: "streamable-http", URL: us.URL}}
	o.Engine.Store = memstore.New(memstore.Config{})
	o.Engine.Config.Chain = testChain
	o.Logger = hclog.NewNullLogger()
	o.StartWait = 10 * time.Second
	g, err := gateway.New(o)
	if err != nil {
		t.Fatal(err)
	}
	g.Start(context.Background())
	t.Cleanup(func() { _ = g.Close(context.Background()) })
	gs := httptest.NewServer(g.HTTPHandler(gateway.HTTPOptions{}))
	t.Cleanup(gs.Close)
	return gs.URL
}

// mcpSession initializes a session at url and returns a function that
// posts one request of it and returns the response.
func mcpSession(t testing.TB, url string) func(body string, header http.Header) gjson.Result {
	t.Helper()
	post := func(session, body string, header http.Header) (*http.Response, gjson.Result) {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		for k, v := range header {
			req.Header[k] = v
		}
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
	resp, r := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, nil)
	sid := resp.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatalf("initialize: %d %s", resp.StatusCode, r.Raw)
	}
	post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil)
	return func(body string, header http.Header) gjson.Result {
		_, r := post(sid, body, header)
		return r
	}
}

// scrape parses GET /metrics of reg with the Prometheus parser.
func scrape(t *testing.T, reg *promtext.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	srv := httptest.NewServer(reg)
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("Content-Type %q, want Prometheus text", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return fams
}

// value is the counter (or histogram count) of fam with labels.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	fam := fams[name]
	if fam == nil {
		return 0
	}
	for _, m := range fam.Metric {
		got := map[string]string{}
		for _, l := range m.Label {
			got[l.GetName()] = l.GetValue()
		}
		ok := true
		for i := 0; i+1 < len(labels); i += 2 {
			ok = ok && got[labels[i]] == labels[i+1]
		}
		if !ok {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return 0
}

func TestMetricsParseAndMoveOnCall(t *testing.T) {
	reg := promtext.NewRegistry()
	m, err := telemetry.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	url := newGateway(t, &upstream{}, gateway.Options{Observer: m, Engine: engine.Options{Listener: m}})
	call := mcpSession(t, url)
	before := scrape(t, reg)
	if v := value(before, "mcpx_tool_calls_total", "server", "up", "tool", "pic"); v != 0 {
		t.Fatalf("calls before any call = %v", v)
	}
	for i := range 2 {
		r := call(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"pic","arguments":{}}}`, 10+i), nil)
		if r.Get("error").Exists() || !strings.Contains(r.Raw, "mcpx://artifacts/") {
			t.Fatalf("tools/call pic: %.300s", r.Raw)
		}
	}
	call(`{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"fail","arguments":{}}}`, nil)
	after := scrape(t, reg)
	for _, c := range []struct {
		name   string
		labels []string
		want   func(float64) bool
	}{
		{"mcpx_tool_calls_total", []string{"server", "up", "tool", "pic"}, func(v float64) bool { return v == 2 }},
		{"mcpx_tool_call_duration_seconds", []string{"server", "up", "tool", "pic"}, func(v float64) bool { return v == 2 }},
		{"mcpx_tool_call_errors_total", []string{"server", "up", "tool", "fail", "kind", "tool"}, func(v float64) bool { return v == 1 }},
		{"mcpx_kept_out_bytes_total", []string{"server", "up", "tool", "pic"}, func(v float64) bool { return v > 2*48<<10 }},
		{"mcpx_kept_out_tokens_total", []string{"server", "up", "tool", "pic"}, func(v float64) bool { return v > 1000 }},
		// the same image twice: two values stored, one of them a
		// re-store, its bytes counted once
		{"mcpx_artifacts_stored_total", []string{"server", "up"}, func(v float64) bool { return v == 2 }},
		{"mcpx_artifacts_deduplicated_total", []string{"server", "up"}, func(v float64) bool { return v == 1 }},
		{"mcpx_artifact_bytes_stored_total", []string{"server", "up"}, func(v float64) bool { return v == 48<<10 }},
	} {
		if v := value(after, c.name, c.labels...); !c.want(v) {
			t.Errorf("%s%v = %v after the calls", c.name, c.labels, v)
		}
	}
}

// Views and summaries the memory budget refused are counted per server.
func TestMetricsCountWorkRefused(t *testing.T) {
	reg := promtext.NewRegistry()
	m, err := telemetry.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		m.OnEvent(engine.Event{Type: engine.EventWorkRefused, Server: "shots", Layer: "typedcontent", Path: "content.0", Error: "image view: decoding this 7000x7000 16-bit PNG takes 467.4 MB, ..."})
	}
	if v := value(scrape(t, reg), "mcpx_work_refused_total", "server", "shots"); v != 2 {
		t.Errorf("mcpx_work_refused_total{server=shots} = %v, want 2", v)
	}
}

// otlpReceiver is an OTLP/HTTP trace collector: it decodes each
// protobuf export request and keeps its spans.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []*tracepb.Span
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "want a protobuf POST to /v1/traces", http.StatusBadRequest)
		return
	}
	b, _ := io.ReadAll(r.Body)
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			o.spans = append(o.spans, ss.Spans...)
		}
	}
	o.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (o *otlpReceiver) all() []*tracepb.Span {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]*tracepb.Span(nil), o.spans...)
}

func TestTraceReachesOTLPWithSpanPerLayer(t *testing.T) {
	recv := &otlpReceiver{}
	rs := httptest.NewServer(recv)
	defer rs.Close()
	tp, err := telemetry.NewTracerProvider(context.Background(), telemetry.TracingConfig{OTLPEndpoint: rs.URL})
	if err != nil || tp == nil {
		t.Fatalf("NewTracerProvider: %v, %v", tp, err)
	}
	defer tp.Shutdown(context.Background())
	up := &upstream{}
	url := newGateway(t, up, gateway.Options{TracerProvider: tp})
	call := mcpSession(t, url)

	const (
		traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
		parent  = "00f067aa0ba902b7"
	)
	r := call(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"pic","arguments":{},"_meta":{"traceparent":"00-`+traceID+`-`+parent+`-01"}}}`, nil)
	if r.Get("error").Exists() {
		t.Fatalf("tools/call: %s", r.Raw)
	}
	if err := tp.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := recv.all()
	var callSpan *tracepb.Span
	layers := map[string]int{}
	for _, s := range spans {
		switch {
		case s.Name == "tools/call pic":
			callSpan = s
		case strings.HasPrefix(s.Name, "layer "):
			layers[strings.TrimPrefix(s.Name, "layer ")]++
		}
	}
	if callSpan == nil {
		t.Fatalf("no tools/call span among %d spans", len(spans))
	}
	if got := fmt.Sprintf("%x", callSpan.TraceId); got != traceID {
		t.Errorf("call span's trace %s, want the request's %s", got, traceID)
	}
	if got := fmt.Sprintf("%x", callSpan.ParentSpanId); got != parent {
		t.Errorf("call span's parent %s, want the request's span %s", got, parent)
	}
	for _, name := range testChain {
		if layers[name] != 1 {
			t.Errorf("layer %s: %d spans, want 1 (all: %v)", name, layers[name], layers)
		}
	}
	for _, s := range spans {
		if strings.HasPrefix(s.Name, "layer ") && !bytes.Equal(s.ParentSpanId, callSpan.SpanId) {
			t.Errorf("span %s is not a child of the call's", s.Name)
		}
	}
	// upstream gets the call span's context, in the same trace
	want := fmt.Sprintf("00-%s-%x-01", traceID, callSpan.SpanId)
	if got := up.lastTraceparent(); got != want {
		t.Errorf("upstream's _meta.traceparent %q, want %q", got, want)
	}

	// the HTTP traceparent header is continued when _meta has none
	const headerTrace = "0af7651916cd43dd8448eb211c80319c"
	h := http.Header{"Traceparent": {"00-" + headerTrace + "-b7ad6b7169203331-01"}}
	call(`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"pic","arguments":{}}}`, h)
	if got := up.lastTraceparent(); !strings.HasPrefix(got, "00-"+headerTrace+"-") || strings.Contains(got, "b7ad6b7169203331") {
		t.Errorf("upstream's traceparent %q, want a child in trace %s", got, headerTrace)
	}
}

// Without a tracer, a request's header trace context still reaches the
// upstream (unchanged), and _meta's passes as the client sent it.
func TestTraceparentPassedUpstreamWhenTracingOff(t *testing.T) {
	up := &upstream{}
	url := newGateway(t, up, gateway.Options{})
	call := mcpSession(t, url)
	tp := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	call(`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"pic","arguments":{}}}`, http.Header{"Traceparent": {tp}})
	if got := up.lastTraceparent(); got != tp {
		t.Errorf("header: upstream got %q, want %q", got, tp)
	}
	tp2 := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	call(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"pic","arguments":{},"_meta":{"traceparent":"`+tp2+`"}}}`, http.Header{"Traceparent": {tp}})
	if got := up.lastTraceparent(); got != tp2 {
		t.Errorf("_meta: upstream got %q, want %q", got, tp2)
	}
}

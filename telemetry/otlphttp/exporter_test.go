package otlphttp_test

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/mcpx-dev/mcpx/telemetry/otlphttp"
)

// collector is an OTLP/HTTP collector that keeps each request and
// answers with the next of its statuses (200 once they run out).
type collector struct {
	mu       sync.Mutex
	reqs     []captured
	statuses []int
	header   http.Header // of the answers
	body     []byte      // of the answers
}

type captured struct {
	header http.Header
	body   []byte // decompressed
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var rd io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rd = zr
	}
	b, err := io.ReadAll(rd)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	c.reqs = append(c.reqs, captured{r.Header.Clone(), b})
	status := http.StatusOK
	if len(c.statuses) > 0 {
		status, c.statuses = c.statuses[0], c.statuses[1:]
	}
	c.mu.Unlock()
	for k, v := range c.header {
		w.Header()[k] = v
	}
	if r.URL.Path != "/v1/traces" {
		status = http.StatusNotFound
	}
	w.WriteHeader(status)
	_, _ = w.Write(c.body)
}

func (c *collector) requests() []captured {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.reqs)
}

// decode reads a captured request with the generated OTLP types.
func decode(t *testing.T, b []byte) *coltracepb.ExportTraceServiceRequest {
	t.Helper()
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		t.Fatalf("the request does not decode as an ExportTraceServiceRequest: %v", err)
	}
	// ResourceSpans come in map order from the OpenTelemetry exporter
	slices.SortFunc(req.ResourceSpans, func(a, b *tracepb.ResourceSpans) int {
		return strings.Compare(fmt.Sprint(a.GetResource().GetAttributes()), fmt.Sprint(b.GetResource().GetAttributes()))
	})
	return &req
}

// everySpanField are spans that use every field the OpenTelemetry
// exporter sends: two resources, scopes with and without a version,
// schema URL and attributes, every span kind, remote and local parents,
// trace state, attributes of every type (zero values too), events,
// links, every status, dropped counts, a time before 1970.
func everySpanField() []sdktrace.ReadOnlySpan {
	tid := trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36}
	ts, _ := trace.ParseTraceState("vendor=a,other=b")
	sc := func(span byte, flags trace.TraceFlags, remote bool) trace.SpanContext {
		return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{0, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, span}, TraceFlags: flags, TraceState: ts, Remote: remote})
	}
	allTypes := []attribute.KeyValue{
		attribute.Bool("b", true), attribute.Bool("b0", false),
		attribute.Int64("i", -1278), attribute.Int64("i0", 0), attribute.Int64("imax", math.MaxInt64),
		attribute.Float64("f", 3.25), attribute.Float64("f0", 0), attribute.Float64("fnan", math.Inf(-1)),
		attribute.String("s", "héllo \x00 world"), attribute.String("s0", ""),
		attribute.ByteSlice("bytes", []byte{0, 1, 2, 255}), attribute.ByteSlice("bytes0", nil),
		attribute.BoolSlice("bs", []bool{true, false}), attribute.Int64Slice("is", []int64{3, -38, 0}),
		attribute.Float64Slice("fs", []float64{1.5, 0, -2}), attribute.StringSlice("ss", []string{"a", "", "c"}),
		attribute.StringSlice("ss0", []string{}),
		attribute.Slice("mixed", attribute.IntValue(1), attribute.StringValue("two"), attribute.SliceValue(attribute.BoolValue(true)), attribute.MapValue(attribute.String("k", "v"))),
		attribute.Map("map", attribute.Int("n", 7), attribute.Map("inner", attribute.Float64("x", 0.5)), attribute.KeyValue{Key: "nothing"}),
		{Key: "empty"},
		attribute.String(strings.Repeat("long", 40), strings.Repeat("value ", 100)), // lengths over one varint byte
	}
	resA := resource.NewWithAttributes("https://opentelemetry.io/schemas/1.26.0", attribute.String("service.name", "mcpx"), attribute.Int("replica", 2))
	resB := resource.NewSchemaless(attribute.String("service.name", "other"))
	scope := instrumentation.Scope{Name: "github.com/mcpx-dev/mcpx/gateway", Version: "1.2.3", SchemaURL: "https://example.com/s", Attributes: attribute.NewSet(attribute.String("scope.attr", "x"))}
	start := time.Date(2026, 11, 27, 10, 0, 0, 123456789, time.UTC)
	stubs := tracetest.SpanStubs{
		{
			Name: "tools/call pic", SpanContext: sc(1, trace.FlagsSampled, false), Parent: sc(0, trace.FlagsSampled, true),
			SpanKind: trace.SpanKindServer, StartTime: start, EndTime: start.Add(1500 * time.Millisecond),
			Attributes: allTypes,
			Events: []sdktrace.Event{
				{Name: "exception", Time: start.Add(time.Millisecond), Attributes: []attribute.KeyValue{attribute.String("exception.message", "boom")}, DroppedAttributeCount: 2},
				{Name: "bare", Time: start},
			},
			Links: []sdktrace.Link{
				{SpanContext: sc(9, trace.FlagsSampled, true), Attributes: []attribute.KeyValue{attribute.Int("n", 1)}, DroppedAttributeCount: 3},
				{SpanContext: sc(8, 0, false)},
			},
			Status:            sdktrace.Status{Code: codes.Error, Description: "tool error"},
			DroppedAttributes: 5, DroppedEvents: 6, DroppedLinks: 7,
			Resource: resA, InstrumentationScope: scope,
		},
		{
			Name: "layer magicbytes", SpanContext: sc(2, trace.FlagsSampled, false), Parent: sc(1, trace.FlagsSampled, false),
			SpanKind: trace.SpanKindInternal, StartTime: start, EndTime: start.Add(time.Microsecond),
			Attributes: []attribute.KeyValue{attribute.Int("mcpx.rewrites", 3)},
			Status:     sdktrace.Status{Code: codes.Ok},
			Resource:   resA, InstrumentationScope: scope,
		},
		{Name: "client", SpanContext: sc(3, 0, false), SpanKind: trace.SpanKindClient, StartTime: start, EndTime: start, Resource: resA, InstrumentationScope: instrumentation.Scope{Name: "second"}},
		{Name: "producer", SpanContext: sc(4, trace.FlagsSampled, false), SpanKind: trace.SpanKindProducer, StartTime: time.Unix(-5, 0), EndTime: start, Resource: resB},
		{Name: "consumer", SpanContext: sc(5, trace.FlagsSampled, false), SpanKind: trace.SpanKindConsumer, Resource: resB},
		{Name: "unspecified", SpanContext: sc(6, trace.FlagsSampled, false), SpanKind: trace.SpanKindUnspecified, Resource: resB, InstrumentationScope: scope},
	}
	return stubs.Snapshots()
}

// The request the exporter sends decodes, with the generated OTLP types,
// to exactly what the OpenTelemetry exporter (otlptracehttp) sends for
// the same spans: every field of every message.
func TestExportMatchesOpenTelemetryExporter(t *testing.T) {
	ctx := context.Background()
	spans := everySpanField()
	old := &collector{}
	oldSrv := httptest.NewServer(old)
	defer oldSrv.Close()
	ref, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(oldSrv.URL+"/v1/traces"))
	if err != nil {
		t.Fatal(err)
	}
	if err := ref.ExportSpans(ctx, spans); err != nil {
		t.Fatalf("otlptracehttp: %v", err)
	}
	_ = ref.Shutdown(ctx)

	for _, gz := range []bool{false, true} {
		t.Run(fmt.Sprintf("gzip=%v", gz), func(t *testing.T) {
			got := &collector{}
			srv := httptest.NewServer(got)
			defer srv.Close()
			exp, err := otlphttp.New(otlphttp.Config{URL: srv.URL + "/v1/traces", Headers: map[string]string{"Api-Key": "k1"}, Gzip: gz})
			if err != nil {
				t.Fatal(err)
			}
			defer exp.Shutdown(ctx)
			if err := exp.ExportSpans(ctx, spans); err != nil {
				t.Fatal(err)
			}
			reqs := got.requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(reqs))
			}
			h := reqs[0].header
			if h.Get("Content-Type") != "application/x-protobuf" || h.Get("Api-Key") != "k1" || (h.Get("Content-Encoding") == "gzip") != gz {
				t.Errorf("headers %v", h)
			}
			want, have := decode(t, old.requests()[0].body), decode(t, reqs[0].body)
			if n := len(have.ResourceSpans); n != 2 {
				t.Fatalf("%d resource spans, want 2", n)
			}
			if diff := cmpDiff(want, have); diff != "" {
				t.Errorf("request differs from otlptracehttp's (-otlptracehttp +otlphttp):\n%s", diff)
			}
		})
	}
}

// The collector's 429, 502, 503 and 504 are retried after its
// Retry-After; other failures are not, and their error names the status
// and the collector's message.
func TestExportRetriesWhatTheCollectorAsks(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name     string
		statuses []int
		requests int
		err      string
	}{
		{"unavailable twice", []int{http.StatusServiceUnavailable, http.StatusTooManyRequests}, 3, ""},
		{"gateway errors", []int{http.StatusBadGateway, http.StatusGatewayTimeout}, 3, ""},
		{"bad request", []int{http.StatusBadRequest}, 1, "400 Bad Request (body: nope)"},
		{"server error", []int{http.StatusInternalServerError}, 1, "500 Internal Server Error (body: nope)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			col := &collector{statuses: c.statuses, header: http.Header{"Retry-After": {"0"}}, body: []byte("nope")}
			srv := httptest.NewServer(col)
			defer srv.Close()
			exp, _ := otlphttp.New(otlphttp.Config{URL: srv.URL + "/v1/traces"})
			defer exp.Shutdown(ctx)
			start := time.Now()
			err := exp.ExportSpans(ctx, everySpanField()[:1])
			if n := len(col.requests()); n != c.requests {
				t.Errorf("%d requests, want %d", n, c.requests)
			}
			switch {
			case c.err == "" && err != nil:
				t.Errorf("export: %v", err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Errorf("export error %v, want one with %q", err, c.err)
			}
			if d := time.Since(start); d > 4*time.Second {
				t.Errorf("took %v: Retry-After 0 was not honoured", d)
			}
		})
	}
}

// A 2xx answer whose body says spans were rejected is an error that says
// how many and why, in either of OTLP's encodings.
func TestExportReportsPartialSuccess(t *testing.T) {
	ctx := context.Background()
	pb, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{PartialSuccess: &coltracepb.ExportTracePartialSuccess{RejectedSpans: 3, ErrorMessage: "too old"}})
	for _, c := range []struct {
		name, contentType string
		body              []byte
		err               string
	}{
		{"protobuf", "application/x-protobuf", pb, "OTLP partial success: too old (3 spans rejected)"},
		{"json", "application/json", []byte(`{"partialSuccess":{"rejectedSpans":"2","errorMessage":"bad"}}`), "OTLP partial success: bad (2 spans rejected)"},
		{"empty protobuf", "application/x-protobuf", nil, ""},
		{"other type", "text/plain", []byte("ok"), ""},
		{"truncated", "application/x-protobuf", pb[:len(pb)-2], "truncated protobuf response"},
	} {
		t.Run(c.name, func(t *testing.T) {
			col := &collector{header: http.Header{"Content-Type": {c.contentType}}, body: c.body}
			srv := httptest.NewServer(col)
			defer srv.Close()
			exp, _ := otlphttp.New(otlphttp.Config{URL: srv.URL + "/v1/traces"})
			defer exp.Shutdown(ctx)
			err := exp.ExportSpans(ctx, everySpanField()[:1])
			if got := fmt.Sprint(err); c.err == "" && err != nil || c.err != "" && !strings.Contains(got, c.err) {
				t.Errorf("export error %q, want %q", got, c.err)
			}
			if n := len(col.requests()); n != 1 {
				t.Errorf("%d requests, want 1 (a 2xx is not retried)", n)
			}
		})
	}
}

// Shutdown interrupts an export waiting to retry, and later exports fail
// with ErrShutdown.
func TestShutdownInterruptsRetries(t *testing.T) {
	ctx := context.Background()
	col := &collector{statuses: []int{503, 503, 503, 503, 503}, header: http.Header{"Retry-After": {"30"}}}
	srv := httptest.NewServer(col)
	defer srv.Close()
	exp, _ := otlphttp.New(otlphttp.Config{URL: srv.URL + "/v1/traces"})
	done := make(chan error, 1)
	go func() { done <- exp.ExportSpans(ctx, everySpanField()[:1]) }()
	for len(col.requests()) == 0 {
		time.Sleep(time.Millisecond)
	}
	if err := exp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Error("export interrupted by Shutdown returned nil")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Shutdown did not interrupt the export waiting 30 s to retry")
	}
	if err := exp.ExportSpans(ctx, everySpanField()[:1]); !errors.Is(err, otlphttp.ErrShutdown) {
		t.Errorf("export after Shutdown: %v, want ErrShutdown", err)
	}
}

func TestFromEnv(t *testing.T) {
	for _, c := range []struct {
		name     string
		env      map[string]string
		want     otlphttp.Config
		problems []string
	}{
		{"base endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://col:4318"}, otlphttp.Config{URL: "http://col:4318/v1/traces"}, nil},
		{"base endpoint with a path", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://col/otlp/"}, otlphttp.Config{URL: "https://col/otlp/v1/traces"}, nil},
		{"traces endpoint as is", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:1", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://b:2/custom"}, otlphttp.Config{URL: "http://b:2/custom"}, nil},
		{"traces endpoint without a path", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://b:2"}, otlphttp.Config{URL: "http://b:2/"}, nil},
		{
			"headers, compression, timeout",
			map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "api-key=a%20b, x=1,bad pair,no value=", "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "only=traces", "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip", "OTEL_EXPORTER_OTLP_TIMEOUT": "2500"},
			otlphttp.Config{Headers: map[string]string{"only": "traces"}, Gzip: true, Timeout: 2500 * time.Millisecond}, nil,
		},
		{
			"values that cannot be used",
			map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "ok=1,bad pair, sp ace=2", "OTEL_EXPORTER_OTLP_COMPRESSION": "zstd", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "10s", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent.pem"},
			otlphttp.Config{Headers: map[string]string{"ok": "1"}},
			[]string{
				`otlphttp: OTEL_EXPORTER_OTLP_HEADERS="bad pair" ignored: want name=value with a header name and a URL-encoded value`,
				`otlphttp: OTEL_EXPORTER_OTLP_HEADERS=" sp ace=2" ignored: want name=value with a header name and a URL-encoded value`,
				`otlphttp: OTEL_EXPORTER_OTLP_COMPRESSION="zstd" ignored: want gzip or none`,
				`otlphttp: OTEL_EXPORTER_OTLP_TRACES_TIMEOUT="10s" ignored: want a positive number of milliseconds`,
				`otlphttp: OTEL_EXPORTER_OTLP_PROTOCOL="grpc" ignored: want http/protobuf (spans are sent as protobuf)`,
				`otlphttp: OTEL_EXPORTER_OTLP_CERTIFICATE="/nonexistent.pem" ignored: want a readable PEM file of CA certificates`,
			},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, k := range []string{"ENDPOINT", "HEADERS", "COMPRESSION", "TIMEOUT", "PROTOCOL", "CERTIFICATE", "CLIENT_CERTIFICATE", "CLIENT_KEY"} {
				t.Setenv("OTEL_EXPORTER_OTLP_"+k, c.env["OTEL_EXPORTER_OTLP_"+k])
				t.Setenv("OTEL_EXPORTER_OTLP_TRACES_"+k, c.env["OTEL_EXPORTER_OTLP_TRACES_"+k])
			}
			got, problems := otlphttp.FromEnv()
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("config %+v, want %+v", got, c.want)
			}
			var msgs []string
			for _, p := range problems {
				msgs = append(msgs, p.Error())
			}
			if !slices.Equal(msgs, c.problems) {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(msgs, "\n"), strings.Join(c.problems, "\n"))
			}
		})
	}
}

// cmpDiff is "" when want and have are equal, else the first lines
// where their text forms part.
func cmpDiff(want, have proto.Message) string {
	if proto.Equal(want, have) {
		return ""
	}
	opts := prototext.MarshalOptions{Multiline: true}
	w := strings.Split(opts.Format(want), "\n")
	h := strings.Split(opts.Format(have), "\n")
	i := 0
	for i < len(w) && i < len(h) && w[i] == h[i] {
		i++
	}
	from := max(i-8, 0)
	return fmt.Sprintf("after line %d:\n-%s\n+%s", i, strings.Join(w[from:min(i+8, len(w))], "\n-"), strings.Join(h[from:min(i+8, len(h))], "\n+"))
}

// A collector that refuses the connection fails the export at once (no
// retries for a minute); one that answers an error with a page quotes
// only its first 512 bytes.
func TestExportFailsFastAndBriefly(t *testing.T) {
	ctx := context.Background()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	exp, _ := otlphttp.New(otlphttp.Config{URL: url + "/v1/traces"})
	start := time.Now()
	if err := exp.ExportSpans(ctx, everySpanField()[:1]); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("export to a closed port: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("export to a closed port took %v", d)
	}
	_ = exp.Shutdown(ctx)

	col := &collector{statuses: []int{http.StatusBadRequest}, body: []byte(strings.Repeat("<p>é", 5000))}
	srv = httptest.NewServer(col)
	defer srv.Close()
	exp, _ = otlphttp.New(otlphttp.Config{URL: srv.URL + "/v1/traces"})
	defer exp.Shutdown(ctx)
	err := exp.ExportSpans(ctx, everySpanField()[:1])
	want := "400 Bad Request (body: " + strings.Repeat("<p>é", 102) + "<p…)" // 512 bytes
	if err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("export error %v, want it to end %q", err, want)
	}
}

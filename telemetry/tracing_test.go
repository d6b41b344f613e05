package telemetry_test

import (
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/mcpx-dev/mcpx/telemetry"
)

// The standard environment configures the exporter where the
// configuration does not: the collector, headers, gzip; the resource
// carries the service name.
func TestTracerProviderFromEnvironment(t *testing.T) {
	var mu sync.Mutex
	var got []*http.Request
	var req coltracepb.ExportTraceServiceRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		b, _ := io.ReadAll(body)
		mu.Lock()
		defer mu.Unlock()
		got = append(got, r)
		if err := proto.Unmarshal(b, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
		}
	}))
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL+"/base")
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "api-key=s%3Dcret")
	t.Setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")
	tp, err := telemetry.NewTracerProvider(context.Background(), telemetry.TracingConfig{ServiceName: "mcpx-test"})
	if err != nil || tp == nil {
		t.Fatalf("NewTracerProvider: %v, %v", tp, err)
	}
	defer tp.Shutdown(context.Background())
	_, span := tp.Tracer("t").Start(context.Background(), "one")
	span.End()
	if err := tp.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 {
		t.Fatalf("%d exports, want 1", len(got))
	}
	r := got[0]
	if r.URL.Path != "/base/v1/traces" || r.Header.Get("Api-Key") != "s=cret" || r.Header.Get("Content-Encoding") != "gzip" {
		t.Errorf("export to %s with %v", r.URL.Path, r.Header)
	}
	rs := req.GetResourceSpans()
	if len(rs) != 1 || len(rs[0].GetScopeSpans()) != 1 || rs[0].GetScopeSpans()[0].GetSpans()[0].GetName() != "one" {
		t.Fatalf("request %v", &req)
	}
	var service string
	for _, kv := range rs[0].GetResource().GetAttributes() {
		if kv.GetKey() == "service.name" {
			service = kv.GetValue().GetStringValue()
		}
	}
	if service != "mcpx-test" {
		t.Errorf("service.name %q, want mcpx-test", service)
	}
}

// An endpoint in the environment that is not an http(s) URL is refused
// when the provider is made, naming the variable, instead of a provider
// whose every export fails.
func TestTracerProviderRefusesBadEnvironmentEndpoint(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318")
	tp, err := telemetry.NewTracerProvider(context.Background(), telemetry.TracingConfig{})
	if tp != nil {
		_ = tp.Shutdown(context.Background())
	}
	if !errors.Is(err, telemetry.ErrConfig) || !strings.Contains(err.Error(), `"collector:4318": want an http(s) URL (from OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)`) {
		t.Fatalf("NewTracerProvider: %v, want ErrConfig naming the variable", err)
	}
}

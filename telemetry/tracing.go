package telemetry

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"

	"github.com/mcpx-dev/mcpx/telemetry/traceconfig"
)

// The tracing configuration is declared in telemetry/traceconfig, which
// links no exporter: the CLI's config tree names it without the OTLP
// exporter's dependencies (see internal/cli/parts).
type TracingConfig = traceconfig.Config

// ErrConfig is returned for a tracing configuration that cannot be used.
var ErrConfig = traceconfig.ErrConfig

const (
	// DefaultServiceName is the service.name of mcpx's spans.
	DefaultServiceName = traceconfig.DefaultServiceName
	// DefaultSampleRatio is the share of root traces sampled.
	DefaultSampleRatio = traceconfig.DefaultSampleRatio
)

// NewTracerProvider returns a provider that batches spans to the OTLP
// collector c names, or nil when tracing is off (c.Enabled is false).
// Shut it down to flush what is buffered.
func NewTracerProvider(ctx context.Context, c TracingConfig) (*sdktrace.TracerProvider, error) {
	if !c.Enabled() {
		return nil, nil
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	var opts []otlptracehttp.Option
	if c.OTLPEndpoint != "" {
		u, err := c.TracesURL()
		if err != nil {
			return nil, err
		}
		opts = append(opts, otlptracehttp.WithEndpointURL(u))
	}
	if len(c.Headers) > 0 {
		opts = append(opts, otlptracehttp.WithHeaders(c.Headers))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("telemetry: OTLP exporter: %w", err)
	}
	name := c.ServiceName
	if name == "" {
		name = DefaultServiceName
	}
	ratio := c.SampleRatio
	if ratio == 0 {
		ratio = DefaultSampleRatio
	}
	return sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(5*time.Second)),
		sdktrace.WithResource(resource.NewSchemaless(semconv.ServiceName(name))),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))),
	), nil
}

package telemetry

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/mcpx-dev/mcpx/telemetry/otlphttp"
)

// serviceNameKey is the resource attribute naming the service
// (OpenTelemetry semantic conventions, "service.name").
const serviceNameKey = attribute.Key("service.name")

// NewTracerProvider returns a provider that batches spans to the OTLP
// collector c names, or nil when tracing is off (c.Enabled is false).
// The standard OTEL_EXPORTER_OTLP_* environment configures the exporter
// where c does not (otlphttp.FromEnv); a variable it cannot use is
// reported to OpenTelemetry's error handler and left out, as the
// specification asks. Shut the provider down to flush what is buffered.
func NewTracerProvider(_ context.Context, c TracingConfig) (*sdktrace.TracerProvider, error) {
	if !c.Enabled() {
		return nil, nil
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	ec, problems := otlphttp.FromEnv()
	for _, p := range problems {
		otel.Handle(p)
	}
	if c.OTLPEndpoint != "" {
		u, err := c.TracesURL()
		if err != nil {
			return nil, err
		}
		ec.URL = u
	} else if err := (TracingConfig{OTLPEndpoint: ec.URL}).Validate(); err != nil {
		return nil, fmt.Errorf("%w (from OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)", err)
	}
	if len(c.Headers) > 0 {
		ec.Headers = c.Headers
	}
	exp, err := otlphttp.New(ec)
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
		sdktrace.WithResource(resource.NewSchemaless(serviceNameKey.String(name))),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))),
	), nil
}

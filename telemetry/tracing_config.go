package telemetry

// The tracing configuration (serve.telemetry): where NewTracerProvider
// sends spans.

import (
	"errors"
	"fmt"
	"net/url"
	"os"
)

// DefaultServiceName is the service.name of mcpx's spans.
const DefaultServiceName = "mcpx"

// DefaultSampleRatio is the share of root traces sampled (a request that
// carries a sampled traceparent is always followed).
const DefaultSampleRatio = 1.0

// TracingConfig is serve.telemetry: where traces go. The zero value
// exports nothing unless the standard OTEL_EXPORTER_OTLP_ENDPOINT (or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set; the exporter also reads
// the standard OTEL_EXPORTER_OTLP_HEADERS and friends.
//
//	{"otlp_endpoint": "http://127.0.0.1:4318", "service_name": "mcpx-prod"}
type TracingConfig struct {
	// OTLPEndpoint is the OTLP/HTTP collector's base URL
	// ("http://host:4318"; spans go to its /v1/traces) or the full
	// traces URL. Defaults to "": the environment's, else tracing off.
	OTLPEndpoint string `json:"otlp_endpoint,omitempty"`
	// ServiceName is the resource's service.name. Defaults to
	// DefaultServiceName ("mcpx").
	ServiceName string `json:"service_name,omitempty"`
	// SampleRatio is the share of new (root) traces recorded, 0 to 1.
	// Defaults to DefaultSampleRatio (1: all).
	SampleRatio float64 `json:"sample_ratio,omitempty"`
	// Headers are sent with every export (an API key). Defaults to none.
	Headers map[string]string `json:"headers,omitempty"`
}

// ErrConfig is returned for a tracing configuration that cannot be used.
var ErrConfig = errors.New("telemetry: bad configuration")

// Enabled reports whether c (or the environment) names a collector.
func (c TracingConfig) Enabled() bool {
	return c.OTLPEndpoint != "" || os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Validate reports a configuration telemetry.NewTracerProvider cannot use.
func (c TracingConfig) Validate() error {
	if c.SampleRatio < 0 || c.SampleRatio > 1 {
		return fmt.Errorf("%w: sample_ratio %v: want 0 to 1", ErrConfig, c.SampleRatio)
	}
	if c.OTLPEndpoint != "" {
		if _, err := c.TracesURL(); err != nil {
			return err
		}
	}
	return nil
}

// TracesURL is OTLPEndpoint with /v1/traces when it names no path.
func (c TracingConfig) TracesURL() (string, error) {
	endpoint := c.OTLPEndpoint
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%w: otlp_endpoint %q: want an http(s) URL", ErrConfig, endpoint)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/traces"
	}
	return u.String(), nil
}

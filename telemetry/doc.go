// Package telemetry is mcpx's observability (issue 19): Prometheus
// metrics of the gateway's calls, the engine's events and the
// upstreams (Metrics, registered on a registry its caller owns), and an
// OpenTelemetry tracer provider that exports over OTLP/HTTP when
// configured (NewTracerProvider). The gateway and the engine know
// neither library's SDK: they call the small interfaces Metrics
// implements (observe.Observer, engine.Listener) and the
// OpenTelemetry API.
package telemetry

// Package telemetry is mcpx's observability: Prometheus metrics of the
// gateway's calls, the engine's events and the upstreams (Metrics,
// registered on a promtext.Registry its caller owns), and an
// OpenTelemetry tracer provider that exports over OTLP/HTTP when
// configured (NewTracerProvider, with the otlphttp exporter). The
// gateway and the engine know neither: they call the small interfaces
// Metrics implements (observe.Observer, engine.Listener) and the
// OpenTelemetry API.
//
// Neither the Prometheus client library nor the OpenTelemetry OTLP
// exporter is linked: their package initialisation (a default registry
// with collectors, gRPC, protobuf descriptors) ran before main in every
// process (BENCHMARKS.md, "Start-up").
package telemetry

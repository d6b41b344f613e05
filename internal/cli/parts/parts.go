// Package parts names what a binary built on internal/cli links beyond the
// CLI itself: the S3 store, and the metrics and traces of "mcpx serve".
//
// They live apart because their dependencies (minio-go, the Prometheus
// client, the OTLP exporter and its gRPC and protobuf packages) run
// package initializers in every process that links them: about 5 ms
// before main, on each "mcpx transform" a host runs per result. cmd/mcpx
// leaves them out and hands the commands that need them to
// cmd/mcpx-server, which links everything (see internal/cli's Run).
package parts

import (
	"context"
	"net/http"

	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway"
	"github.com/mcpx-dev/mcpx/internal/cli/config"
	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/web"
)

// Set is what a binary links; a nil field is a part it lacks.
type Set struct {
	// OpenS3 opens the S3 store of the config's store.s3.
	OpenS3 func(ctx context.Context, c config.S3, log hclog.Logger) (Store, error)
	// Observe makes the metrics and tracing of one "mcpx serve" or
	// "mcpx wrap"; bus is nil without an HTTP listener.
	Observe func(ctx context.Context, cfg config.File, bus *web.EventBus, log hclog.Logger) (Observability, error)
}

// Complete reports whether s has every part.
func (s Set) Complete() bool { return s.OpenS3 != nil && s.Observe != nil }

// Store is what the commands need of an artifact store; the file-system
// store and the S3 store are both one.
type Store interface {
	store.Store
	store.Annotator
	store.Searcher
	store.Collector
	store.AccessLister
}

// Observability is what the gateway measures and traces, and where it goes.
type Observability interface {
	// Listener is the engine's: metrics, and the API's event bus.
	Listener() engine.Listener
	// Configure sets the gateway's observer, tracer and resource updates.
	Configure(*gateway.Options)
	// Watch reports gw's upstreams at each scrape.
	Watch(gw *gateway.Gateway)
	// Evicted counts the collector's removals and publishes them.
	Evicted() func(store.Removal)
	// Handler serves the metrics in Prometheus text (GET /metrics).
	Handler() http.Handler
	// Shutdown flushes buffered spans.
	Shutdown()
}

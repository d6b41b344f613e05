// Package parts names what a binary built on internal/cli links beyond the
// CLI itself: the S3 store, jq, and the gateway of "mcpx serve" and "mcpx
// wrap" with its HTTP API, metrics and traces.
//
// They live apart because their dependencies (the AWS SDK, gojq, the
// gateway's mcp-go and JSON Schema packages, the OpenTelemetry SDK) run
// package initializers
// in every process that links them: about 5 ms before main, on each "mcpx
// transform" a host runs per result. cmd/mcpx leaves them out and hands
// the commands that need them to cmd/mcpx-server, which links everything
// (see internal/cli's Run).
package parts

import (
	"context"
	"io"

	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/internal/cli/config"
	"github.com/mcpx-dev/mcpx/query"
	"github.com/mcpx-dev/mcpx/store"
)

// Set is what a binary links; a nil field is a part it lacks.
type Set struct {
	// OpenS3 opens the S3 store of the config's store.s3.
	OpenS3 func(ctx context.Context, c config.S3, log hclog.Logger) (Store, error)
	// JQ runs the jq programs of "mcpx artifacts query --jq" (query/jq).
	JQ query.JQ
	// Serve runs the gateway until its stdin ends (stdio) or ctx ends or
	// a signal arrives (HTTP).
	Serve func(ctx context.Context, r GatewayRun) error
	// Check builds the gateway and every layer of every configured server
	// and tool, and prints what Serve would run to r.Stdout.
	Check func(ctx context.Context, r GatewayRun) error
}

// Complete reports whether s has every part.
func (s Set) Complete() bool {
	return s.OpenS3 != nil && s.JQ != nil && s.Serve != nil && s.Check != nil
}

// GatewayRun is what "mcpx serve" and "mcpx wrap" prepared for the
// gateway.
type GatewayRun struct {
	// Config is the loaded configuration, with wrap's server in place.
	Config config.File
	// ConfigPath (--config) and StoreDir (--store) are for messages.
	ConfigPath, StoreDir string
	// Listen is the HTTP address; "" serves MCP over Stdin and Stdout.
	Listen string
	// Engine holds the artifact store (one that writes nothing for
	// Check), the pipeline, the logger and the WASM host of the configured
	// servers (the caller closes the store and the host after Serve or
	// Check returns), with retention's put-time rules applied.
	Engine engine.Options
	Log    hclog.Logger
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// Store is what the commands need of an artifact store; the file-system
// store and the S3 store are both one.
type Store interface {
	store.Store
	store.Annotator
	store.Searcher
	store.Collector
	store.AccessLister
}

// Package observe is what mcpx tells whoever watches it: each tool call
// when it ends, whether it came through the gateway or the HTTP API's
// POST /transform (for metrics, the artifact UI), and each upstream
// resource that changed. The gateway's Options and web's APIOptions take
// an Observer; it lives apart from both so that neither imports the
// other for it.
package observe

import (
	"time"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/store"
)

// Observer is told of every tools/call the gateway routes (after its
// rate limit), when it ends. ObserveCall runs on the calling goroutine,
// many at once: keep it quick and safe for concurrent use.
type Observer interface {
	ObserveCall(Call)
}

// Call is one finished tools/call.
type Call struct {
	// Server and Tool name the upstream's tool ("mcpx" for the
	// gateway's own tools).
	Server, Tool string
	// Scope is whose call it was (the artifacts' scope); zero when the
	// call failed before the engine.
	Scope store.Scope
	// Duration is from routing to the transformed result.
	Duration time.Duration
	// Result is the engine's result (artifacts, what was kept out);
	// nil when the call failed before or in the engine, or when the tool
	// is the gateway's own.
	Result *engine.Result
	// Err is the call's failure, nil when it answered.
	Err error
	// ToolError says the result is a tool error (isError: true).
	ToolError bool
}

// ResourceUpdate is an upstream resource that changed, for one principal
// subscribed to it.
type ResourceUpdate struct {
	Server, URI string
	// Scope has the subscriber's tenant and user; empty when nobody
	// authenticated is subscribed.
	Scope store.Scope
}

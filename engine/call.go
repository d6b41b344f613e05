package engine

import "github.com/mcpx-dev/mcpx/engine/layer"

// Call identifies the tool call whose result is transformed: its server,
// tool, arguments, scope, output schema and the View of its client. A
// layer reads it as its Doc's Call.
type Call = layer.Call

// View is what one call's client takes (Call.View): its budget and
// whether it looks at images natively. The zero value is the engine's
// configured behaviour.
type View = layer.View

// ResourceReader reads an MCP resource from an upstream server for the
// layers that may (resourcelink); the gateway provides one.
type ResourceReader = layer.ResourceReader

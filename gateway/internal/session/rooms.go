// Package session serves the gateway's downstream clients: a Session is
// one client connection (a stdio peer, a streamable-HTTP session) or one
// stateless 2026-07-28 request, and serves its messages one at a time or
// concurrently: Handle takes a message and returns the response,
// StartCall starts a stdio tools/call without a goroutine waiting for
// the upstream (call_start.go). What a request needs of the rest of the
// gateway it asks its Rooms: the router (where a tool, prompt or URI
// goes), the resources, the subscriptions, the artifact room, and the
// session package's own gateway-wide parts, each with its own state and
// lock:
//
//   - Registry (registry.go): the open sessions, the notifications they
//     all hear, and which client a server-to-client request goes to
//     (serverreq.go);
//   - Clients (upstream_caps.go): what the gateway declares upstream of
//     its clients' capabilities;
//   - Progress (progress.go): upstream progress tokens mapped back to
//     their client's;
//   - Bridges (bridge.go): a stateless client's calls parked on an
//     upstream's requests (input_required);
//   - Profiles (profiles.go), Errors (errors.go): what a client takes,
//     and what it is told of a failure.
//
// A message's path, file by file, is in docs/design.md ("A message's
// path").
package session

import (
	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpx-dev/mcpx/gateway/internal/artifacts"
	"github.com/mcpx-dev/mcpx/gateway/internal/resources"
	"github.com/mcpx-dev/mcpx/gateway/internal/router"
	"github.com/mcpx-dev/mcpx/gateway/internal/subscriptions"
	"github.com/mcpx-dev/mcpx/observe"
)

// Rooms are what sessions are served with: the gateway's rooms, built
// once by the gateway and shared by every session. A session reaches
// nothing of the gateway but these.
type Rooms struct {
	Ups      *router.Upstreams
	Tools    *router.Tools
	Prompts  *router.Prompts
	Res      *resources.Resources
	Cache    *resources.Cache // a session's reads, dropped at its end
	Subs     *subscriptions.Table
	Listen   *subscriptions.Listeners
	Art      *artifacts.Service
	Sessions *Registry
	Clients  *Clients
	Progress *Progress
	Bridges  *Bridges
	Profiles *Profiles
	Errors   *Errors
	// Observer is told of every tools/call; nil: nothing is timed.
	Observer observe.Observer
	// Tracer traces each tools/call; nil: no spans.
	Tracer trace.Tracer
	Log    hclog.Logger
	// Version is the gateway's serverInfo.version.
	Version string
	// OnEnd is called with a session's id after it closed; nil: nothing.
	OnEnd func(sessionID string)
}

package session

// What the gateway declares to an upstream as its client's capabilities.
// A server may decide what it offers by them (server-everything lists
// trigger-sampling-request only to a client with sampling), so each
// upstream is told what the clients in front of mcpx have, not all that
// mcpx could relay. initialize is once per connection and a connection is
// shared by every client, so the declaration is made once:
//
//   - mcpServers.NAME.mcpx.client_capabilities, when set, is declared
//     verbatim, at gateway start;
//   - with gateway.Options.WaitForClientCapabilities (mcpx serve and
//     wrap over stdio), the process starts at Start (it warms up) but
//     its initialize waits for the first client's capabilities (its
//     initialize, or a stateless request's _meta) and declares what of
//     them mcpx relays: sampling and elicitation as the client declared
//     them (sub-fields kept), roots (with listChanged) when it has roots;
//   - otherwise (mcpx serve --listen, where no client may ever come, and
//     a gateway used with no client in view) sampling and elicitation,
//     and roots when a connected client declared roots: the upstream
//     initializes at Start, and a client that lacks what was declared is
//     refused the requests it cannot answer (Registry.Relay).
//
// mcpx.roots always declares roots (answered from the config). An
// upstream is never restarted to change its declaration: it may hold
// state a client sees (a browser page). When it was told roots with
// listChanged, a change of the connected clients' roots (a client with
// roots arrives or leaves, or says its roots changed) reaches it as
// notifications/roots/list_changed. A later client with roots it was not
// told of is logged once. A later client with fewer capabilities than
// declared is refused the requests it cannot answer (Registry.Relay).

import (
	"encoding/json"
	"sync"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/gateway/internal/router"
	"github.com/mcpx-dev/mcpx/gateway/internal/upstream"
)

// Clients are what the gateway knows of its clients' capabilities for
// its upstreams: the first client's, which upstreams' initialize waits
// for when wait is set, and whether any open session has roots.
type Clients struct {
	ups      *router.Upstreams
	sessions *Registry
	wait     bool
	once     sync.Once
	ready    chan struct{} // closed once caps is set
	caps     json.RawMessage
}

// NewClients returns what the gateway over ups, whose sessions are
// sessions, knows of its clients: nothing yet. With wait, upstreams'
// initialize waits for the first client (Wait).
func NewClients(ups *router.Upstreams, sessions *Registry, wait bool) *Clients {
	return &Clients{ups: ups, sessions: sessions, wait: wait, ready: make(chan struct{})}
}

// Arrived records a client's capabilities: the first client's open the
// upstreams' initialize; a client with roots that an upstream was not
// told of is logged once per upstream. It is called for every session's
// initialize and every stateless request, and is cheap when there is
// nothing to do.
func (cl *Clients) Arrived(caps json.RawMessage) {
	cl.once.Do(func() {
		cl.caps = append(json.RawMessage(nil), caps...)
		close(cl.ready)
	})
	if !gjson.GetBytes(caps, "roots").Exists() {
		return
	}
	for _, u := range cl.ups.All() {
		u.ClientDeclaredRoots()
	}
}

// relayedCapabilities are the client capabilities whose requests the
// gateway relays to its clients as they are, so a client's declaration
// of them (with its sub-fields, e.g. elicitation.url) holds upstream.
var relayedCapabilities = []string{"sampling", "elicitation"}

// Declare computes what u is told of its client's capabilities (see the
// top of this file).
func (cl *Clients) Declare(u *upstream.Upstream) json.RawMessage {
	if cc := u.Config.Mcpx.ClientCapabilities; len(cc) > 0 {
		return cc
	}
	caps := map[string]json.RawMessage{}
	if cl.wait {
		for _, name := range relayedCapabilities {
			if v := gjson.GetBytes(cl.caps, name); v.IsObject() {
				caps[name] = json.RawMessage(v.Raw)
			}
		}
		if gjson.GetBytes(cl.caps, "roots").Exists() {
			caps["roots"] = json.RawMessage(`{"listChanged":true}`)
		}
	} else {
		caps["sampling"] = json.RawMessage(`{}`)
		caps["elicitation"] = json.RawMessage(`{}`)
		if cl.sessions.anyHasRoots() {
			caps["roots"] = json.RawMessage(`{"listChanged":true}`)
		}
	}
	if len(u.Config.Mcpx.Roots) > 0 {
		// answered from the config, which does not change
		caps["roots"] = json.RawMessage(`{}`)
	}
	b, _ := json.Marshal(caps)
	return b
}

// RootsChanged tells every upstream that was told roots with listChanged
// that the clients' roots changed: a client with roots arrived or left,
// or said its roots changed. The upstream then asks roots/list, which is
// answered by the connected clients (Registry.Relay).
func (cl *Clients) RootsChanged() {
	for _, u := range cl.ups.All() {
		u.ClientRootsChanged()
	}
}

// Wait is what upstreams' initialize waits on: nil when it does not wait
// for the first client.
func (cl *Clients) Wait() <-chan struct{} {
	if !cl.wait {
		return nil
	}
	return cl.ready
}

package web

import (
	"net/http"
	"slices"

	"github.com/mcpx-dev/mcpx/auth"
)

// RecentCalls is the answer of GET /calls.
type RecentCalls struct {
	// Calls are the caller's call events still in the event buffer
	// (result_rewritten, observation_clamped, layer_failed), newest
	// first: what the UI's Calls pane shows when it opens.
	Calls []Event `json:"calls"`
	// LastEventID is the newest event's id: GET /events with it as
	// Last-Event-ID goes on from here.
	LastEventID uint64 `json:"last_event_id"`
}

// callEvents are the events that say how a call went.
var callEvents = []string{EventResultRewritten, EventObservationClamped, EventLayerFailed}

// serveCalls answers the caller's recent calls from the event buffer
// (Limits.EventBuffer, as a resumed /events replays): a page opened
// after a call still shows it, and nobody sees another's.
func (a *API) serveCalls(w http.ResponseWriter, r *http.Request) {
	owns := ownedBy(principal(r))
	evs, last := a.o.Events.Buffered(func(ev Event) bool { return owns(ev) && slices.Contains(callEvents, ev.Type) })
	slices.Reverse(evs)
	if evs == nil {
		evs = []Event{}
	}
	writeJSON(w, http.StatusOK, RecentCalls{Calls: evs, LastEventID: last})
}

// ownedBy is the events p may see: those of its own scopes.
func ownedBy(p auth.Principal) func(Event) bool {
	return func(ev Event) bool { return p.Owns(ev.Scope) }
}

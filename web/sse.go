package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// serveEvents streams the caller's events as server-sent events: "id:"
// the bus sequence, "event:" the type, "data:" the Event as JSON. A
// client that reconnects with Last-Event-ID (header, or ?last_event_id=
// for an EventSource that cannot set headers) gets what it missed from
// the buffer; when the buffer no longer has it, an "event: gap" comes
// first, so a UI knows to reload the list.
func (a *API) serveEvents(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	select {
	case a.streams <- struct{}{}:
		defer func() { <-a.streams }()
	default:
		w.Header().Set("Retry-After", "5")
		http.Error(w, "too many event streams", http.StatusServiceUnavailable)
		return
	}
	last := r.Header.Get("Last-Event-ID")
	if last == "" {
		last = r.URL.Query().Get("last_event_id")
	}
	var after uint64
	if last != "" {
		var err error
		if after, err = strconv.ParseUint(last, 10, 64); err != nil {
			http.Error(w, "bad Last-Event-ID", http.StatusBadRequest)
			return
		}
	}
	p := principal(r)
	filter := ownedBy(p)
	var (
		replay []Event
		gap    bool
		cancel func()
		ch     <-chan Event
	)
	if last == "" {
		// a fresh stream starts now
		ch, cancel = a.o.Events.SubscribeNow(filter)
	} else {
		replay, ch, gap, cancel = a.o.Events.Subscribe(after, filter)
	}
	defer cancel()

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 2000\n\n")
	if gap {
		fmt.Fprint(w, "event: gap\ndata: {}\n\n")
	}
	for _, ev := range replay {
		writeEvent(w, ev)
	}
	fl.Flush()
	keep := time.NewTicker(time.Duration(a.l.EventKeepAlive))
	defer keep.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case ev, ok := <-ch:
			if !ok {
				a.log.Info("event stream fell behind; the client resumes", "principal", p.Key())
				return
			}
			writeEvent(w, ev)
			fl.Flush()
		case <-keep.C:
			fmt.Fprint(w, ": keep-alive\n\n")
			fl.Flush()
		}
	}
}

func writeEvent(w http.ResponseWriter, ev Event) {
	b, _ := json.Marshal(ev) // strings, numbers and times: cannot fail
	fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", ev.ID, ev.Type, b)
}

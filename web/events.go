package web

import (
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/internal/jsonwalk"
	"github.com/mcpx-dev/mcpx/store"
)

// The event types GET /events sends.
const (
	EventArtifactStored     = string(engine.EventArtifactStored)
	EventArtifactEvicted    = "artifact_evicted"
	EventResourceUpdated    = "resource_updated"
	EventObservationClamped = string(engine.EventObservationClamped)
	EventLayerFailed        = string(engine.EventLayerFailed)
	// EventResultRewritten: one call's result left the engine having
	// stored something; it says what the rewrite kept out of the model's
	// context, which artifacts the call made and the result's display
	// hints (ResultRewritten).
	EventResultRewritten = "result_rewritten"
)

// Event is one server-sent event: refs and sizes, never bytes. Scope says
// whose it is (the caller's only are sent) and is not sent itself.
type Event struct {
	// ID is the bus's sequence number (the SSE id), set by Publish.
	ID   uint64    `json:"id"`
	Type string    `json:"type"`
	Time time.Time `json:"time"`
	// Scope is whose event it is; Evicted gives an eviction the scope
	// the bus saw each owner store its artifact under.
	Scope  store.Scope `json:"-"`
	Server string      `json:"server,omitempty"`
	Tool   string      `json:"tool,omitempty"`
	Layer  string      `json:"layer,omitempty"`
	Path   string      `json:"path,omitempty"`
	// Artifact is the stored (or evicted) artifact.
	Artifact *EventArtifact `json:"artifact,omitempty"`
	// URI is the updated resource (resource_updated).
	URI string `json:"uri,omitempty"`
	// OriginalChars and ClampedChars: observation_clamped.
	OriginalChars int `json:"original_chars,omitempty"`
	ClampedChars  int `json:"clamped_chars,omitempty"`
	// Error: layer_failed.
	Error string `json:"error,omitempty"`
	// Why: artifact_evicted ("ttl", "max_session_bytes session=…").
	Why string `json:"why,omitempty"`
	// KeptOut: result_rewritten, what the call kept out of the context
	// (the result's _meta["mcpx/kept_out"]); absent when the result did
	// not say (not an MCP result, or it did not come out smaller).
	KeptOut *KeptOut `json:"kept_out,omitempty"`
	// Artifacts: result_rewritten, every artifact the call stored.
	Artifacts []EventArtifact `json:"artifacts,omitempty"`
	// Display: result_rewritten, the result's display hints
	// (_meta["mcpx/display"], from the contract layer: open_canvas,
	// primary_file, mode, viewer_hint), as the tool gave them.
	Display json.RawMessage `json:"display,omitempty"`
}

// KeptOut is engine.MetaKeptOutKey's value: what one call's rewrite kept
// out of the model's context.
type KeptOut struct {
	Bytes     int64 `json:"bytes"`
	Tokens    int64 `json:"tokens"`
	Artifacts int   `json:"artifacts"`
}

// EventArtifact is an event's artifact: what it is, never its bytes.
type EventArtifact struct {
	ID        string `json:"id"`
	MIMEType  string `json:"mime_type,omitempty"`
	SizeBytes int64  `json:"size_bytes"`
	Filename  string `json:"filename,omitempty"`
	URI       string `json:"uri,omitempty"`
}

// EventBus fans events out to SSE subscribers and keeps the last
// Limits.EventBuffer for resumption. It implements engine.Listener: pass
// it as engine.Options.Listener. Safe for concurrent use.
type EventBus struct {
	size, subBuf, maxOwners int

	mu     sync.Mutex
	ring   []Event // ring[(seq-1) % size] is event seq
	seq    uint64
	subs   map[*subscriber]struct{}
	owners map[string][]store.Scope // artifact id → each owner's first scope, for evictions
	order  []string                 // owners' keys, oldest first
}

// maxOwnersPerArtifact bounds the owners the bus remembers for one
// artifact (the same bytes put by several principals); the rest hear
// nothing of its eviction. Bytes that many principals put are rare.
const maxOwnersPerArtifact = 8

type subscriber struct {
	ch     chan Event
	filter func(Event) bool
	lost   bool // cut off: its channel was full
}

// NewEventBus returns a bus with l's buffers (defaults filled in).
func NewEventBus(l Limits) *EventBus {
	l = l.WithDefaults()
	return &EventBus{size: l.EventBuffer, subBuf: l.SubscriberBuffer, maxOwners: l.TrackedOwners,
		ring: make([]Event, 0, min(l.EventBuffer, 1024)), subs: map[*subscriber]struct{}{}, owners: map[string][]store.Scope{}}
}

// OnEvent publishes an engine event (engine.Listener). Refused
// artifacts are not sent (nothing was stored).
func (b *EventBus) OnEvent(ev engine.Event) {
	e := Event{Type: string(ev.Type), Time: ev.Time, Scope: ev.Scope, Server: ev.Server, Tool: ev.Tool,
		Layer: ev.Layer, Path: ev.Path, OriginalChars: ev.OriginalChars, ClampedChars: ev.ClampedChars, Error: ev.Error}
	switch ev.Type {
	case engine.EventArtifactStored:
		if ev.Artifact == nil {
			return
		}
		r := ev.Artifact
		e.Artifact = &EventArtifact{ID: r.ID, MIMEType: r.MIMEType, SizeBytes: r.SizeBytes, Filename: r.Filename, URI: r.URI}
	case engine.EventObservationClamped, engine.EventLayerFailed:
	default:
		return
	}
	b.Publish(e)
}

// ResultRewritten publishes result_rewritten for a call's rewritten
// result that stored something: its kept_out numbers, its artifacts and
// its display hints, read from the result's _meta (a CallToolResult's,
// or a JSON-RPC response's result's). POST /transform calls it; a host
// that runs the engine itself calls it with each result.
func (b *EventBus) ResultRewritten(c engine.Call, res *engine.Result) {
	if res == nil || len(res.Artifacts) == 0 {
		return
	}
	e := Event{Type: EventResultRewritten, Scope: c.Scope, Server: c.Server, Tool: c.Tool,
		Artifacts: make([]EventArtifact, 0, len(res.Artifacts))}
	for _, r := range res.Artifacts {
		if r.NotStored != nil || r.Truncated {
			continue
		}
		e.Artifacts = append(e.Artifacts, EventArtifact{ID: r.ID, MIMEType: r.MIMEType, SizeBytes: r.SizeBytes, Filename: r.Filename, URI: r.URI})
	}
	if meta, ok := resultMeta(res.Raw); ok {
		if sp, ok := jsonwalk.Member(res.Raw, meta.Off, engine.MetaKeptOutKey); ok && sp.Kind == jsonwalk.KindObject {
			var k KeptOut
			if json.Unmarshal(res.Raw[sp.Off:sp.End], &k) == nil {
				e.KeptOut = &k
			}
		}
		if sp, ok := jsonwalk.Member(res.Raw, meta.Off, metaDisplayKey); ok && sp.Kind == jsonwalk.KindObject {
			e.Display = append(json.RawMessage(nil), res.Raw[sp.Off:sp.End]...)
		}
	}
	b.Publish(e)
}

// metaDisplayKey is where the contract layer copies a tool's display
// hints (layers.ContractOptions.KeepHints).
const metaDisplayKey = "mcpx/display"

// resultMeta finds the _meta object of a CallToolResult, or of a JSON-RPC
// response's result.
func resultMeta(raw []byte) (jsonwalk.Span, bool) {
	root := 0
	for root < len(raw) && (raw[root] == ' ' || raw[root] == '\t' || raw[root] == '\n' || raw[root] == '\r') {
		root++
	}
	if sp, ok := jsonwalk.Member(raw, root, "_meta"); ok && sp.Kind == jsonwalk.KindObject {
		return sp, true
	}
	if res, ok := jsonwalk.Member(raw, root, "result"); ok && res.Kind == jsonwalk.KindObject {
		if sp, ok := jsonwalk.Member(raw, res.Off, "_meta"); ok && sp.Kind == jsonwalk.KindObject {
			return sp, true
		}
	}
	return jsonwalk.Span{}, false
}

// Evicted publishes artifact_evicted for a removal the retention
// collector reports (store.CollectOptions.Each), to each owner that
// loses the artifact, with the scope that owner stored it under: every
// owner the bus saw store it when it is removed, only the owners of the
// released scopes when it is released.
func (b *EventBus) Evicted(r store.Removal) {
	ev := Event{Type: EventArtifactEvicted, Artifact: &EventArtifact{ID: r.ID, SizeBytes: r.Bytes, URI: engine.URIScheme + r.ID}, Why: r.Why}
	b.mu.Lock()
	to := b.owners[r.ID]
	if len(r.Released) > 0 {
		to = nil
		kept := b.owners[r.ID][:0:0]
		for _, sc := range b.owners[r.ID] {
			if slices.ContainsFunc(r.Released, sc.Owner().Holds) {
				to = append(to, sc)
			} else {
				kept = append(kept, sc)
			}
		}
		b.owners[r.ID] = kept
	}
	b.mu.Unlock()
	if len(to) == 0 {
		b.Publish(ev) // no owner seen: the local user's only
		return
	}
	for _, sc := range to {
		ev.Scope = sc
		b.Publish(ev)
	}
}

// Publish numbers ev and sends it to the subscribers it concerns. It
// never blocks: a subscriber too slow to take it is cut off, and
// resumes from the buffer with Last-Event-ID.
func (b *EventBus) Publish(ev Event) {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if ev.Artifact != nil && ev.Type == EventArtifactStored {
		b.remember(ev.Artifact.ID, ev.Scope)
	}
	b.seq++
	ev.ID = b.seq
	if len(b.ring) < b.size {
		b.ring = append(b.ring, ev)
	} else {
		b.ring[(ev.ID-1)%uint64(b.size)] = ev
	}
	for s := range b.subs {
		if s.lost || !s.filter(ev) {
			continue
		}
		select {
		case s.ch <- ev:
		default:
			s.lost = true
			close(s.ch)
		}
	}
}

// remember records id's owner for its eviction, forgetting the oldest
// artifacts beyond maxOwners. Called with mu held.
func (b *EventBus) remember(id string, sc store.Scope) {
	if scopes, ok := b.owners[id]; ok {
		// Each owner's first put's scope stays (one artifact, several puts).
		if len(scopes) < maxOwnersPerArtifact && !slices.ContainsFunc(scopes, sc.Owner().Holds) {
			b.owners[id] = append(scopes, sc)
		}
		return
	}
	b.owners[id] = []store.Scope{sc}
	b.order = append(b.order, id)
	if len(b.order) > b.maxOwners {
		delete(b.owners, b.order[0])
		b.order = b.order[1:]
	}
}

// SubscribeNow subscribes to the events from now on.
func (b *EventBus) SubscribeNow(filter func(Event) bool) (ch <-chan Event, cancel func()) {
	b.mu.Lock()
	after := b.seq
	b.mu.Unlock()
	_, ch, _, cancel = b.Subscribe(after, filter)
	return ch, cancel
}

// Subscribe returns the buffered events after id `after` that filter
// accepts, and a channel of the ones to come; cancel ends the
// subscription. gap reports that events after `after` were already gone
// from the buffer. The channel is closed when the subscriber falls
// behind by more than Limits.SubscriberBuffer.
func (b *EventBus) Subscribe(after uint64, filter func(Event) bool) (replay []Event, ch <-chan Event, gap bool, cancel func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	replay, gap = b.since(after, filter)
	s := &subscriber{ch: make(chan Event, b.subBuf), filter: filter}
	b.subs[s] = struct{}{}
	return replay, s.ch, gap, func() {
		b.mu.Lock()
		delete(b.subs, s)
		b.mu.Unlock()
	}
}

// Buffered returns the events still in the buffer that filter accepts,
// oldest first, and the id of the newest event published (0 before
// any): a stream resumed from that id misses nothing and repeats none.
func (b *EventBus) Buffered(filter func(Event) bool) (evs []Event, last uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	evs, _ = b.since(0, filter)
	return evs, b.seq
}

// since returns the buffered events after id `after` that filter
// accepts; gap reports that some after it are gone from the buffer (or
// that after is from before a restart). Called with mu held.
func (b *EventBus) since(after uint64, filter func(Event) bool) (evs []Event, gap bool) {
	oldest := b.seq - uint64(len(b.ring)) + 1
	if after+1 < oldest || after > b.seq {
		// gone from the buffer, or an id from before a restart
		gap = true
		after = oldest - 1
	}
	for id := after + 1; id <= b.seq; id++ {
		if ev := b.ring[(id-1)%uint64(b.size)]; filter(ev) {
			evs = append(evs, ev)
		}
	}
	return evs, gap
}

var _ engine.Listener = (*EventBus)(nil)

package engine

import (
	"time"

	"github.com/mcpx-dev/mcpx/store"
)

// EventType names an engine event.
type EventType string

// The events an engine emits.
const (
	// EventArtifactStored: bytes were moved into the store.
	EventArtifactStored EventType = "artifact_stored"
	// EventObservationClamped: the guardrail cut the result to its budget.
	EventObservationClamped EventType = "observation_clamped"
	// EventLayerFailed: a layer, or one of its rewrites, failed; the result
	// flows on as the previous step left it.
	EventLayerFailed EventType = "layer_failed"
	// EventArtifactRefused: a value was over a store limit
	// (max_artifact_bytes, or a session's or trace's quota) and was not
	// stored; the result shows a truncated preview and a note. Artifact
	// carries its size and Artifact.NotStored the limit.
	EventArtifactRefused EventType = "artifact_refused"
	// EventWorkRefused: the process's memory budget (Options.Memory)
	// could not hold, in time, work that only adds to a result: an image
	// view (the image is referenced only, and the model told why) or a
	// content summary (the artifact's summary says its kind alone). Path
	// names the value, Layer the step, Error what was needed and why.
	EventWorkRefused EventType = "work_refused"
)

// Event is what listeners receive. Fields that do not apply are zero.
type Event struct {
	Type   EventType   `json:"type"`
	Time   time.Time   `json:"time"`
	Server string      `json:"server,omitempty"`
	Tool   string      `json:"tool,omitempty"`
	Scope  store.Scope `json:"scope"`
	// Layer is the step that caused the event.
	Layer string `json:"layer,omitempty"`
	// Path is the rewrite path involved, if any.
	Path string `json:"path,omitempty"`
	// Artifact is set for EventArtifactStored and EventArtifactRefused.
	Artifact *ArtifactRef `json:"artifact,omitempty"`
	// AlreadyStored is set for EventArtifactStored when the store held
	// the artifact's bytes before this put (store.Ref.AlreadyStored): the
	// value left the result, but no new bytes went into the store.
	AlreadyStored bool `json:"already_stored,omitempty"`
	// OriginalChars and ClampedChars are set for EventObservationClamped.
	OriginalChars int `json:"original_chars,omitempty"`
	ClampedChars  int `json:"clamped_chars,omitempty"`
	// Error is set for EventLayerFailed and EventWorkRefused.
	Error string `json:"error,omitempty"`
	// Meta carries a rewrite's Meta.
	Meta map[string]string `json:"meta,omitempty"`
}

// Listener receives engine events. OnEvent is called synchronously from the
// transforming goroutine, possibly from many goroutines at once: keep it
// quick and safe for concurrent use.
type Listener interface {
	OnEvent(Event)
}

// ListenerFunc adapts a function to a Listener.
type ListenerFunc func(Event)

// OnEvent calls f(ev).
func (f ListenerFunc) OnEvent(ev Event) { f(ev) }

// workRefused logs and emits EventWorkRefused for work (an "image view",
// a "content summary") of the value at path that the memory budget
// refused with err.
func (e *Engine) workRefused(c Call, step, path, work string, err error) {
	e.log.Warn(work+" left out: the work memory could not hold it", "server", c.Server, "tool", c.Tool, "path", path, "error", err)
	e.emit(Event{Type: EventWorkRefused, Server: c.Server, Tool: c.Tool, Scope: c.Scope, Layer: step, Path: path, Error: work + ": " + err.Error()})
}

package web

// The limits of the HTTP API (serve.api in the config file).

import (
	"time"

	"github.com/mcpx-dev/mcpx/store"
)

// Defaults of Limits.
const (
	// DefaultEventBuffer is how many recent events are kept for
	// Last-Event-ID resumption.
	DefaultEventBuffer = 1024
	// DefaultSubscriberBuffer is how many events may wait for one slow
	// SSE client before it is cut off (it resumes with Last-Event-ID).
	DefaultSubscriberBuffer = 256
	// DefaultMaxEventStreams caps the open GET /events streams.
	DefaultMaxEventStreams = 256
	// DefaultEventKeepAlive is the interval of SSE comments on an idle
	// stream (proxies close silent connections).
	DefaultEventKeepAlive = 25 * time.Second
	// DefaultMaxTransformBytes caps a POST /transform body.
	DefaultMaxTransformBytes = 64 << 20
	// DefaultTrackedOwners is how many artifacts' scopes the event bus
	// remembers, so an eviction (which the store reports by id only)
	// reaches its owner.
	DefaultTrackedOwners = 100_000
	// DefaultPreviewBytes is how much of a text, JSON or HTML artifact the
	// UI loads for its preview (a Range request); the download is whole.
	DefaultPreviewBytes = 1 << 20
)

// Limits bound the API's memory and streams. Zero fields take defaults.
type Limits struct {
	// EventBuffer is how many events are kept for resumption. Defaults to
	// DefaultEventBuffer (1024).
	EventBuffer int `json:"event_buffer,omitempty"`
	// SubscriberBuffer is how many events may queue for one SSE client.
	// Defaults to DefaultSubscriberBuffer (256).
	SubscriberBuffer int `json:"subscriber_buffer,omitempty"`
	// MaxEventStreams caps the open /events streams; more answer 503.
	// Defaults to DefaultMaxEventStreams (256).
	MaxEventStreams int `json:"max_event_streams,omitempty"`
	// EventKeepAlive is the SSE keep-alive interval ("25s"). Defaults to
	// DefaultEventKeepAlive.
	EventKeepAlive store.Duration `json:"event_keep_alive,omitempty"`
	// MaxTransformBytes caps a POST /transform body; larger answer 413.
	// Defaults to DefaultMaxTransformBytes (64 MiB).
	MaxTransformBytes int64 `json:"max_transform_bytes,omitempty"`
	// TrackedOwners is how many artifacts' owners the event bus keeps for
	// eviction events. Defaults to DefaultTrackedOwners (100,000).
	TrackedOwners int `json:"tracked_owners,omitempty"`
	// PreviewBytes is how much of a text, JSON or HTML artifact the UI at
	// GET / loads to preview it. Defaults to DefaultPreviewBytes (1 MiB).
	PreviewBytes int64 `json:"preview_bytes,omitempty"`
}

// WithDefaults returns l with every zero field set to its default.
func (l Limits) WithDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.EventBuffer, DefaultEventBuffer)
	def(&l.SubscriberBuffer, DefaultSubscriberBuffer)
	def(&l.MaxEventStreams, DefaultMaxEventStreams)
	def(&l.TrackedOwners, DefaultTrackedOwners)
	if l.EventKeepAlive <= 0 {
		l.EventKeepAlive = store.Duration(DefaultEventKeepAlive)
	}
	if l.MaxTransformBytes <= 0 {
		l.MaxTransformBytes = DefaultMaxTransformBytes
	}
	if l.PreviewBytes <= 0 {
		l.PreviewBytes = DefaultPreviewBytes
	}
	return l
}

package gateway

import (
	"errors"
	"fmt"
	"time"
)

// Limits bound what one client or upstream can make the gateway hold.
// The zero value means every default; each field's default is named in
// its comment and in the README ("Upstreams and limits").
type Limits struct {
	// MaxMessageBytes caps one message from a client: a stdio line or an
	// HTTP POST body. A larger one is answered with -32600 (and HTTP 413)
	// and never held whole. Defaults to DefaultMaxMessageBytes.
	MaxMessageBytes int64 `json:"max_message_bytes,omitempty"`
	// MaxUpstreamMessageBytes caps one line a stdio upstream writes. A
	// larger one is skipped without being held; the call it answers fails
	// with ErrMessageTooLarge and the connection stays up. Defaults to
	// DefaultMaxUpstreamMessageBytes.
	MaxUpstreamMessageBytes int64 `json:"max_upstream_message_bytes,omitempty"`
	// LargeMessageBytes is the size from which a client's message counts
	// as large. Defaults to DefaultLargeMessageBytes.
	LargeMessageBytes int64 `json:"large_message_bytes,omitempty"`
	// LargeRequestBytes bounds the bytes of large requests handled at once
	// across all clients; more wait for their turn (HTTP: before the body
	// is read; stdio: once as many bytes wait, the next line is not read
	// until one is admitted). Defaults to DefaultLargeRequestBytes; it is
	// raised to MaxMessageBytes when lower.
	LargeRequestBytes int64 `json:"large_request_bytes,omitempty"`
	// WriteBufferBytes is how much output to one stdio peer (a client's
	// stdout, an upstream's stdin) may wait unwritten; writers beyond it
	// wait for the peer to read. Defaults to DefaultWriteBufferBytes.
	WriteBufferBytes int64 `json:"write_buffer_bytes,omitempty"`
	// MaxSessions caps the open streamable-HTTP sessions; at the cap a new
	// initialize ends the least recently used idle session, or gets 503
	// when none is idle. Defaults to DefaultMaxSessions.
	MaxSessions int `json:"max_sessions,omitempty"`
	// SessionIdleTimeout ends an HTTP session that has had no request and
	// no open stream for this long. Defaults to DefaultSessionIdleTimeout.
	SessionIdleTimeout Duration `json:"session_idle_timeout,omitempty"`
	// StderrLinesPerSecond caps how many lines of an upstream's stderr are
	// logged per second; the rest are counted and reported in one
	// "stderr lines suppressed" line. Defaults to DefaultStderrLinesPerSecond.
	StderrLinesPerSecond int `json:"stderr_lines_per_second,omitempty"`
	// ReadHeaderTimeout bounds reading a request's headers on the HTTP
	// listener (slow-loris). Defaults to DefaultReadHeaderTimeout.
	ReadHeaderTimeout Duration `json:"read_header_timeout,omitempty"`
	// ReadTimeout bounds reading a whole HTTP request, body included.
	// Defaults to DefaultReadTimeout.
	ReadTimeout Duration `json:"read_timeout,omitempty"`
	// IdleTimeout closes a keep-alive HTTP connection idle this long.
	// Defaults to DefaultIdleTimeout.
	IdleTimeout Duration `json:"idle_timeout,omitempty"`
	// StopGrace is how long a stdio upstream being stopped has to exit
	// after its stdin is closed (the MCP stdio shutdown) before its
	// process group gets SIGTERM. Defaults to DefaultStopGrace.
	StopGrace Duration `json:"stop_grace,omitempty"`
	// KillGrace is how long a stdio upstream's process group has to exit
	// after SIGTERM before it gets SIGKILL. Defaults to DefaultKillGrace.
	KillGrace Duration `json:"kill_grace,omitempty"`
}

// Defaults of Limits.
const (
	DefaultMaxMessageBytes         = 64 << 20
	DefaultMaxUpstreamMessageBytes = 128 << 20
	DefaultLargeMessageBytes       = 1 << 20
	DefaultLargeRequestBytes       = 128 << 20
	DefaultWriteBufferBytes        = 16 << 20
	DefaultMaxSessions             = 1024
	DefaultSessionIdleTimeout      = 30 * time.Minute
	DefaultStderrLinesPerSecond    = 50
	DefaultReadHeaderTimeout       = 10 * time.Second
	DefaultReadTimeout             = 5 * time.Minute
	DefaultIdleTimeout             = 2 * time.Minute
	DefaultStopGrace               = 2 * time.Second
	DefaultKillGrace               = 3 * time.Second
)

// ErrMessageTooLarge is returned for a message over its size limit.
var ErrMessageTooLarge = errors.New("message too large")

// WithDefaults returns l with every unset field at its default.
func (l Limits) WithDefaults() Limits {
	setInt64 := func(v *int64, d int64) {
		if *v <= 0 {
			*v = d
		}
	}
	setInt64(&l.MaxMessageBytes, DefaultMaxMessageBytes)
	setInt64(&l.MaxUpstreamMessageBytes, DefaultMaxUpstreamMessageBytes)
	setInt64(&l.LargeMessageBytes, DefaultLargeMessageBytes)
	setInt64(&l.LargeRequestBytes, DefaultLargeRequestBytes)
	setInt64(&l.WriteBufferBytes, DefaultWriteBufferBytes)
	l.LargeRequestBytes = max(l.LargeRequestBytes, l.MaxMessageBytes)
	if l.MaxSessions <= 0 {
		l.MaxSessions = DefaultMaxSessions
	}
	if l.StderrLinesPerSecond <= 0 {
		l.StderrLinesPerSecond = DefaultStderrLinesPerSecond
	}
	setDur := func(v *Duration, d time.Duration) {
		if *v <= 0 {
			*v = Duration(d)
		}
	}
	setDur(&l.SessionIdleTimeout, DefaultSessionIdleTimeout)
	setDur(&l.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	setDur(&l.ReadTimeout, DefaultReadTimeout)
	setDur(&l.IdleTimeout, DefaultIdleTimeout)
	setDur(&l.StopGrace, DefaultStopGrace)
	setDur(&l.KillGrace, DefaultKillGrace)
	return l
}

// Validate rejects negative values (zero means the default).
func (l Limits) Validate() error {
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"max_message_bytes", l.MaxMessageBytes}, {"max_upstream_message_bytes", l.MaxUpstreamMessageBytes},
		{"large_message_bytes", l.LargeMessageBytes}, {"large_request_bytes", l.LargeRequestBytes},
		{"write_buffer_bytes", l.WriteBufferBytes}, {"max_sessions", int64(l.MaxSessions)},
		{"stderr_lines_per_second", int64(l.StderrLinesPerSecond)},
		{"session_idle_timeout", int64(l.SessionIdleTimeout)}, {"read_header_timeout", int64(l.ReadHeaderTimeout)},
		{"read_timeout", int64(l.ReadTimeout)}, {"idle_timeout", int64(l.IdleTimeout)},
		{"stop_grace", int64(l.StopGrace)}, {"kill_grace", int64(l.KillGrace)},
	} {
		if f.v < 0 {
			return fmt.Errorf("limits.%s must not be negative", f.name)
		}
	}
	return nil
}

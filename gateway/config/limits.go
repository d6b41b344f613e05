package config

import (
	"fmt"
	"time"

	"github.com/mcpx-dev/mcpx/membudget"
	"github.com/mcpx-dev/mcpx/store"
)

// Limits bound what one client or upstream can make the gateway hold.
// The zero value means every default; each field's default is named in
// its comment, and docs/config.md lists them all.
type Limits struct {
	// MaxMessageBytes caps one message from a client: a stdio line or an
	// HTTP POST body. A larger one is answered with -32600 (and HTTP 413)
	// and never held whole; the session goes on. Defaults to
	// DefaultMaxMessageBytes.
	MaxMessageBytes int64 `json:"max_message_bytes,omitempty"`
	// MaxUpstreamMessageBytes caps one line a stdio upstream writes. A
	// larger one is skipped without being held; the call it answers fails
	// with ErrMessageTooLarge and the connection stays up. Over HTTP it
	// caps a JSON body (counted after gzip is undone; a larger declared
	// Content-Length is refused unread, and no buffer is sized from a
	// declared length), an SSE line and an SSE event's data: the call
	// fails with ErrMessageTooLarge (error -32012, naming the limit), and
	// an SSE stream carrying one is dropped and reopened (the legacy
	// transport's, its connection). Reading one holds at most 1.5 times
	// the cap, a gzip body inflating past it included. Defaults to
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
	// initialize ends the least recently used idle session (its client
	// gets 404 and starts a new one), or gets 503 when none is idle.
	// Defaults to DefaultMaxSessions.
	MaxSessions int `json:"max_sessions,omitempty"`
	// SessionIdleTimeout ends an HTTP session that has had no request and
	// no open stream for this long, as if the client had sent DELETE.
	// Defaults to DefaultSessionIdleTimeout.
	SessionIdleTimeout store.Duration `json:"session_idle_timeout,omitempty"`
	// StderrLinesPerSecond caps how many lines of an upstream's stderr are
	// logged (at info) per second; the rest are counted and reported in
	// one "stderr lines suppressed" line. An exit error still quotes the
	// last 8 lines (4 KiB each at most). Defaults to
	// DefaultStderrLinesPerSecond.
	StderrLinesPerSecond int `json:"stderr_lines_per_second,omitempty"`
	// ReadHeaderTimeout bounds reading a request's headers on the HTTP
	// listener (slow-loris). Defaults to DefaultReadHeaderTimeout.
	ReadHeaderTimeout store.Duration `json:"read_header_timeout,omitempty"`
	// ReadTimeout bounds reading a whole HTTP request, body included.
	// Defaults to DefaultReadTimeout.
	ReadTimeout store.Duration `json:"read_timeout,omitempty"`
	// IdleTimeout closes a keep-alive HTTP connection idle this long.
	// Defaults to DefaultIdleTimeout.
	IdleTimeout store.Duration `json:"idle_timeout,omitempty"`
	// MaxServerRequestsPerCall caps the server-to-client requests
	// (sampling/createMessage, elicitation/create, roots/list) relayed for
	// one client request and not yet answered; past it the upstream's
	// request is answered at once with error -32014 "mcpx: too many
	// outstanding server requests" and never reaches the client. Defaults
	// to DefaultMaxServerRequestsPerCall.
	MaxServerRequestsPerCall int `json:"max_server_requests_per_call,omitempty"`
	// MaxServerRequestsPerUpstream is the same cap over all of one
	// upstream's calls. Defaults to DefaultMaxServerRequestsPerUpstream.
	MaxServerRequestsPerUpstream int `json:"max_server_requests_per_upstream,omitempty"`
	// MaxListenStreamsPerPrincipal caps the open subscriptions/listen
	// streams of one principal (bearer-token identity; unauthenticated
	// clients are one principal); past it a new stream is refused with
	// error -32014 (HTTP 503 and Retry-After). Defaults to
	// DefaultMaxListenStreamsPerPrincipal.
	MaxListenStreamsPerPrincipal int `json:"max_listen_streams_per_principal,omitempty"`
	// MaxListenStreams caps the open subscriptions/listen streams of all
	// clients, refused likewise. Defaults to DefaultMaxListenStreams.
	MaxListenStreams int `json:"max_listen_streams,omitempty"`
	// MaxUpstreamConns caps the connections to one remote upstream: as
	// many for calls, and as many again for what a call may wait on
	// (answers to the upstream's requests, notifications, its GET stream).
	// Past it, requests wait for a connection. Defaults to
	// DefaultMaxUpstreamConns.
	MaxUpstreamConns int `json:"max_upstream_conns,omitempty"`
	// MaxSchemaNodes caps how many subschemas of a tool's outputSchema one
	// value is checked against, counted with multiplicity through $ref,
	// allOf, anyOf, oneOf, not and if/then/else. A schema past it (or one
	// whose $refs loop without descending into the value) is never
	// validated: rewritten results of its tool take the schema_fallback,
	// with a warning in the log. Defaults to DefaultMaxSchemaNodes.
	MaxSchemaNodes int `json:"max_schema_nodes,omitempty"`
	// MaxSchemaWork caps the work of validating one rewritten result:
	// each subschema applied to a value counts 1, plus 1 per 16 bytes of
	// that value, plus 1 per value of its enum. Past it the result is not
	// validated and takes the schema_fallback. Defaults to
	// DefaultMaxSchemaWork.
	MaxSchemaWork int64 `json:"max_schema_work,omitempty"`
	// MaxSchemaDepth caps the nested checks of one validation (the
	// validator's recursion: the value's depth times the subschemas
	// nested in place), which bounds its stack. Past it the result takes
	// the schema_fallback. Defaults to DefaultMaxSchemaDepth.
	MaxSchemaDepth int `json:"max_schema_depth,omitempty"`
	// StopGrace is how long a stdio upstream being stopped has to exit
	// after its stdin is closed (the MCP stdio shutdown) before its
	// process group gets SIGTERM. Defaults to DefaultStopGrace.
	StopGrace store.Duration `json:"stop_grace,omitempty"`
	// KillGrace is how long a stdio upstream's process group has to exit
	// after SIGTERM before it gets SIGKILL. Defaults to DefaultKillGrace.
	KillGrace store.Duration `json:"kill_grace,omitempty"`
	// MaxSessionProcesses caps the processes one "per_session" server
	// (mcpServers.X.mcpx.instances) runs for sessions at once; a session
	// past it gets error -32014 "mcpx: too many upstream processes" for
	// its calls to that server until another session ends. Defaults to
	// DefaultMaxSessionProcesses.
	MaxSessionProcesses int `json:"max_session_processes,omitempty"`
	// MaxUserProcesses caps the processes one "per_user" server (the
	// default for a stdio server when the listener admits several
	// principals) runs for principals at once; a principal past it gets error -32014 "mcpx:
	// too many upstream processes" for its calls to that server until
	// another principal's process stops (idle for
	// UserProcessIdleTimeout). Defaults to DefaultMaxUserProcesses.
	MaxUserProcesses int `json:"max_user_processes,omitempty"`
	// UserProcessIdleTimeout stops a "per_user" server's process for a
	// principal once it has had no call for this long (its state, a
	// browser's pages and logins, goes with it); the principal's next
	// call starts another. Defaults to DefaultUserProcessIdleTimeout.
	UserProcessIdleTimeout store.Duration `json:"user_process_idle_timeout,omitempty"`
	// MaxWorkBytes is the memory the whole process may hold at once for
	// work whose size an input chooses: artifacts_query (every mode; a jq
	// query reserves its child process's max_memory), images decoded for a client's view, files inspected for
	// their summaries. Each reserves what it may hold before it
	// allocates; work that does not fit waits for its turn until its
	// deadline and then fails with a tool error that says so, and work
	// larger than the whole budget is refused at once. Concurrency can no
	// longer multiply a per-call cap past what the machine has. Defaults
	// to a quarter of the memory the process may use (the cgroup's limit,
	// else the machine's), at least 256 MiB (membudget.Default).
	MaxWorkBytes int64 `json:"max_work_bytes,omitempty"`
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
	// A call waits on a person or a model for each request it relays:
	// real servers ask one to a few at a time (go-sdk fans out an
	// input_required's handful), so 16 leaves room and bounds a flood.
	DefaultMaxServerRequestsPerCall = 16
	// 16 calls' worth of outstanding requests on one upstream.
	DefaultMaxServerRequestsPerUpstream = 256
	// A client needs one listen stream, a few at most; 32 covers several
	// clients sharing one identity (or none, on loopback).
	DefaultMaxListenStreamsPerPrincipal = 32
	// As many streams as max_sessions allows sessions: each holds a
	// connection (file descriptor) and a writer goroutine.
	DefaultMaxListenStreams = 1024
	// Connections to one remote upstream for calls (and as many again for
	// answers and notifications): room for 32 concurrent calls, far below
	// the thousands of sockets one flooding upstream could make us open.
	DefaultMaxUpstreamConns = 32
	// Subschemas one value is checked against, with multiplicity: real
	// outputSchemas stay in the tens or hundreds.
	DefaultMaxSchemaNodes = 10000
	// One unit is about 1-2.5 us and up to 1 KB of short-lived allocation
	// in jsonschema-go here, so a result costs at most ~0.5 s and ~250 MB
	// to validate; past it the result takes schema_fallback.
	DefaultMaxSchemaWork = 250000
	// Nested checks of one validation, which bound the validator's stack.
	DefaultMaxSchemaDepth = 20000
	DefaultStopGrace      = 2 * time.Second
	DefaultKillGrace      = 3 * time.Second
	// Processes of one per_session server: a browser server's process
	// tree takes 100-300 MB, so 32 of them fill a small machine.
	DefaultMaxSessionProcesses = 32
	// Processes of one per_user server: as many as per_session's, for
	// the same reason.
	DefaultMaxUserProcesses = 32
	// Longer than a person takes between an agent's turns, so a user's
	// browser and logins survive a pause; short enough that the
	// processes of users who left do not hold max_user_processes' places
	// (and their memory) for long.
	DefaultUserProcessIdleTimeout = 10 * time.Minute
)

// WithDefaults returns l with every unset field at its default.
func (l Limits) WithDefaults() Limits {
	orDefault(&l.MaxMessageBytes, DefaultMaxMessageBytes)
	orDefault(&l.MaxUpstreamMessageBytes, DefaultMaxUpstreamMessageBytes)
	orDefault(&l.LargeMessageBytes, DefaultLargeMessageBytes)
	orDefault(&l.LargeRequestBytes, DefaultLargeRequestBytes)
	orDefault(&l.WriteBufferBytes, DefaultWriteBufferBytes)
	l.LargeRequestBytes = max(l.LargeRequestBytes, l.MaxMessageBytes)
	orDefault(&l.MaxSessions, DefaultMaxSessions)
	orDefault(&l.StderrLinesPerSecond, DefaultStderrLinesPerSecond)
	orDefault(&l.MaxServerRequestsPerCall, DefaultMaxServerRequestsPerCall)
	orDefault(&l.MaxServerRequestsPerUpstream, DefaultMaxServerRequestsPerUpstream)
	orDefault(&l.MaxListenStreamsPerPrincipal, DefaultMaxListenStreamsPerPrincipal)
	orDefault(&l.MaxListenStreams, DefaultMaxListenStreams)
	orDefault(&l.MaxUpstreamConns, DefaultMaxUpstreamConns)
	orDefault(&l.MaxSchemaNodes, DefaultMaxSchemaNodes)
	orDefault(&l.MaxSchemaWork, DefaultMaxSchemaWork)
	orDefault(&l.MaxSchemaDepth, DefaultMaxSchemaDepth)
	orDefault(&l.MaxSessionProcesses, DefaultMaxSessionProcesses)
	orDefault(&l.MaxUserProcesses, DefaultMaxUserProcesses)
	if l.MaxWorkBytes <= 0 {
		l.MaxWorkBytes = membudget.Default()
	}
	orDefault(&l.SessionIdleTimeout, store.Duration(DefaultSessionIdleTimeout))
	orDefault(&l.ReadHeaderTimeout, store.Duration(DefaultReadHeaderTimeout))
	orDefault(&l.ReadTimeout, store.Duration(DefaultReadTimeout))
	orDefault(&l.IdleTimeout, store.Duration(DefaultIdleTimeout))
	orDefault(&l.StopGrace, store.Duration(DefaultStopGrace))
	orDefault(&l.KillGrace, store.Duration(DefaultKillGrace))
	orDefault(&l.UserProcessIdleTimeout, store.Duration(DefaultUserProcessIdleTimeout))
	return l
}

// orDefault sets *v to d when it is unset (zero, or negative: Validate
// refuses those where a config is read).
func orDefault[T ~int | ~int64](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
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
		{"max_server_requests_per_call", int64(l.MaxServerRequestsPerCall)},
		{"max_server_requests_per_upstream", int64(l.MaxServerRequestsPerUpstream)},
		{"max_listen_streams_per_principal", int64(l.MaxListenStreamsPerPrincipal)},
		{"max_listen_streams", int64(l.MaxListenStreams)},
		{"max_upstream_conns", int64(l.MaxUpstreamConns)},
		{"max_schema_nodes", int64(l.MaxSchemaNodes)}, {"max_schema_work", l.MaxSchemaWork}, {"max_schema_depth", int64(l.MaxSchemaDepth)},
		{"stop_grace", int64(l.StopGrace)}, {"kill_grace", int64(l.KillGrace)},
		{"max_session_processes", int64(l.MaxSessionProcesses)},
		{"max_user_processes", int64(l.MaxUserProcesses)},
		{"user_process_idle_timeout", int64(l.UserProcessIdleTimeout)},
		{"max_work_bytes", l.MaxWorkBytes},
	} {
		if f.v < 0 {
			return fmt.Errorf("limits.%s must not be negative", f.name)
		}
	}
	return nil
}

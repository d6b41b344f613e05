package transport

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
	"github.com/mcpx-dev/mcpx/gateway/internal/session"
)

// HTTP is the streamable HTTP transport (MCP 2025-11-25): POST a message
// (the response comes as JSON, or as an SSE stream when the request asks
// for progress), GET the session's SSE stream for notifications
// (resumable with Last-Event-ID from the event store), DELETE to end the
// session; a stateless (2026-07-28) POST is served without a session
// (era_http.go).
type HTTP struct {
	sh  Shared
	o   HTTPConfig
	log hclog.Logger

	mu       sync.Mutex
	sessions map[string]*httpSession
}

// NewHTTP returns the HTTP transport of sh configured by o; idle sessions
// expire until sh.Quit closes.
func NewHTTP(sh Shared, o HTTPConfig) *HTTP {
	srv := &HTTP{sh: sh, o: o, log: o.Logger.Named("http"), sessions: map[string]*httpSession{}}
	go srv.expireIdle()
	return srv
}

// Sessions is how many sessions are open.
func (srv *HTTP) Sessions() int {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return len(srv.sessions)
}

// Busy reports whether the session id has a request or stream in
// progress.
func (srv *HTTP) Busy(id string) bool {
	srv.mu.Lock()
	hs := srv.sessions[id]
	srv.mu.Unlock()
	if hs == nil {
		return false
	}
	_, idle := hs.idleSince()
	return !idle
}

// httpSession is a Session plus its event store: every SSE event gets an
// id "{stream}-{seq}" and is kept (up to EventBuffer) for replay.
type httpSession struct {
	s *session.Session

	mu      sync.Mutex
	events  []sseEvent
	seq     int64
	streams int64
	wake    chan struct{} // closed and renewed on every event
	getLive bool
	busy    int       // requests and streams in progress
	last    time.Time // when busy last went to 0, or the session began
}

// enter marks a request or stream of the session as running; leave, as
// ended.
func (h *httpSession) enter() {
	h.mu.Lock()
	h.busy++
	h.mu.Unlock()
}

func (h *httpSession) leave() {
	h.mu.Lock()
	h.busy--
	h.last = time.Now()
	h.mu.Unlock()
}

// idleSince returns when the session became idle, and false while it is
// busy.
func (h *httpSession) idleSince() (time.Time, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last, h.busy == 0
}

type sseEvent struct {
	stream int64 // 0: the standalone GET stream
	seq    int64
	data   []byte
}

func (h *httpSession) add(stream int64, data []byte, limit int) sseEvent {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq++
	ev := sseEvent{stream: stream, seq: h.seq, data: data}
	h.events = append(h.events, ev)
	if len(h.events) > limit {
		h.events = slices.Delete(h.events, 0, len(h.events)-limit)
	}
	close(h.wake)
	h.wake = make(chan struct{})
	return ev
}

// since returns the events of stream after seq, and the channel that the
// next event closes.
func (h *httpSession) since(stream, seq int64) ([]sseEvent, <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []sseEvent
	for _, ev := range h.events {
		if ev.stream == stream && ev.seq > seq {
			out = append(out, ev)
		}
	}
	return out, h.wake
}

// expireIdle ends sessions idle for longer than SessionIdleTimeout
// (clients that never send DELETE), until the gateway closes.
func (srv *HTTP) expireIdle() {
	every := min(max(srv.o.SessionIdleTimeout/4, 10*time.Millisecond), time.Minute)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-srv.sh.Quit:
			return
		case now := <-t.C:
			var expired []*httpSession
			srv.mu.Lock()
			for id, hs := range srv.sessions {
				if since, idle := hs.idleSince(); idle && now.Sub(since) > srv.o.SessionIdleTimeout {
					delete(srv.sessions, id)
					expired = append(expired, hs)
				}
			}
			srv.mu.Unlock()
			for _, hs := range expired {
				srv.log.Debug("session expired", "session", hs.s.ID, "idle_timeout", srv.o.SessionIdleTimeout)
				hs.s.Close()
			}
		}
	}
}

// addSession registers a new session; at MaxSessions it first ends the
// least recently used idle one, and fails when none is idle.
func (srv *HTTP) addSession(hs *httpSession) bool {
	srv.mu.Lock()
	var evicted *httpSession
	if len(srv.sessions) >= srv.o.MaxSessions {
		var oldest time.Time
		for _, o := range srv.sessions {
			if since, idle := o.idleSince(); idle && (evicted == nil || since.Before(oldest)) {
				evicted, oldest = o, since
			}
		}
		if evicted == nil {
			srv.mu.Unlock()
			return false
		}
		delete(srv.sessions, evicted.s.ID)
	}
	srv.sessions[hs.s.ID] = hs
	srv.mu.Unlock()
	if evicted != nil {
		srv.log.Info("session limit reached; ended the least recently used idle session", "session", evicted.s.ID, "max_sessions", srv.o.MaxSessions)
		evicted.s.Close()
	}
	return true
}

func (srv *HTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if a := srv.o.Auth; a != nil && !a.CheckHost(w, r) {
		return
	}
	if !srv.originAllowed(r) {
		http.Error(w, "origin not allowed", http.StatusForbidden)
		return
	}
	user, ok := srv.authenticate(w, r)
	if !ok {
		return
	}
	if r.Header.Get("traceparent") != "" {
		r = r.WithContext(session.WithHeaderTrace(r.Context(), r.Header))
	}
	if r.Method != http.MethodPost && rejectStatelessVerb(w, r) {
		return
	}
	switch r.Method {
	case http.MethodPost:
		srv.post(w, r, user)
	case http.MethodGet:
		srv.get(w, r, user)
	case http.MethodDelete:
		hs, code := srv.lookup(r, user)
		if hs == nil {
			w.WriteHeader(code)
			return
		}
		srv.mu.Lock()
		delete(srv.sessions, hs.s.ID)
		srv.mu.Unlock()
		hs.s.Close()
		w.WriteHeader(http.StatusNoContent)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// originAllowed implements the DNS-rebinding protection the MCP spec asks
// for: a browser Origin must be allowed explicitly, or be loopback.
func (srv *HTTP) originAllowed(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	if slices.Contains(srv.o.AllowedOrigins, origin) || slices.Contains(srv.o.AllowedOrigins, "*") {
		return true
	}
	if len(srv.o.AllowedOrigins) > 0 {
		return false
	}
	u, err := url.Parse(origin)
	if err != nil {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// lookup finds the request's session; a session belongs to the session.Identity
// that opened it.
func (srv *HTTP) lookup(r *http.Request, user session.Identity) (*httpSession, int) {
	id := r.Header.Get("Mcp-Session-Id")
	if id == "" {
		return nil, http.StatusBadRequest
	}
	srv.mu.Lock()
	hs := srv.sessions[id]
	srv.mu.Unlock()
	if hs == nil {
		return nil, http.StatusNotFound
	}
	if !hs.s.Identity().Same(user) {
		return nil, http.StatusForbidden
	}
	return hs, 0
}

func (srv *HTTP) post(w http.ResponseWriter, r *http.Request, user session.Identity) {
	body, release, ok := srv.readBody(w, r)
	if !ok {
		return
	}
	defer release()
	m, errResp := jsonrpc.ParseClient(body)
	if errResp != nil {
		writeJSON(w, http.StatusBadRequest, errResp)
		return
	}
	if isStatelessHTTP(r, m) {
		srv.postStateless(w, r, user, m)
		return
	}
	var hs *httpSession
	if m.Method == "initialize" {
		hs = &httpSession{wake: make(chan struct{}), last: time.Now()}
		hs.s = session.New(srv.sh.Rooms, user, func(msg []byte) { hs.add(0, msg, srv.o.EventBuffer) }, false)
		if !srv.addSession(hs) {
			hs.s.Close()
			writeJSON(w, http.StatusServiceUnavailable, jsonrpc.EncodeError(m.ID, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("too many sessions (limits.max_sessions %d), none idle: try again later", srv.o.MaxSessions)}))
			return
		}
		w.Header().Set("Mcp-Session-Id", hs.s.ID)
	} else {
		var code int
		if hs, code = srv.lookup(r, user); hs == nil {
			msg := "missing Mcp-Session-Id"
			if code == http.StatusNotFound {
				msg = "unknown session"
			}
			http.Error(w, msg, code)
			return
		}
	}
	hs.enter()
	defer hs.leave()
	if !m.IsRequest() {
		hs.s.HandleMessage(r.Context(), m, nil)
		w.WriteHeader(http.StatusAccepted)
		return
	}
	acceptsSSE := strings.Contains(r.Header.Get("Accept"), "text/event-stream")
	wantsStream := acceptsSSE && gjson.GetBytes(m.Params, "_meta.progressToken").Exists()
	if acceptsSSE && !wantsStream {
		ls := &lazyStream{srv: srv, w: w, hs: hs}
		ls.finish(hs.s.HandleMessage(r.Context(), m, ls.emit))
		return
	}
	if !wantsStream {
		resp := hs.s.HandleMessage(r.Context(), m, nil)
		writeJSON(w, http.StatusOK, resp)
		return
	}
	srv.stream(w, r, hs, m)
}

// readBody reads a POST body of at most MaxBody bytes. A large body
// (from Limits.LargeMessageBytes) first takes its share of
// Limits.LargeRequestBytes, held until release, so that large requests
// at once cannot hold more than that; a body of unknown length takes
// MaxBody when it turns out large and gives back the rest once read. On
// failure readBody has answered (413 with a JSON-RPC error for a body
// over the limit).
func (srv *HTTP) readBody(w http.ResponseWriter, r *http.Request) (body []byte, release func(), ok bool) {
	tooLarge := func() {
		writeJSON(w, http.StatusRequestEntityTooLarge, jsonrpc.EncodeError(nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "invalid request: " + jsonrpc.TooLargeError(srv.o.MaxBody, "limits.max_message_bytes").Error()}))
	}
	if r.ContentLength > srv.o.MaxBody {
		tooLarge()
		return nil, nil, false
	}
	var held int64
	release = func() {
		if held > 0 {
			srv.sh.Large.Release(held)
			held = 0
		}
	}
	acquire := func(n int64) bool {
		if err := srv.sh.Large.Acquire(r.Context(), n); err != nil {
			return false
		}
		held = n
		return true
	}
	large := srv.sh.Limits.LargeMessageBytes
	if r.ContentLength >= large && !acquire(r.ContentLength) {
		return nil, nil, false
	}
	lr := io.LimitReader(r.Body, srv.o.MaxBody+1)
	var err error
	if r.ContentLength < 0 {
		// unknown length: read up to the large size, then take the
		// worst case before reading on
		body, err = io.ReadAll(io.LimitReader(lr, large))
		if err == nil && int64(len(body)) == large {
			if !acquire(srv.o.MaxBody) {
				return nil, nil, false
			}
			var rest []byte
			rest, err = io.ReadAll(lr)
			body = append(body, rest...)
		}
	} else {
		body, err = io.ReadAll(lr)
	}
	if err != nil {
		release()
		http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
		return nil, nil, false
	}
	if int64(len(body)) > srv.o.MaxBody {
		release()
		tooLarge()
		return nil, nil, false
	}
	if held > int64(len(body)) && r.ContentLength < 0 {
		srv.sh.Large.Release(held - int64(len(body)))
		held = int64(len(body))
	}
	return body, release, true
}

func writeJSON(w http.ResponseWriter, code int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

// stream answers a request as an SSE stream: its related notifications
// (progress) in order, then the response. Every event is kept in the event
// store, so a client that lost the connection replays it with GET and
// Last-Event-ID.
func (srv *HTTP) stream(w http.ResponseWriter, r *http.Request, hs *httpSession, m *jsonrpc.Message) {
	hs.mu.Lock()
	hs.streams++
	stream := hs.streams
	hs.mu.Unlock()
	fl, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	var wmu sync.Mutex
	gone := false
	emit := func(msg []byte) {
		ev := hs.add(stream, msg, srv.o.EventBuffer)
		wmu.Lock()
		defer wmu.Unlock()
		if gone {
			return
		}
		if err := writeEvent(w, ev); err != nil {
			gone = true
			return
		}
		if fl != nil {
			fl.Flush()
		}
	}
	// The call outlives a dropped stream only as long as the session: a
	// client that resumes gets the rest from the event store.
	ctx := context.WithoutCancel(r.Context())
	resp := hs.s.HandleMessage(ctx, m, emit)
	emit(resp)
}

func writeEvent(w io.Writer, ev sseEvent) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "id: %d-%d\nevent: message\ndata: ", ev.stream, ev.seq)
	b.Write(ev.data)
	b.WriteString("\n\n")
	_, err := w.Write(b.Bytes())
	return err
}

// get serves the session's standalone SSE stream, or resumes a stream
// from Last-Event-ID.
func (srv *HTTP) get(w http.ResponseWriter, r *http.Request, user session.Identity) {
	if !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		http.Error(w, "GET needs Accept: text/event-stream", http.StatusNotAcceptable)
		return
	}
	hs, code := srv.lookup(r, user)
	if hs == nil {
		http.Error(w, "unknown or missing session", code)
		return
	}
	hs.enter()
	defer hs.leave()
	var stream, after int64
	if last := r.Header.Get("Last-Event-ID"); last != "" {
		a, b, ok := strings.Cut(last, "-")
		s1, e1 := strconv.ParseInt(a, 10, 64)
		s2, e2 := strconv.ParseInt(b, 10, 64)
		if !ok || e1 != nil || e2 != nil {
			http.Error(w, "bad Last-Event-ID", http.StatusBadRequest)
			return
		}
		stream, after = s1, s2
	}
	if stream == 0 {
		hs.mu.Lock()
		if hs.getLive {
			hs.mu.Unlock()
			http.Error(w, "the session already has a GET stream", http.StatusConflict)
			return
		}
		hs.getLive = true
		hs.mu.Unlock()
		defer func() {
			hs.mu.Lock()
			hs.getLive = false
			hs.mu.Unlock()
		}()
	}
	fl, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if fl != nil {
		fl.Flush()
	}
	tick := time.NewTicker(srv.o.KeepAlive)
	defer tick.Stop()
	for {
		evs, wake := hs.since(stream, after)
		for _, ev := range evs {
			if err := writeEvent(w, ev); err != nil {
				return
			}
			after = ev.seq
		}
		if fl != nil && len(evs) > 0 {
			fl.Flush()
		}
		if stream != 0 && len(evs) > 0 && isResponse(evs[len(evs)-1].data) {
			return // a replayed request stream ends with its response
		}
		select {
		case <-wake:
		case <-tick.C:
			if _, err := io.WriteString(w, ": keepalive\n\n"); err != nil {
				return
			}
			if fl != nil {
				fl.Flush()
			}
		case <-r.Context().Done():
			return
		}
		if hs.s.Closed() {
			return
		}
	}
}

func isResponse(b []byte) bool {
	return gjson.GetBytes(b, "id").Exists() && !gjson.GetBytes(b, "method").Exists()
}

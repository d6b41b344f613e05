package transport

import (
	"context"
	"io"
	"net/http"
	"sync"
	"time"
)

// lazyStream answers a POSTed request as plain JSON unless something
// related to it must reach the client before the response (a relayed
// server-to-client request such as elicitation/create, or progress):
// then the response turns into an SSE stream, its events kept in the
// session's event store like those of stream. A client that accepts
// text/event-stream gets this for every request.
type lazyStream struct {
	srv *HTTP
	w   http.ResponseWriter
	hs  *httpSession

	mu     sync.Mutex
	stream int64 // the SSE stream's number; 0 until it started
	gone   bool  // the client stopped reading
	done   bool  // the response was written
	seq    int64 // events of a stream without an event store
}

// emit sends a message related to the request, starting the SSE stream
// on the first one. After the response it goes to the session's own
// stream.
func (l *lazyStream) emit(msg []byte) {
	l.mu.Lock()
	if l.done {
		l.mu.Unlock()
		if l.hs != nil {
			l.hs.s.Send(msg)
		}
		return
	}
	defer l.mu.Unlock()
	if l.stream == 0 {
		l.stream = -1 // a stateless request's stream: no event store
		if l.hs != nil {
			l.hs.mu.Lock()
			l.hs.streams++
			l.stream = l.hs.streams
			l.hs.mu.Unlock()
		}
		l.w.Header().Set("Content-Type", "text/event-stream")
		l.w.Header().Set("Cache-Control", "no-cache")
		l.w.WriteHeader(http.StatusOK)
	}
	l.write(msg)
}

// write stores and sends one event; l.mu is held.
func (l *lazyStream) write(msg []byte) {
	var ev sseEvent
	if l.hs != nil {
		ev = l.hs.add(l.stream, msg, l.srv.o.EventBuffer)
	} else {
		l.seq++
		ev = sseEvent{seq: l.seq, data: msg}
	}
	if l.gone {
		return
	}
	if err := writeEvent(l.w, ev); err != nil {
		l.gone = true
		return
	}
	if fl, ok := l.w.(http.Flusher); ok {
		fl.Flush()
	}
}

// finish writes the response: the last event of a started stream, else
// a JSON body.
func (l *lazyStream) finish(resp []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.done = true
	if l.stream != 0 {
		l.write(resp)
		return
	}
	writeJSON(l.w, http.StatusOK, resp)
}

// keepAlive writes an SSE comment every interval while the stream is open
// and idle-prone (a subscriptions/listen stream can be quiet for hours,
// and proxies cut silent responses), until ctx ends or the response is
// written.
func (l *lazyStream) keepAlive(ctx context.Context, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		l.mu.Lock()
		if l.done || l.gone {
			l.mu.Unlock()
			return
		}
		if l.stream != 0 {
			if _, err := io.WriteString(l.w, ": keepalive\n\n"); err != nil {
				l.gone = true
			} else if fl, ok := l.w.(http.Flusher); ok {
				fl.Flush()
			}
		}
		l.mu.Unlock()
	}
}

package upstreamhttp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strconv"
	"time"
)

// event is one dispatched server-sent event.
type event struct {
	name string // the event field; "message" when the server sent none
	data []byte // the data lines joined by "\n"
}

// eventReader reads the server-sent events framing (WHATWG HTML, "Server-sent
// events", "Interpreting an event stream"): lines ending in "\n", "\r\n"
// or "\r"; "field: value" lines, a colon-led line a comment; a blank line
// dispatches the event being built. Only events with data are returned.
type eventReader struct {
	br *bufio.Reader

	name  string
	data  []byte
	lines int    // data lines in data
	idBuf string // the last event ID buffer

	// lastID is the last event ID of the stream as of the last dispatch:
	// what a reconnection sends as Last-Event-ID. hasID: the server set one.
	lastID string
	hasID  bool
	// retry is the reconnection time the server asked for, if hasRetry.
	retry    time.Duration
	hasRetry bool
}

// sseReadBuffer is the reader's buffer: large enough that a typical event
// is read in one call, while an event of any size still is.
const sseReadBuffer = 32 << 10

func newEventReader(r io.Reader) *eventReader {
	return &eventReader{br: bufio.NewReaderSize(r, sseReadBuffer)}
}

// next returns the next event that has data. At the end of the stream it
// dispatches an event still being built (servers that close the stream
// right after the last data line lose nothing) and then returns io.EOF;
// any other read error is returned as it is.
func (r *eventReader) next() (event, error) {
	for {
		line, err := r.br.ReadBytes('\n')
		if len(line) > 0 {
			line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
			// A lone "\r" also ends a line. JSON never holds a raw CR, so
			// splitting on one cannot cut a message.
			for {
				i := bytes.IndexByte(line, '\r')
				if i < 0 {
					break
				}
				if ev, ok := r.field(line[:i]); ok {
					r.pushBack(line[i+1:])
					return ev, nil
				}
				line = line[i+1:]
			}
			if ev, ok := r.field(line); ok {
				return ev, nil
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				if ev, ok := r.dispatch(); ok {
					return ev, nil
				}
			}
			return event{}, err
		}
	}
}

// pushBack keeps the rest of a line split at a lone "\r" for the next
// call: a rare framing, so a plain re-read through a MultiReader is fine.
func (r *eventReader) pushBack(rest []byte) {
	if len(rest) == 0 {
		return
	}
	rest = append(append([]byte(nil), rest...), '\n')
	r.br = bufio.NewReaderSize(io.MultiReader(bytes.NewReader(rest), r.br), sseReadBuffer)
}

// field processes one line; a blank line dispatches, reporting the event
// when it has data.
func (r *eventReader) field(line []byte) (event, bool) {
	if len(line) == 0 {
		return r.dispatch()
	}
	if line[0] == ':' {
		return event{}, false // a comment (keep-alives are sent as these)
	}
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		value = bytes.TrimPrefix(value, []byte(" "))
	}
	switch string(name) {
	case "event":
		r.name = string(value)
	case "data":
		if r.lines == 0 && r.data == nil {
			// ReadBytes gave this line its own memory: keep it, sparing a
			// copy of a large single-line message.
			// Capped, so that appending never writes into the line.
			r.data = value[:len(value):len(value)]
		} else {
			r.data = append(append(r.data, '\n'), value...)
		}
		r.lines++
	case "id":
		if bytes.IndexByte(value, 0) < 0 {
			r.idBuf = string(value)
			r.hasID = true
		}
	case "retry":
		if n, err := strconv.ParseUint(string(value), 10, 31); err == nil && len(bytes.Trim(value, "0123456789")) == 0 {
			r.retry, r.hasRetry = time.Duration(n)*time.Millisecond, true
		}
	}
	return event{}, false
}

// dispatch ends the event being built; it reports it when it has data.
func (r *eventReader) dispatch() (event, bool) {
	r.lastID = r.idBuf
	ev := event{name: r.name, data: r.data}
	had := r.lines > 0
	r.name, r.data, r.lines = "", nil, 0
	if !had {
		return event{}, false
	}
	if ev.name == "" {
		ev.name = "message"
	}
	return ev, true
}

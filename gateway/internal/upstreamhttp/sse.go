package upstreamhttp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strconv"
	"time"

	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
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
// A line, or an event's data, over the message cap is an error (wrapping
// ErrMessageTooLarge): the stream is to be dropped, the reader having
// held no more than the cap of it.
type eventReader struct {
	br  *bufio.Reader
	lim limits

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

func newEventReader(r io.Reader, lim limits) *eventReader {
	return &eventReader{br: bufio.NewReaderSize(r, sseReadBuffer), lim: lim}
}

// next returns the next event that has data. At the end of the stream it
// dispatches an event still being built (servers that close the stream
// right after the last data line lose nothing) and then returns io.EOF;
// any other read error is returned as it is.
func (r *eventReader) next() (event, error) {
	for {
		line, err := r.readLine()
		if errors.Is(err, ErrMessageTooLarge) {
			r.name, r.data, r.lines = "", nil, 0
			return event{}, err
		}
		if len(line) > 0 {
			line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
			// A lone "\r" also ends a line. JSON never holds a raw CR, so
			// splitting on one cannot cut a message.
			for {
				i := bytes.IndexByte(line, '\r')
				if i < 0 {
					break
				}
				if ev, ok, err := r.field(line[:i]); ok || err != nil {
					r.pushBack(line[i+1:])
					return ev, err
				}
				line = line[i+1:]
			}
			if ev, ok, err := r.field(line); ok || err != nil {
				return ev, err
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

// lineSlack is what a line may hold beyond the message cap: its field
// name and its end, so that a data line carrying a message of the cap
// fits.
const lineSlack = 64

// readLine reads up to and including the next "\n" into memory of its own,
// or fails with ErrMessageTooLarge past the message cap, having read no
// further. A line read in one piece gets memory of its size; a longer one
// grows as readBody's body does (jsonrpc.GrowCapped).
func (r *eventReader) readLine() ([]byte, error) {
	var line []byte
	for {
		frag, err := r.br.ReadSlice('\n')
		if int64(len(line))+int64(len(frag)) > r.lim.maxMessage+lineSlack {
			return nil, r.lim.tooLarge("an SSE line")
		}
		if line == nil {
			line = append(line, frag...)
		} else {
			line = jsonrpc.AppendCapped(line, frag, r.lim.maxMessage+lineSlack)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
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
// when it has data. Data past the message cap is an error.
func (r *eventReader) field(line []byte) (event, bool, error) {
	if len(line) == 0 {
		ev, ok := r.dispatch()
		return ev, ok, nil
	}
	if line[0] == ':' {
		return event{}, false, nil // a comment (keep-alives are sent as these)
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
		if r.lines > 0 && int64(len(r.data))+1+int64(len(value)) > r.lim.maxMessage || int64(len(value)) > r.lim.maxMessage {
			r.name, r.data, r.lines = "", nil, 0
			return event{}, false, r.lim.tooLarge("an SSE event's data")
		}
		if r.lines == 0 && r.data == nil {
			// readLine gave this line its own memory: keep it, sparing a
			// copy of a large single-line message.
			// Capped, so that appending never writes into the line.
			r.data = value[:len(value):len(value)]
		} else {
			r.data = jsonrpc.GrowCapped(r.data, len(r.data)+1+len(value), r.lim.maxMessage)
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
	return event{}, false, nil
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

package upstreamhttp

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/mcpx-dev/mcpx/internal/jsonstr"
	"github.com/tidwall/gjson"
)

// ResponseError is a JSON-RPC error object: what a call's error response
// carries, and what a Handlers.Request error is sent back as when it is
// one (any other error goes back as an internal error, -32603).
type ResponseError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Error returns the code and message.
func (e *ResponseError) Error() string {
	return fmt.Sprintf("json-rpc error %d: %s", e.Code, e.Message)
}

// codeInternalError is JSON-RPC's internal error.
const codeInternalError = -32603

// message is one JSON-RPC message from the server, its parts kept raw
// (sub-slices of the bytes it was parsed from).
type message struct {
	id     json.RawMessage // nil for a notification
	method string
	params json.RawMessage
	result json.RawMessage
	err    *ResponseError
}

func (m *message) isRequest() bool      { return m.method != "" && m.id != nil }
func (m *message) isNotification() bool { return m.method != "" && m.id == nil }
func (m *message) isResponse() bool     { return m.method == "" && m.id != nil }

// errNotMessage is why bytes from the server are not a JSON-RPC message.
var errNotMessage = errors.New("not a JSON-RPC message")

// parseMessage decodes one message from the server.
func parseMessage(b []byte) (*message, error) {
	if !gjson.ValidBytes(b) {
		return nil, fmt.Errorf("%w: invalid JSON: %q", errNotMessage, head(b))
	}
	r := gjson.ParseBytes(b)
	if !r.IsObject() {
		return nil, fmt.Errorf("%w: %q", errNotMessage, head(b))
	}
	m := &message{}
	var err error
	r.ForEach(func(k, v gjson.Result) bool {
		raw := sub(b, v)
		switch k.Str {
		case "id":
			if v.Type != gjson.Null {
				m.id = raw
			}
		case "method":
			m.method = v.Str
		case "params":
			m.params = raw
		case "result":
			m.result = raw
		case "error":
			e := &ResponseError{}
			if uerr := json.Unmarshal(raw, e); uerr != nil {
				err = fmt.Errorf("%w: error object: %w", errNotMessage, uerr)
				return false
			}
			m.err = e
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	if m.method == "" && m.id == nil {
		if m.err != nil {
			// An error response with a null id: the server could not
			// read a request (or rejected the session); it answers
			// whichever request it came back to.
			return m, nil
		}
		return nil, fmt.Errorf("%w: neither method nor id: %q", errNotMessage, head(b))
	}
	return m, nil
}

// sub returns v's raw bytes as a sub-slice of b when gjson knows its
// offset, sparing a copy of a large result.
func sub(b []byte, v gjson.Result) json.RawMessage {
	if v.Index > 0 && v.Index+len(v.Raw) <= len(b) {
		return json.RawMessage(b[v.Index : v.Index+len(v.Raw) : v.Index+len(v.Raw)])
	}
	return json.RawMessage(v.Raw)
}

// head is the start of b, for error messages.
func head(b []byte) string {
	const n = 120
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

// encodeRequest renders a request, or with id 0 a notification. params
// go out as they are (the caller's bytes are JSON; copying a large
// argument through a re-encoding would cost its size again).
func encodeRequest(id int64, method string, params json.RawMessage) []byte {
	b := make([]byte, 0, 48+len(method)+len(params))
	b = append(b, `{"jsonrpc":"2.0"`...)
	if id != 0 {
		b = append(b, `,"id":`...)
		b = strconv.AppendInt(b, id, 10)
	}
	b = append(b, `,"method":`...)
	b = jsonstr.AppendString(b, method)
	if len(params) > 0 {
		b = append(b, `,"params":`...)
		b = append(b, params...)
	}
	return append(b, '}')
}

// encodeResponse renders the answer to a server-to-client request: result,
// or err as a JSON-RPC error.
func encodeResponse(id json.RawMessage, result json.RawMessage, err error) []byte {
	m := struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  json.RawMessage `json:"result,omitempty"`
		Error   *ResponseError  `json:"error,omitempty"`
	}{JSONRPC: "2.0", ID: id}
	switch {
	case err != nil:
		var re *ResponseError
		if !errors.As(err, &re) {
			re = &ResponseError{Code: codeInternalError, Message: err.Error()}
		}
		m.Error = re
	case len(result) == 0:
		m.Result = json.RawMessage("{}")
	default:
		m.Result = result
	}
	b, merr := json.Marshal(m)
	if merr != nil {
		m.Result, m.Error = nil, &ResponseError{Code: codeInternalError, Message: "the client's answer is not JSON: " + merr.Error()}
		b, _ = json.Marshal(m)
	}
	return b
}

// idKey is a request id as a map key: the id's JSON text ("7", "\"a\"").
func idKey(id int64) string { return strconv.FormatInt(id, 10) }

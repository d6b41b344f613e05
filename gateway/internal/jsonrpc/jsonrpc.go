// Package jsonrpc reads and writes the JSON-RPC 2.0 messages MCP is made
// of, their parts kept raw: sub-slices of the bytes they were parsed from,
// so a large result is neither copied nor decoded on its way through. It
// is the one parser of the gateway and of its HTTP upstream transports.
package jsonrpc

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/internal/jsonstr"
	"github.com/mcpx-dev/mcpx/internal/jsonwalk"
)

// Error is a JSON-RPC error object.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Error returns the code and message.
func (e *Error) Error() string { return fmt.Sprintf("json-rpc error %d: %s", e.Code, e.Message) }

// Message is one JSON-RPC message.
type Message struct {
	ID     json.RawMessage // nil for a notification, and for an id of null
	IDType gjson.Type      // the id's JSON type, when HasID
	HasID  bool            // an "id" member is present (even null)
	// IDGuessed: the message is invalid JSON and ID was read from it
	// anyway. It may fail a pending request of ours that the broken
	// response answers; it must never be echoed as the id of an error
	// answer (JSON-RPC 2.0: a parse error's id is null).
	IDGuessed bool
	JSONRPC   string // the "jsonrpc" member; "" when absent
	Method    string
	Params    json.RawMessage
	Result    json.RawMessage
	Error     *Error
}

// IsRequest reports whether m is a request: a method and an id.
func (m *Message) IsRequest() bool { return m.Method != "" && m.ID != nil }

// IsNotification reports whether m is a notification: a method, no id.
func (m *Message) IsNotification() bool { return m.Method != "" && m.ID == nil }

// IsResponse reports whether m is a response: an id, no method.
func (m *Message) IsResponse() bool { return m.Method == "" && m.ID != nil }

// Errors of Parse, worded for whichever side sent the message.
var (
	ErrInvalidJSON = errors.New("invalid JSON")
	ErrNotObject   = errors.New("a JSON-RPC message must be an object")
	ErrBatch       = errors.New("JSON-RPC batches are not supported (MCP removed them in 2025-06-18): send one message at a time")
	// ErrNoMethodNorID: the object has neither; Parse returns the message
	// too (an error response with a null id is one).
	ErrNoMethodNorID = errors.New("json-rpc message has neither method nor id")
	// ErrTooDeep: the message nests deeper than MaxDepth levels.
	ErrTooDeep = fmt.Errorf("a JSON-RPC message may nest at most %d levels of objects and arrays", MaxDepth)
)

// MaxDepth is the deepest nesting of objects and arrays a message may
// have. gjson, which reads every message, recurses once per level: a
// 64 MB line of "[" took its validator past Go's stack limit, which
// ends the process. Ten times the engine's own depth limit, so that a
// result the engine stores whole for its depth still arrives.
const MaxDepth = 100_000

// Parse decodes one message. It validates the JSON first; for invalid
// JSON it still returns the message with the id it can recover (marked
// IDGuessed), so the caller can fail the request it answers.
func Parse(b []byte) (*Message, error) {
	if !jsonwalk.DepthWithin(b, MaxDepth) {
		return &Message{}, fmt.Errorf("%w: %w", ErrInvalidJSON, ErrTooDeep)
	}
	if !gjson.ValidBytes(b) {
		m := &Message{}
		// gjson reads what is not JSON leniently ("0000" as a number):
		// an id the answer could not carry as JSON is no id.
		if id := gjson.GetBytes(b, "id"); id.Exists() && (id.Type == gjson.Number || id.Type == gjson.String) && json.Valid([]byte(id.Raw)) {
			m.ID, m.IDGuessed = json.RawMessage(id.Raw), true
		}
		return m, fmt.Errorf("%w: %q", ErrInvalidJSON, Head(b, 120))
	}
	r := ParseView(b)
	if !r.IsObject() {
		if r.IsArray() {
			return nil, ErrBatch
		}
		return nil, fmt.Errorf("%w: %q", ErrNotObject, Head(b, 120))
	}
	m := &Message{}
	var err error
	r.ForEach(func(k, v gjson.Result) bool {
		raw := Sub(b, v)
		switch k.Str {
		case "id":
			m.HasID, m.IDType = true, v.Type
			if v.Type != gjson.Null {
				m.ID = raw
			}
		case "jsonrpc":
			m.JSONRPC = strings.Clone(v.Str) // not b's bytes, which a transform may reuse
		case "method":
			if v.Type != gjson.String {
				err = errors.New("json-rpc method is not a string")
				return false
			}
			m.Method = strings.Clone(v.Str)
		case "params":
			m.Params = raw
		case "result":
			m.Result = raw
		case "error":
			e := &Error{}
			if uerr := json.Unmarshal(raw, e); uerr != nil {
				err = fmt.Errorf("json-rpc error object: %w", uerr)
				return false
			}
			m.Error = e
		}
		return true
	})
	if err != nil {
		return m, err
	}
	if m.Method == "" && m.ID == nil {
		return m, ErrNoMethodNorID
	}
	return m, nil
}

// ParseView is gjson.ParseBytes without its copy of b (a message of
// megabytes is copied whole there): the Result's strings may alias b,
// which must not change while they are in use.
func ParseView(b []byte) gjson.Result {
	if len(b) == 0 {
		return gjson.Result{}
	}
	return gjson.Parse(unsafe.String(unsafe.SliceData(b), len(b)))
}

// Sub returns v's raw bytes as a sub-slice of b when gjson knows its
// offset, sparing a copy of a large value.
func Sub(b []byte, v gjson.Result) json.RawMessage {
	if v.Index > 0 && v.Index+len(v.Raw) <= len(b) {
		return json.RawMessage(b[v.Index : v.Index+len(v.Raw) : v.Index+len(v.Raw)])
	}
	return json.RawMessage(v.Raw)
}

// Head is the start of b, at most n bytes, for error messages.
func Head(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

// EncodeRequest renders a request or, with id nil, a notification.
// params go out as they are: they are JSON already, and re-encoding a
// large argument would cost its size again.
func EncodeRequest(id json.RawMessage, method string, params json.RawMessage) []byte {
	b := make([]byte, 0, 48+len(method)+len(params))
	b = append(b, `{"jsonrpc":"2.0"`...)
	if id != nil {
		b = append(b, `,"id":`...)
		b = append(b, id...)
	}
	b = append(b, `,"method":`...)
	b = jsonstr.AppendString(b, method)
	if len(params) > 0 {
		b = append(b, `,"params":`...)
		b = append(b, params...)
	}
	return append(b, '}')
}

// MetaPath is the gjson path of a _meta key of params (MCP's keys hold
// dots, which gjson paths escape).
func MetaPath(key string) string { return "_meta." + strings.ReplaceAll(key, ".", `\.`) }

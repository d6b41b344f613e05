package jsonrpc

import (
	"encoding/json"
	"errors"

	"github.com/tidwall/gjson"
)

// ParseClient parses a message from a client and checks it as JSON-RPC
// 2.0 asks: invalid JSON is a parse error (-32700); a batch, a "jsonrpc"
// other than "2.0", an id that is not a string or a number, a method that
// is not a string: invalid request (-32600). On failure it returns the
// error response to send, whose id is the request's only when that id is
// valid. A parse error's id is always null: JSON-RPC 2.0 asks for null
// when the id cannot be determined, and an id read from broken JSON is a
// guess (`{"id":7,"x":{"id":8` names either).
func ParseClient(b []byte) (*Message, []byte) {
	m, err := Parse(b)
	if err != nil {
		if errors.Is(err, ErrInvalidJSON) {
			return nil, EncodeError(nil, &Error{Code: CodeParseError, Message: "parse error: " + err.Error()})
		}
		var id json.RawMessage
		if m != nil && m.ID != nil && (m.IDType == gjson.Number || m.IDType == gjson.String) {
			id = m.ID
		}
		return nil, EncodeError(id, &Error{Code: CodeInvalidRequest, Message: "invalid request: " + err.Error()})
	}
	invalid := func(id json.RawMessage, msg string) (*Message, []byte) {
		return nil, EncodeError(id, &Error{Code: CodeInvalidRequest, Message: "invalid request: " + msg})
	}
	if m.HasID && m.IDType != gjson.Number && m.IDType != gjson.String {
		return invalid(nil, "the id must be a string or a number")
	}
	if m.JSONRPC != "2.0" {
		return invalid(m.ID, `"jsonrpc" must be "2.0"`)
	}
	return m, nil
}

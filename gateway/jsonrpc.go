package gateway

import (
	"encoding/json"
	"errors"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
)

// rpcError is a JSON-RPC error object. An upstream's error reaches the
// client with its code, message and data unchanged.
type rpcError = jsonrpc.Error

// message is one JSON-RPC message, its parts kept raw.
type message = jsonrpc.Message

// parseMessage decodes one JSON-RPC message (see jsonrpc.Parse).
func parseMessage(b []byte) (*message, error) { return jsonrpc.Parse(b) }

// parseClientMessage parses a message from a client and checks it as
// JSON-RPC 2.0 asks: invalid JSON is a parse error (-32700); a batch, a
// "jsonrpc" other than "2.0", an id that is not a string or a number, a
// method that is not a string: invalid request (-32600). On failure it
// returns the error response to send, whose id is the request's only
// when that id is valid. A parse error's id is always null: JSON-RPC 2.0
// asks for null when the id cannot be determined, and an id read from
// broken JSON is a guess (`{"id":7,"x":{"id":8` names either).
func parseClientMessage(b []byte) (*message, []byte) {
	m, err := parseMessage(b)
	if err != nil {
		if errors.Is(err, jsonrpc.ErrInvalidJSON) {
			return nil, jsonrpc.EncodeError(nil, &rpcError{Code: jsonrpc.CodeParseError, Message: "parse error: " + err.Error()})
		}
		var id json.RawMessage
		if m != nil && m.ID != nil && (m.IDType == gjson.Number || m.IDType == gjson.String) {
			id = m.ID
		}
		return nil, jsonrpc.EncodeError(id, &rpcError{Code: jsonrpc.CodeInvalidRequest, Message: "invalid request: " + err.Error()})
	}
	invalid := func(id json.RawMessage, msg string) (*message, []byte) {
		return nil, jsonrpc.EncodeError(id, &rpcError{Code: jsonrpc.CodeInvalidRequest, Message: "invalid request: " + msg})
	}
	if m.HasID && m.IDType != gjson.Number && m.IDType != gjson.String {
		return invalid(nil, "the id must be a string or a number")
	}
	if m.JSONRPC != "2.0" {
		return invalid(m.ID, `"jsonrpc" must be "2.0"`)
	}
	return m, nil
}

// sub returns v's raw bytes as a sub-slice of b (see jsonrpc.Sub).
func sub(b []byte, v gjson.Result) json.RawMessage { return jsonrpc.Sub(b, v) }

// encodeRequest renders a request or, with id nil, a notification.
func encodeRequest(id json.RawMessage, method string, params json.RawMessage) []byte {
	return jsonrpc.EncodeRequest(id, method, params)
}

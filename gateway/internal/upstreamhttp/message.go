package upstreamhttp

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
)

// ResponseError is a JSON-RPC error object: what a call's error response
// carries, and what a Handlers.Request error is sent back as when it is
// one (any other error goes back as an internal error, -32603).
type ResponseError = jsonrpc.Error

// codeInternalError is JSON-RPC's internal error.
const codeInternalError = -32603

// message is one JSON-RPC message from the server.
type message = jsonrpc.Message

// errNotMessage is why bytes from the server are not a JSON-RPC message.
var errNotMessage = errors.New("not a JSON-RPC message")

// parseMessage decodes one message from the server. An error response
// with a null id is one: the server could not read a request (or
// rejected the session) and answers whichever request it came back to.
func parseMessage(b []byte) (*message, error) {
	m, err := jsonrpc.Parse(b)
	if errors.Is(err, jsonrpc.ErrNoMethodNorID) && m.Error != nil {
		return m, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errNotMessage, err)
	}
	return m, nil
}

// encodeRequest renders a request, or with id 0 a notification.
func encodeRequest(id int64, method string, params json.RawMessage) []byte {
	var raw json.RawMessage
	if id != 0 {
		raw = strconv.AppendInt(nil, id, 10)
	}
	return jsonrpc.EncodeRequest(raw, method, params)
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

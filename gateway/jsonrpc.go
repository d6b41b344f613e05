package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
	"github.com/tidwall/gjson"
)

// JSON-RPC and MCP error codes the gateway answers with. Errors from an
// upstream keep the upstream's code.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
	// CodeResourceNotFound is MCP's code for a resources/read of an unknown URI.
	CodeResourceNotFound = -32002
	// CodeUpstreamUnavailable: the upstream is not connected (crashed and
	// restarting, failed to start, or closed).
	CodeUpstreamUnavailable = -32010
	// CodeUpstreamTimeout: the upstream did not answer within its timeout.
	CodeUpstreamTimeout = -32011
	// CodeUpstreamInvalid: the upstream answered something that is not
	// JSON-RPC.
	CodeUpstreamInvalid = -32012
	// CodeUnauthorized: the request's identity may not do this.
	CodeUnauthorized = -32013
	// CodeLimitExceeded: a limit of the gateway (outstanding server
	// requests, listen streams) refused the request; retry later.
	CodeLimitExceeded = -32014
)

// Sentinel errors; the gateway wraps them with %w so callers can match
// them with errors.Is.
var (
	// ErrUpstreamExited is the error of calls in flight when an upstream
	// process exits or its connection drops.
	ErrUpstreamExited = errors.New("upstream exited")
	// ErrUpstreamUnavailable is returned while an upstream is not connected.
	ErrUpstreamUnavailable = errors.New("upstream unavailable")
	// ErrUpstreamTimeout is returned when an upstream does not answer in
	// its configured timeout.
	ErrUpstreamTimeout = errors.New("upstream timed out")
	// ErrUpstreamInvalidJSON is returned when an upstream writes a line
	// that is not a JSON-RPC message.
	ErrUpstreamInvalidJSON = errors.New("upstream sent invalid JSON")
	// ErrUnknownTool is returned for a tools/call of a name no upstream has.
	ErrUnknownTool = errors.New("unknown tool")
	// ErrUnknownResource is returned for a resources/read no upstream serves.
	ErrUnknownResource = errors.New("unknown resource")
	// ErrForbidden is returned when a session asks for another session's
	// artifact.
	ErrForbidden = errors.New("not this session's artifact")
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("gateway closed")
)

// RPCError is a JSON-RPC error object. An upstream's error reaches the
// client with its code, message and data unchanged.
type RPCError = jsonrpc.Error

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
			return nil, encodeError(nil, &RPCError{Code: CodeParseError, Message: "parse error: " + err.Error()})
		}
		var id json.RawMessage
		if m != nil && m.ID != nil && (m.IDType == gjson.Number || m.IDType == gjson.String) {
			id = m.ID
		}
		return nil, encodeError(id, &RPCError{Code: CodeInvalidRequest, Message: "invalid request: " + err.Error()})
	}
	invalid := func(id json.RawMessage, msg string) (*message, []byte) {
		return nil, encodeError(id, &RPCError{Code: CodeInvalidRequest, Message: "invalid request: " + msg})
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

// encodeResult renders a success response.
func encodeResult(id, result json.RawMessage) []byte {
	b := make([]byte, 0, 40+len(id)+len(result))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":`...)
	if len(result) == 0 {
		result = json.RawMessage("{}")
	}
	b = append(b, result...)
	return append(b, '}')
}

// encodeError renders an error response for err: an *RPCError keeps its
// code; the gateway's sentinels get their own codes; anything else is an
// internal error with err's message.
func encodeError(id json.RawMessage, err error) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	e := toRPCError(err)
	out, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *RPCError       `json:"error"`
	}{"2.0", id, e})
	return out
}

func toRPCError(err error) *RPCError {
	var re *RPCError
	if errors.As(err, &re) {
		// keep the upstream's code and data, but the message with context
		return &RPCError{Code: re.Code, Message: errMessage(err, re), Data: re.Data}
	}
	code := CodeInternalError
	switch {
	case errors.Is(err, ErrUpstreamTimeout):
		code = CodeUpstreamTimeout
	case errors.Is(err, ErrUpstreamExited), errors.Is(err, ErrUpstreamUnavailable), errors.Is(err, ErrClosed):
		code = CodeUpstreamUnavailable
	case errors.Is(err, ErrUpstreamInvalidJSON):
		code = CodeUpstreamInvalid
	case errors.Is(err, ErrMessageTooLarge):
		code = CodeInvalidRequest
	case errors.Is(err, ErrUnknownTool), errors.Is(err, errBadParams):
		code = CodeInvalidParams
	case errors.Is(err, ErrUnknownResource):
		code = CodeResourceNotFound
	case errors.Is(err, ErrForbidden):
		code = CodeUnauthorized
	case errors.Is(err, errMethodNotFound):
		code = CodeMethodNotFound
	case errors.Is(err, ErrTooManyServerRequests), errors.Is(err, ErrTooManyListenStreams):
		code = CodeLimitExceeded
	}
	return &RPCError{Code: code, Message: err.Error()}
}

// errMessage is re's own message when err is re itself, else err's text
// (which carries re's with the context the gateway added).
func errMessage(err error, re *RPCError) string {
	if err == error(re) {
		return re.Message
	}
	return err.Error()
}

var (
	errBadParams      = errors.New("invalid params")
	errMethodNotFound = errors.New("method not found")
)

// idKey is a request id as a map key ("1", "\"abc\"").
func idKey(id json.RawMessage) string { return string(bytes.TrimSpace(id)) }

// intID renders n as a JSON-RPC id.
func intID(n int64) json.RawMessage { return json.RawMessage(strconv.AppendInt(nil, n, 10)) }

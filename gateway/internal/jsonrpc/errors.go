package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
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
	// ErrMessageTooLarge is returned for a message over its size limit.
	ErrMessageTooLarge = errors.New("message too large")
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

// ErrTooManyListenStreams refuses a subscriptions/listen stream over
// Limits.MaxListenStreamsPerPrincipal or MaxListenStreams.
var ErrTooManyListenStreams = errors.New("mcpx: too many subscriptions/listen streams")

// ErrTooManyServerRequests is the error an upstream gets for a
// server-to-client request over Limits.MaxServerRequestsPerCall or
// MaxServerRequestsPerUpstream; the request is not relayed.
var ErrTooManyServerRequests = errors.New("mcpx: too many outstanding server requests")

// ErrTooManyInstances refuses a session a process of a "per_session"
// upstream over Limits.MaxSessionProcesses.
var ErrTooManyInstances = errors.New("mcpx: too many upstream processes")

// EncodeResult renders a success response.
func EncodeResult(id, result json.RawMessage) []byte {
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

// EncodeError renders an error response for err: an *Error keeps its
// code; the gateway's sentinels get their own codes; anything else is an
// internal error with err's message.
func EncodeError(id json.RawMessage, err error) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	e := ToRPCError(err)
	out, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *Error          `json:"error"`
	}{"2.0", id, e})
	return out
}

// ToRPCError is err as a JSON-RPC error object: an *Error keeps its code
// and data; the sentinels of this package get their own codes.
func ToRPCError(err error) *Error {
	var re *Error
	if errors.As(err, &re) {
		// keep the upstream's code and data, but the message with context
		return &Error{Code: re.Code, Message: errMessage(err, re), Data: re.Data}
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
	case errors.Is(err, ErrUnknownTool), errors.Is(err, ErrBadParams):
		code = CodeInvalidParams
	case errors.Is(err, ErrUnknownResource):
		code = CodeResourceNotFound
	case errors.Is(err, ErrForbidden):
		code = CodeUnauthorized
	case errors.Is(err, ErrMethodNotFound):
		code = CodeMethodNotFound
	case errors.Is(err, ErrTooManyServerRequests), errors.Is(err, ErrTooManyListenStreams), errors.Is(err, ErrTooManyInstances):
		code = CodeLimitExceeded
	}
	return &Error{Code: code, Message: err.Error()}
}

// errMessage is re's own message when err is re itself, else err's text
// (which carries re's with the context the gateway added).
func errMessage(err error, re *Error) string {
	if err == error(re) { //nolint:errorlint // re itself, not a match: a wrapped re has context to keep
		return re.Message
	}
	return err.Error()
}

var (
	// ErrBadParams is a request whose params are not what its method
	// takes (JSON-RPC's invalid params).
	ErrBadParams = errors.New("invalid params")
	// ErrMethodNotFound is a request for a method nobody serves.
	ErrMethodNotFound = errors.New("method not found")
)

// IDKey is a request id as a map key ("1", "\"abc\"").
func IDKey(id json.RawMessage) string { return string(bytes.TrimSpace(id)) }

// IntID renders n as a JSON-RPC id.
func IntID(n int64) json.RawMessage { return json.RawMessage(strconv.AppendInt(nil, n, 10)) }

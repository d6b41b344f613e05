package session

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
	"github.com/mcpx-dev/mcpx/internal/redact"
)

// Errors say to clients what failed, and to the log why.
type Errors struct {
	log    hclog.Logger
	redact *redact.Redactor // the configured secrets, masked in every message
}

// NewErrors returns the Errors that log to log and mask secrets (values
// by variable name).
func NewErrors(log hclog.Logger, secrets map[string]string) *Errors {
	return &Errors{log: log, redact: redact.New(secrets)}
}

// forClient is what a client is told of err, a request's failure.
//
// Errors that may carry what a client must not see (an upstream's
// stderr tail, a URL or a header expanded from ${VAR} secrets, a
// process's exit status) become a generic message with an error id, and
// the whole error is logged at warn under that id: the operator finds it,
// the client learns only what failed. Such are an upstream that exited or
// is unavailable and the gateway's internal errors. Other errors keep
// their text (an unknown tool, bad params, a timeout), and an upstream's
// own JSON-RPC error keeps its code, message and data; in every message
// the configured secrets are masked.
func (es *Errors) forClient(method, session string, err error) *jsonrpc.Error {
	e := jsonrpc.ToRPCError(err)
	var upstreamRPC *jsonrpc.Error
	generic := ""
	switch {
	case errors.As(err, &upstreamRPC):
	case errors.Is(err, jsonrpc.ErrUpstreamExited):
		generic = "upstream exited"
	case errors.Is(err, jsonrpc.ErrUpstreamUnavailable):
		generic = "upstream unavailable"
	case e.Code == jsonrpc.CodeInternalError:
		generic = "internal error"
	}
	if generic == "" {
		es.log.Debug("request failed", "method", method, "session", session, "error", es.redact.String(err.Error()))
		e.Message = es.redact.String(e.Message)
		e.Data = es.maskData(e.Data)
		return e
	}
	id := newErrorID()
	es.log.Warn("request failed", "method", method, "session", session, "error_id", id, "error", es.redact.String(err.Error()))
	return &jsonrpc.Error{Code: e.Code, Message: fmt.Sprintf("%s: %s (details in the mcpx log under error_id=%s)", method, generic, id)}
}

// maskData masks the secrets in an error's data (an upstream's, passed
// on): in the JSON text, where a string holds a secret JSON-escaped. Data
// that masking left invalid (a secret that was a bare number or literal)
// is dropped rather than sent half-masked.
func (es *Errors) maskData(data json.RawMessage) json.RawMessage {
	if len(data) == 0 {
		return data
	}
	masked := es.redact.String(string(data))
	if masked == string(data) {
		return data
	}
	if !json.Valid([]byte(masked)) {
		return nil
	}
	return json.RawMessage(masked)
}

// newErrorID returns a short random id that ties a client's error to
// its log line.
func newErrorID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

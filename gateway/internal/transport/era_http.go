package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/auth"
	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
	"github.com/mcpx-dev/mcpx/gateway/internal/session"
	"github.com/mcpx-dev/mcpx/gateway/internal/subscriptions"
)

// isStatelessHTTP reports whether a POSTed message is of the stateless
// revision: its _meta or its Mcp-Protocol-Version header names it.
func isStatelessHTTP(r *http.Request, m *jsonrpc.Message) bool {
	return session.RequestVersion(m.Params) != "" || mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion))
}

// postStateless serves one stateless (2026-07-28) POST: no session, the
// headers checked against the body (Mcp-Protocol-Version, Mcp-Method,
// Mcp-Name), errors with the HTTP status the revision gives them. The
// response is JSON, or an SSE stream when progress comes first.
func (srv *HTTP) postStateless(w http.ResponseWriter, r *http.Request, user session.Identity, m *jsonrpc.Message) {
	if !m.IsRequest() {
		w.WriteHeader(http.StatusAccepted) // a stateless notification concerns nothing here
		return
	}
	fail := func(e *jsonrpc.Error) {
		writeJSON(w, statelessHTTPStatus(e.Code), jsonrpc.EncodeError(m.ID, e))
	}
	header := r.Header.Get(mcp.HeaderProtocolVersion)
	version := session.RequestVersion(m.Params)
	switch {
	case r.Header.Get("Last-Event-ID") != "":
		fail(&jsonrpc.Error{Code: mcp.HEADER_MISMATCH, Message: "Last-Event-ID: streams are not resumable in " + mcp.ProtocolVersion20260728})
		return
	case header == "" && version != "":
		fail(&jsonrpc.Error{Code: mcp.HEADER_MISMATCH, Message: mcp.HeaderProtocolVersion + " header is required with " + mcp.MetaKeyProtocolVersion})
		return
	case header != "" && version != "" && header != version:
		fail(&jsonrpc.Error{Code: mcp.HEADER_MISMATCH, Message: mcp.HeaderProtocolVersion + " header " + header + " does not match " + mcp.MetaKeyProtocolVersion + " " + version})
		return
	}
	if version != "" && mcp.IsModernProtocol(version) {
		if err := mcp.ValidateStandardHeaders(r.Header.Get, version, mcp.MCPMethod(m.Method), m.Params); err != nil {
			fail(&jsonrpc.Error{Code: mcp.HEADER_MISMATCH, Message: err.Error()})
			return
		}
		if err := srv.checkParamHeaders(r, m); err != nil {
			fail(&jsonrpc.Error{Code: mcp.HEADER_MISMATCH, Message: err.Error()})
			return
		}
	}
	s := session.NewStateless(srv.sh.Rooms, user)
	ls := &lazyStream{srv: srv, w: w}
	if m.Method == subscriptions.MethodListen {
		ctx, stop := context.WithCancel(r.Context())
		defer stop()
		go ls.keepAlive(ctx, srv.o.KeepAlive)
	}
	resp := s.HandleMessage(r.Context(), m, ls.emit)
	if code := gjson.GetBytes(resp, "error.code"); code.Exists() {
		ls.mu.Lock()
		started := ls.stream != 0
		ls.mu.Unlock()
		if !started {
			status := statelessHTTPStatus(int(code.Int()))
			if m.Method == subscriptions.MethodListen && code.Int() == jsonrpc.CodeLimitExceeded {
				status = http.StatusServiceUnavailable // too many streams (subscriptions.Listeners)
				w.Header().Set("Retry-After", subscriptions.RetryAfter)
			}
			writeJSON(w, status, resp)
			return
		}
	}
	ls.finish(resp)
}

// statelessHTTPStatus is the HTTP status of a stateless error response.
func statelessHTTPStatus(code int) int {
	switch code {
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	case auth.JSONRPCRateLimited:
		return http.StatusTooManyRequests
	case mcp.HEADER_MISMATCH, mcp.MISSING_REQUIRED_CLIENT_CAPABILITY, mcp.UNSUPPORTED_PROTOCOL_VERSION, jsonrpc.CodeInvalidRequest, jsonrpc.CodeInvalidParams, jsonrpc.CodeParseError:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// rejectStatelessVerb answers GET and DELETE of a stateless client: the
// revision has neither (server messages come on subscriptions/listen).
func rejectStatelessVerb(w http.ResponseWriter, r *http.Request) bool {
	if !mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) {
		return false
	}
	w.Header().Set("Allow", http.MethodPost)
	http.Error(w, r.Method+" is not part of protocol version "+mcp.ProtocolVersion20260728, http.StatusMethodNotAllowed)
	return true
}

// checkParamHeaders checks the Mcp-Param-* headers of a tools/call
// against its arguments, for the parameters the tool's input schema
// binds to headers (x-mcp-header, SEP-2243).
func (srv *HTTP) checkParamHeaders(r *http.Request, m *jsonrpc.Message) error {
	if m.Method != "tools/call" {
		return nil
	}
	rt, ok := srv.sh.Rooms.Tools.Route(gjson.GetBytes(m.Params, "name").String())
	if !ok || !bytes.Contains(rt.Def, []byte("x-mcp-header")) {
		return nil
	}
	var tool mcp.Tool
	if err := json.Unmarshal(rt.Def, &tool); err != nil {
		return nil // a definition mcp-go cannot read binds no headers it knows
	}
	return mcp.ValidateParamHeadersLookup(func(k string) (string, bool) {
		v := r.Header.Values(k)
		if len(v) == 0 {
			return "", false
		}
		return v[0], true
	}, &tool, m.Params)
}

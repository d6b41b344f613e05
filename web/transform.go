package web

import (
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/auth"
	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/observe"
)

// serveTransform is the engine as a service: the body is one raw tool
// result (an MCP CallToolResult, or any JSON), the answer the rewritten
// result, exactly as the gateway would have passed it on. ?server= and
// ?tool= select the config's per-server and per-tool options (server
// defaults to "local", as `mcpx transform`); ?session= and ?trace= are
// recorded in the artifacts' scope beside the caller's tenant and user.
// Each server's tool is rate limited per caller.
func (a *API) serveTransform(w http.ResponseWriter, r *http.Request) {
	if a.o.Transformer == nil {
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	server, tool := q.Get("server"), q.Get("tool")
	if server == "" {
		server = "local"
	}
	p := principal(r)
	if err := a.o.Auth.Limiter().AllowToolCall(p, server, tool); err != nil {
		var rl *auth.RateLimitError
		errors.As(err, &rl)
		rl.WriteHTTP(w)
		return
	}
	start := time.Now()
	body, err := readBody(r, a.l.MaxTransformBytes)
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			http.Error(w, "result over max_transform_bytes", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "reading the body: "+err.Error(), http.StatusBadRequest)
		return
	}
	scope := p.Scope()
	scope.SessionID, scope.TraceID = q.Get("session"), q.Get("trace")
	call := engine.Call{Server: server, Tool: tool, Scope: scope}
	res, err := a.o.Transformer.Transform(r.Context(), call, body)
	if a.o.Observer != nil {
		// counted as the gateway counts a tools/call: a body the engine
		// refuses as a failed call, a result with isError as a tool error
		oc := observe.Call{Server: server, Tool: tool, Scope: scope, Duration: time.Since(start), Err: err}
		if err == nil {
			oc.Result, oc.ToolError = res, gjson.GetBytes(res.Raw, "isError").Bool()
		}
		a.o.Observer.ObserveCall(oc)
	}
	if err != nil {
		// the engine fails only for input that is not JSON (or a closed engine)
		http.Error(w, err.Error(), http.StatusUnprocessableEntity)
		return
	}
	a.o.Events.ResultRewritten(call, res)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(res.Raw)
}

// readBody reads r's body whole, sized from Content-Length when given,
// refusing more than limit bytes.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	rd := http.MaxBytesReader(nil, r.Body, limit)
	n := int64(512)
	if r.ContentLength > 0 && r.ContentLength <= limit {
		n = r.ContentLength + 1
	}
	buf := make([]byte, 0, n)
	for {
		m, err := rd.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
	}
}

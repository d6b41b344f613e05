package session

// One message of a client, from Handle to its response: a notification
// or a response is taken at once; a request is recorded in flight (its
// context ends when the client cancels it or the session closes), served
// in its protocol era (era.go: serve), dispatched on its method
// (request), and answered, an error as the client is told it (Errors).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
)

// Handle processes one message from the client. For a request it returns
// the response; for a notification or response, nil. Notifications that
// belong to the request (progress) go to related when it is not nil, else
// to the session's own channel. Handle is safe to call concurrently.
func (s *Session) Handle(ctx context.Context, raw []byte, related func([]byte)) []byte {
	m, errResp := jsonrpc.ParseClient(raw)
	if errResp != nil {
		return errResp
	}
	return s.HandleMessage(ctx, m, related)
}

// HandleMessage is Handle of a message already parsed.
func (s *Session) HandleMessage(ctx context.Context, m *jsonrpc.Message, related func([]byte)) []byte {
	switch {
	case m.IsNotification():
		s.notification(m)
		return nil
	case m.IsResponse():
		// to a server-to-client request relayed to the client
		if !s.toClient.answered(m) {
			s.rooms.Log.Debug("a response to no request of ours", "session", s.ID, "id", string(m.ID))
		}
		return nil
	}
	ctx, end, closed := s.begin(ctx, m)
	if closed != nil {
		return closed
	}
	defer end()
	res, err := s.serve(ctx, m, related)
	return s.respond(ctx, m, res, err)
}

// begin records request m in flight: its context ends when the client
// cancels it (notifications/cancelled) or the session closes; end, once
// it is answered, forgets it. On a closed session it returns the error
// response instead.
func (s *Session) begin(ctx context.Context, m *jsonrpc.Message) (_ context.Context, end func(), closed []byte) {
	key := jsonrpc.IDKey(m.ID)
	ctx, cancel := context.WithCancelCause(ctx)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		cancel(nil)
		return nil, nil, jsonrpc.EncodeError(m.ID, fmt.Errorf("session closed: %w", jsonrpc.ErrClosed))
	}
	s.inflight[key] = cancel
	s.mu.Unlock()
	return ctx, func() {
		s.mu.Lock()
		delete(s.inflight, key)
		s.mu.Unlock()
		cancel(nil)
	}, nil
}

// respond is the response to request m begun with ctx: res, or err as
// the client is told it.
func (s *Session) respond(ctx context.Context, m *jsonrpc.Message, res json.RawMessage, err error) []byte {
	var cause error
	if ctx.Err() != nil {
		cause = context.Cause(ctx)
	}
	return s.respondCause(m, res, err, cause)
}

// respondCause is respond for a request cancelled for cause (nil: not
// cancelled): an error names the cause rather than the cancellation.
func (s *Session) respondCause(m *jsonrpc.Message, res json.RawMessage, err, cause error) []byte {
	if err != nil {
		if cause != nil && !errors.Is(err, jsonrpc.ErrUpstreamTimeout) {
			err = fmt.Errorf("%s: %w", m.Method, cause)
		}
		return jsonrpc.EncodeError(m.ID, s.rooms.Errors.forClient(m.Method, s.ID, err))
	}
	return jsonrpc.EncodeResult(m.ID, res)
}

func (s *Session) notification(m *jsonrpc.Message) {
	switch m.Method {
	case "notifications/initialized":
		s.initialized.Store(true)
		if s.clientHas("roots") {
			s.rooms.Clients.RootsChanged()
		}
	case "notifications/cancelled":
		key := jsonrpc.IDKey(json.RawMessage(gjson.GetBytes(m.Params, "requestId").Raw))
		s.mu.Lock()
		cancel := s.inflight[key]
		s.mu.Unlock()
		if cancel != nil {
			cancel(fmt.Errorf("cancelled by the client: %s", gjson.GetBytes(m.Params, "reason").String()))
		}
	case "notifications/roots/list_changed":
		s.rooms.Clients.RootsChanged()
	}
}

// supportedDownstream are the protocol versions a client may pick; others
// get DownstreamProtocolVersion.
var supportedDownstream = []string{mcp.ProtocolVersion20251125, mcp.ProtocolVersion20250618, mcp.ProtocolVersion20250326, mcp.ProtocolVersion20241105}

// downstreamProtocolVersion is the version offered to clients that ask for
// one mcpx does not speak.
const downstreamProtocolVersion = mcp.ProtocolVersion20251125

func (s *Session) request(ctx context.Context, m *jsonrpc.Message, related func([]byte)) (json.RawMessage, error) {
	g := s.rooms
	switch m.Method {
	case "initialize":
		return s.initialize(ctx, m.Params)
	case "ping":
		return json.RawMessage("{}"), nil
	}
	if !s.stateless {
		// a session that skipped initialize declared nothing: the
		// upstreams must not wait for it
		g.Clients.Arrived(nil)
	}
	switch m.Method {
	case "tools/list":
		return g.Tools.List(), nil
	case "tools/call":
		return s.callTool(ctx, m.Params, related)
	case "resources/list":
		return g.Res.List(ctx, s.reader(), m.Params, false)
	case "resources/templates/list":
		return g.Res.List(ctx, s.reader(), m.Params, true)
	case "resources/read":
		uri := gjson.GetBytes(m.Params, "uri").String()
		if uri == "" {
			return nil, fmt.Errorf("resources/read: %w: \"uri\" is required", jsonrpc.ErrBadParams)
		}
		return g.Res.Read(ctx, s.reader(), uri, m.Params)
	case "resources/subscribe", "resources/unsubscribe":
		uri := gjson.GetBytes(m.Params, "uri").String()
		if uri == "" {
			return nil, fmt.Errorf("%s: %w: \"uri\" is required", m.Method, jsonrpc.ErrBadParams)
		}
		if m.Method == "resources/subscribe" {
			return json.RawMessage("{}"), s.subscribe(ctx, uri)
		}
		s.unsubscribe(uri)
		return json.RawMessage("{}"), nil
	case "prompts/list":
		return g.Prompts.List(ctx)
	case "prompts/get":
		return g.Prompts.Get(ctx, m.Params)
	case "logging/setLevel":
		var errs []error
		for _, u := range g.Ups.All() {
			if u.Capability("logging") {
				if _, err := u.Call(ctx, m.Method, m.Params); err != nil {
					errs = append(errs, err)
				}
			}
		}
		if len(errs) > 0 {
			g.Log.Warn("logging/setLevel failed upstream", "error", errors.Join(errs...))
		}
		return json.RawMessage("{}"), nil
	case "completion/complete":
		return g.Prompts.Complete(ctx, m.Params)
	}
	return nil, fmt.Errorf("%w: %s", jsonrpc.ErrMethodNotFound, m.Method)
}

func (s *Session) initialize(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	g := s.rooms
	caps := json.RawMessage(gjson.GetBytes(params, "capabilities").Raw)
	s.setClientCaps(caps)
	s.mu.Lock()
	s.client = gjson.GetBytes(params, "clientInfo.name").String()
	s.mu.Unlock()
	g.Clients.Arrived(caps) // before waiting: the upstreams' initialize may wait for it
	g.Ups.AwaitStart(ctx)
	pv := gjson.GetBytes(params, "protocolVersion").String()
	if !slices.Contains(supportedDownstream, pv) {
		pv = downstreamProtocolVersion
	}
	res := g.Describe(false)
	res["protocolVersion"] = pv
	return json.Marshal(res)
}

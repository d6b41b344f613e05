package session

import (
	"encoding/json"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
	"github.com/mcpx-dev/mcpx/gateway/internal/upstream"
)

// Progress maps the progress tokens the gateway sends upstream back to
// their client's: clients' tokens may collide, so each call in flight
// that asked for progress gets a gateway-unique one.
type Progress struct {
	seq atomic.Int64

	mu     sync.Mutex
	routes map[string]progressRoute // upstream progress token → client's
}

type progressRoute struct {
	s       *Session
	token   json.RawMessage
	related func([]byte)
}

// NewProgress returns an empty map of progress tokens.
func NewProgress() *Progress { return &Progress{routes: map[string]progressRoute{}} }

// Map gives s's progress token a gateway-unique upstream token and
// returns it (as JSON); the client's progress goes to related when it is
// not nil, else to s's own channel. Unmap it when the call is over.
func (p *Progress) Map(s *Session, token json.RawMessage, related func([]byte)) string {
	up := `"mcpx-` + strconv.FormatInt(p.seq.Add(1), 10) + `"`
	p.mu.Lock()
	p.routes[up] = progressRoute{s: s, token: token, related: related}
	p.mu.Unlock()
	return up
}

// Unmap forgets an upstream token Map returned.
func (p *Progress) Unmap(up string) {
	p.mu.Lock()
	delete(p.routes, up)
	p.mu.Unlock()
}

// Relay sends progress an upstream (u) sent to the client whose call it
// is about, under the client's own token.
func (p *Progress) Relay(u *upstream.Upstream, method string, params json.RawMessage) {
	tok := gjson.GetBytes(params, "progressToken")
	p.mu.Lock()
	r, ok := p.routes[tok.Raw]
	p.mu.Unlock()
	if !ok {
		u.Log.Debug("progress for a token no call holds", "token", tok.Raw)
		return
	}
	out, err := sjson.SetRawBytes(append([]byte(nil), params...), "progressToken", r.token)
	if err != nil {
		return
	}
	msg := jsonrpc.EncodeRequest(nil, method, out)
	if r.related != nil {
		r.related(msg)
	} else {
		r.s.Send(msg)
	}
}

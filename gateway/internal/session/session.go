package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/mcpx-dev/mcpx/auth"
	"github.com/mcpx-dev/mcpx/gateway/internal/artifacts"
	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
	"github.com/mcpx-dev/mcpx/gateway/internal/upstream"
)

// Session is one downstream client connection: a stdio peer or a
// streamable-HTTP session (or one stateless request, NewStateless). Its
// id scopes the artifacts its calls create.
type Session struct {
	// ID is the session id (Mcp-Session-Id over HTTP).
	ID string
	// User is the authenticated identity (HTTP bearer token), "" over
	// stdio. It is injected as "username" and recorded in artifact scopes.
	User string
	// Tenant is the authenticated principal's tenant (auth), recorded
	// with User in artifact scopes.
	Tenant string

	limiter     *auth.RateLimiter // the principal's per-tool limits; nil: none
	rooms       *Rooms
	out         func([]byte) // server-initiated messages
	initialized atomic.Bool

	mu       sync.Mutex
	inflight map[string]context.CancelCauseFunc
	shown    artifacts.Shown // the artifacts the client was shown
	subs     map[string]struct{}
	closed   bool

	stateless  bool            // one 2026-07-28 HTTP request (era.go)
	readsStore bool            // the local user's stdio client (gateway.Options.StdioReadsStore)
	clientCaps json.RawMessage // from initialize
	client     string          // clientInfo.name from initialize
	toClient   clientRequests  // server-to-client requests awaiting answers
}

// New registers a session of who served with r, whose server-initiated
// messages (notifications) are written by out; readsStore says the
// client is the local user who started the gateway, who may read every
// artifact no authenticated principal made (artifacts.Reader). Close it
// when the client leaves.
func New(r *Rooms, who Identity, out func(msg []byte), readsStore bool) *Session {
	s := &Session{
		ID:         newID(),
		User:       who.User,
		Tenant:     who.Tenant,
		limiter:    who.Limiter,
		rooms:      r,
		out:        out,
		readsStore: readsStore,
		inflight:   map[string]context.CancelCauseFunc{},
		subs:       map[string]struct{}{},
	}
	r.Sessions.add(s)
	return s
}

// newID returns a random session id.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Send writes a message of the gateway's own (a notification, a request
// to the client) on the session's channel, unless the session closed.
func (s *Session) Send(msg []byte) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if !closed {
		s.out(msg)
	}
}

// Closed reports whether the session was closed.
func (s *Session) Closed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// errClientGone is the cancel cause of a session's calls when it closes.
var errClientGone = errors.New("client disconnected")

// Close cancels the session's calls in flight, drops its subscriptions
// (unsubscribing upstream where it was the last subscriber) and forgets
// it. It is idempotent.
func (s *Session) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	// cancelled once mu is free: a started call (call_start.go) may
	// answer at once, and forget itself under mu
	cancels := make([]context.CancelCauseFunc, 0, len(s.inflight))
	for _, cancel := range s.inflight {
		cancels = append(cancels, cancel)
	}
	subs := make([]string, 0, len(s.subs))
	for uri := range s.subs {
		subs = append(subs, uri)
	}
	s.mu.Unlock()
	for _, cancel := range cancels {
		cancel(errClientGone)
	}
	s.toClient.fail()
	for _, uri := range subs {
		s.rooms.Subs.Unsubscribe(s, uri)
	}
	s.rooms.Sessions.remove(s)
	s.rooms.Cache.DropSession(s.ID)
	for _, u := range s.rooms.Ups.All() {
		u.Instances().EndSession(s) // its per_session processes (mcpx.instances)
	}
	if s.initialized.Load() && s.clientHas("roots") {
		s.rooms.Clients.RootsChanged() // its roots are gone
	}
	if s.rooms.OnEnd != nil && !s.stateless {
		s.rooms.OnEnd(s.ID)
	}
}

// subscribe serves resources/subscribe: the session's subscription lasts
// until resources/unsubscribe or the session's end.
func (s *Session) subscribe(ctx context.Context, uri string) error {
	if err := s.rooms.Subs.Subscribe(ctx, s, uri); err != nil {
		return fmt.Errorf("resources/subscribe %s: %w", uri, err)
	}
	s.mu.Lock()
	s.subs[uri] = struct{}{}
	s.mu.Unlock()
	return nil
}

// unsubscribe serves resources/unsubscribe.
func (s *Session) unsubscribe(uri string) {
	s.mu.Lock()
	delete(s.subs, uri)
	s.mu.Unlock()
	s.rooms.Subs.Unsubscribe(s, uri)
}

// Notify sends a notification on the session's own channel.
func (s *Session) Notify(method string, params json.RawMessage) {
	s.Send(jsonrpc.EncodeRequest(nil, method, params))
}

// Hears reports whether s may hear what a process of from sends on its
// own: a process of one session or principal speaks to its owner only.
func (s *Session) Hears(from upstream.Owner) bool {
	switch {
	case from.Session != nil:
		return from.Session == any(s)
	case from.Principal != "":
		return s.principalKey() == from.Principal
	}
	return true
}

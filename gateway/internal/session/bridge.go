package session

// Bridging a 2025-11-25 upstream's server-to-client requests to a
// 2026-07-28 (stateless) client. A stateless client cannot be sent
// requests: it learns that a call needs input from an input_required
// result, answers with a retry of the same request that carries
// inputResponses and the requestState it was given, and the call goes on.
//
// The gateway runs such a call upstream detached from the client's
// request. When the upstream asks (elicitation/create,
// sampling/createMessage, roots/list), the call is parked: the client's
// request gets an input_required result listing what the upstream asked
// (requests that arrive together are listed together) and a requestState
// the gateway mints. The retry's inputResponses answer the upstream's
// requests, and the client's retry waits for what comes next: the call's
// result or another round. The call stays parked for bridgeTTL at most;
// then it is cancelled upstream.
//
// The requestState is authenticated: HMAC-SHA256 under a key each gateway
// draws at random, over the parked call's id, the principal it was minted
// for and its expiry. A state that does not verify, has expired, or comes
// from another principal is refused (invalid params) and touches nothing.
// A requestState that is not the gateway's (a 2026-07-28 upstream's own)
// goes upstream unchanged.

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
)

// ErrBadRequestState is the error a retry gets whose requestState the
// gateway minted but cannot accept: tampered, expired, another
// principal's, or used already.
var ErrBadRequestState = errors.New("requestState rejected")

// bridgeTTL is how long a parked call waits for the client's retry.
const bridgeTTL = 5 * time.Minute

// bridgeGather is how long a parked call keeps collecting the upstream's
// further requests after one arrived, so that requests an upstream sends
// together (go-sdk fulfils an input_required's requests concurrently)
// reach the client in one round.
const bridgeGather = 25 * time.Millisecond

// RequestStatePrefix marks the requestState values the gateway mints.
const RequestStatePrefix = "mcpx1."

// bridgedMethods are the requests that may take part in a multi round-trip
// exchange.
var bridgedMethods = []string{"tools/call", "prompts/get", "resources/read"}

// Bridges are a gateway's parked calls. The zero value is ready.
type Bridges struct {
	once sync.Once
	key  []byte
	mu   sync.Mutex
	seq  int64
	live map[string]*inputBridge
}

func (bs *Bridges) init() {
	bs.once.Do(func() {
		bs.key = make([]byte, 32)
		if _, err := rand.Read(bs.key); err != nil {
			panic(fmt.Errorf("mcpx: drawing the requestState key: %w", err))
		}
		bs.live = map[string]*inputBridge{}
	})
}

// bridgeAsk is one request of the upstream awaiting the client's answer.
type bridgeAsk struct {
	method string
	params json.RawMessage
	answer chan json.RawMessage
}

// inputBridge is one call of a stateless client running upstream.
type inputBridge struct {
	id        string
	principal string
	method    string
	asks      chan *bridgeAsk
	done      chan struct{} // closed when the call ended; res, err set
	res       json.RawMessage
	err       error
	cancel    context.CancelCauseFunc

	mu      sync.Mutex
	related func([]byte)          // the stream of the client's current round, or nil
	pending map[string]*bridgeAsk // keys the client must answer
	keySeq  int
	timer   *time.Timer
}

// ask hands the upstream's request to the client (through the call's next
// round) and waits for the answer.
func (b *inputBridge) ask(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	a := &bridgeAsk{method: method, params: params, answer: make(chan json.RawMessage, 1)}
	select {
	case b.asks <- a:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case <-b.done:
		return nil, fmt.Errorf("%s: the call has ended", method)
	}
	select {
	case res := <-a.answer:
		return res, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case <-b.done:
		return nil, fmt.Errorf("%s: the call has ended", method)
	}
}

// emit sends a message related to the call (progress) on the stream of
// the client's request that is waiting for it, if one is.
func (b *inputBridge) emit(msg []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.related != nil {
		b.related(msg)
	}
}

// attach makes related the call's stream until the returned func.
func (b *inputBridge) attach(related func([]byte)) func() {
	b.mu.Lock()
	b.related = related
	b.mu.Unlock()
	return func() {
		b.mu.Lock()
		b.related = nil
		b.mu.Unlock()
	}
}

// principalOf is what a requestState is bound to: the caller's identity
// (and over stdio its session).
func principalOf(s *Session) string { return s.User + "\x00" + s.ID }

// serveBridged runs a stateless client's call that an old-era upstream may
// interrupt with requests, or resumes a parked one.
func (s *Session) serveBridged(ctx context.Context, m *jsonrpc.Message, related func([]byte)) (json.RawMessage, error) {
	bs := s.rooms.Bridges
	bs.init()
	state := gjson.GetBytes(m.Params, "requestState").String()
	if strings.HasPrefix(state, RequestStatePrefix) {
		b, missing, err := bs.resume(s, m, state)
		if err != nil {
			return nil, err
		}
		if len(missing) > 0 {
			return bs.reask(b, missing)
		}
		defer b.attach(related)()
		return bs.round(ctx, b)
	}
	bs.mu.Lock()
	bs.seq++
	id := strconv.FormatInt(bs.seq, 10)
	bs.mu.Unlock()
	b := &inputBridge{id: id, principal: principalOf(s), method: m.Method, asks: make(chan *bridgeAsk), done: make(chan struct{}), pending: map[string]*bridgeAsk{}}
	// The call outlives the client's request when it is parked; cancelling
	// the request while it is not parked cancels the call (see round).
	cctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	b.cancel = cancel
	defer b.attach(related)()
	var emit func([]byte)
	if related != nil {
		emit = b.emit
	}
	cctx = withCaller(cctx, s, emit)
	cl := callerFrom(cctx)
	cl.stateless = true
	cl.meta = json.RawMessage(gjson.GetBytes(m.Params, "_meta").Raw)
	cl.bridge = b
	go func() {
		defer cancel(nil)
		b.res, b.err = s.request(cctx, m, emit)
		close(b.done)
		bs.mu.Lock()
		delete(bs.live, b.id)
		bs.mu.Unlock()
		b.mu.Lock()
		if b.timer != nil {
			b.timer.Stop()
		}
		b.mu.Unlock()
	}()
	return bs.round(ctx, b)
}

// round waits for the call's result or for the upstream's next requests,
// which park the call and become an input_required result.
func (bs *Bridges) round(ctx context.Context, b *inputBridge) (json.RawMessage, error) {
	var asks []*bridgeAsk
	select {
	case <-b.done:
		return b.res, b.err
	case a := <-b.asks:
		asks = append(asks, a)
	case <-ctx.Done():
		b.cancel(fmt.Errorf("the client's request ended: %w", context.Cause(ctx)))
		return nil, context.Cause(ctx)
	}
	gather := time.NewTimer(bridgeGather)
	defer gather.Stop()
collect:
	for {
		select {
		case a := <-b.asks:
			asks = append(asks, a)
			gather.Reset(bridgeGather)
		case <-gather.C:
			break collect
		case <-b.done: // the upstream gave up on its requests
			break collect
		}
	}
	requests := map[string]json.RawMessage{}
	b.mu.Lock()
	for _, a := range asks {
		b.keySeq++
		key := "mcpx-" + strconv.Itoa(b.keySeq)
		b.pending[key] = a
		requests[key] = a.inputRequest()
	}
	b.mu.Unlock()
	return bs.park(b, requests)
}

// inputRequest is a as an entry of inputRequests. roots/list's params can
// carry only the upstream's own _meta, which means nothing to the client:
// they are left out, and decorate gives every entry without params an
// empty object (withInputParams).
func (a *bridgeAsk) inputRequest() json.RawMessage {
	req := []byte(`{"method":` + quote(a.method) + `}`)
	if len(a.params) > 0 && a.method != "roots/list" {
		req, _ = sjson.SetRawBytes(req, "params", a.params)
	}
	return req
}

// reask answers a retry that left the pending requests named by keys
// unanswered by asking them again, as SEP-2322 asks of a server: the
// client gets another round rather than an error, and the call stays
// parked.
func (bs *Bridges) reask(b *inputBridge, keys []string) (json.RawMessage, error) {
	requests := map[string]json.RawMessage{}
	b.mu.Lock()
	for _, k := range keys {
		if a := b.pending[k]; a != nil {
			requests[k] = a.inputRequest()
		}
	}
	b.mu.Unlock()
	return bs.park(b, requests)
}

// park keeps b waiting for the client's retry (bridgeTTL at most) and
// returns the input_required result that lists requests.
func (bs *Bridges) park(b *inputBridge, requests map[string]json.RawMessage) (json.RawMessage, error) {
	b.mu.Lock()
	exp := time.Now().Add(bridgeTTL)
	if b.timer != nil {
		b.timer.Stop()
	}
	b.timer = time.AfterFunc(bridgeTTL, func() { bs.expire(b) })
	b.mu.Unlock()
	bs.mu.Lock()
	bs.live[b.id] = b
	bs.mu.Unlock()
	out, err := json.Marshal(map[string]any{
		"resultType":    "input_required",
		"inputRequests": requests,
		"requestState":  bs.mint(b, exp),
	})
	return out, err
}

// expire cancels a call the client did not come back for.
func (bs *Bridges) expire(b *inputBridge) {
	bs.mu.Lock()
	if bs.live[b.id] == b {
		delete(bs.live, b.id)
	}
	bs.mu.Unlock()
	b.cancel(errors.New("the client did not answer the input_required result in time"))
}

// statePayload is what a requestState the gateway mints says.
type statePayload struct {
	ID        string `json:"b"`
	Principal string `json:"p"`
	Expires   int64  `json:"e"`
}

func (bs *Bridges) sign(payload []byte) []byte {
	mac := hmac.New(sha256.New, bs.key)
	mac.Write(payload)
	return mac.Sum(nil)
}

// mint is the requestState of b's parked round.
func (bs *Bridges) mint(b *inputBridge, exp time.Time) string {
	p, _ := json.Marshal(statePayload{ID: b.id, Principal: b.principal, Expires: exp.Unix()})
	enc := base64.RawURLEncoding
	return RequestStatePrefix + enc.EncodeToString(p) + "." + enc.EncodeToString(bs.sign(p))
}

// verify checks a requestState the gateway minted.
func (bs *Bridges) verify(state, principal string) (string, error) {
	// Strict: a state whose unused trailing bits differ from what mint
	// wrote is not the state the gateway minted.
	enc := base64.RawURLEncoding.Strict()
	body, sig, ok := strings.Cut(strings.TrimPrefix(state, RequestStatePrefix), ".")
	if !ok {
		return "", fmt.Errorf("%w: malformed", ErrBadRequestState)
	}
	p, err1 := enc.DecodeString(body)
	mac, err2 := enc.DecodeString(sig)
	if err1 != nil || err2 != nil || !hmac.Equal(mac, bs.sign(p)) {
		return "", fmt.Errorf("%w: it does not verify (tampered, or minted by another gateway)", ErrBadRequestState)
	}
	var sp statePayload
	if err := json.Unmarshal(p, &sp); err != nil {
		return "", fmt.Errorf("%w: %w", ErrBadRequestState, err)
	}
	if sp.Principal != principal {
		return "", fmt.Errorf("%w: it was issued to another client", ErrBadRequestState)
	}
	if time.Now().Unix() > sp.Expires {
		return "", fmt.Errorf("%w: it has expired", ErrBadRequestState)
	}
	return sp.ID, nil
}

// resume verifies a retry's requestState and hands its inputResponses to
// the parked call's upstream requests; it returns the keys the retry left
// unanswered, sorted, and then answers none.
func (bs *Bridges) resume(s *Session, m *jsonrpc.Message, state string) (*inputBridge, []string, error) {
	id, err := bs.verify(state, principalOf(s))
	if err != nil {
		return nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	bs.mu.Lock()
	b := bs.live[id]
	bs.mu.Unlock()
	if b == nil || b.method != m.Method {
		return nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Errorf("%w: no call of %s is waiting for it (ended, expired or used)", ErrBadRequestState, m.Method).Error()}
	}
	responses := gjson.GetBytes(m.Params, "inputResponses")
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.pending) == 0 {
		return nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Errorf("%w: used already", ErrBadRequestState).Error()}
	}
	var missing []string
	for key := range b.pending {
		if !responses.Get(key).IsObject() {
			missing = append(missing, key)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return b, missing, nil
	}
	for key, a := range b.pending {
		a.answer <- json.RawMessage(bytes.Clone([]byte(responses.Get(key).Raw)))
		delete(b.pending, key)
	}
	if b.timer != nil {
		b.timer.Stop()
	}
	return b, nil, nil
}

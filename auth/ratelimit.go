package auth

import (
	"container/list"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// ErrRateLimited matches every *RateLimitError with errors.Is.
var ErrRateLimited = errors.New("auth: rate limit exceeded")

// JSONRPCRateLimited is the JSON-RPC error code of a refused call (in the
// implementation-defined server error range; 429 as in HTTP). The gateway
// answers a *RateLimitError with it and RateLimitError.Data as "data".
const JSONRPCRateLimited = -32029

// RateLimitError is a request or call refused by a rate limit.
type RateLimitError struct {
	// Limit is the limit's name: "requests_per_second" or
	// "tool_calls_per_second".
	Limit string
	// Principal is the caller's Key; Tool the "server/tool" limited, if any.
	Principal, Tool string
	// RetryAfter is when a retry would pass.
	RetryAfter time.Duration
}

func (e *RateLimitError) Error() string {
	what := e.Principal
	if e.Tool != "" {
		what += " calling " + e.Tool
	}
	return fmt.Sprintf("rate limit %s exceeded for %s: retry after %s", e.Limit, what, e.RetryAfter.Round(time.Millisecond))
}

// Is makes a RateLimitError match ErrRateLimited.
func (e *RateLimitError) Is(target error) bool { return target == ErrRateLimited }

// RetryAfterSeconds is RetryAfter rounded up to whole seconds, at least 1
// (the Retry-After header's unit).
func (e *RateLimitError) RetryAfterSeconds() int {
	return max(1, int(math.Ceil(e.RetryAfter.Seconds())))
}

// Data is the JSON-RPC error's "data": {"limit", "retry_after_seconds"}.
func (e *RateLimitError) Data() map[string]any {
	return map[string]any{"limit": e.Limit, "retry_after_seconds": e.RetryAfterSeconds()}
}

// WriteHTTP answers 429 Too Many Requests with Retry-After.
func (e *RateLimitError) WriteHTTP(w http.ResponseWriter) {
	w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfterSeconds()))
	http.Error(w, e.Error(), http.StatusTooManyRequests)
}

// RateLimiter holds a token bucket per principal and per principal and
// tool, at most Limits.MaxLimiters of them (least recently used go; a
// principal that comes back starts with a full bucket). Safe for
// concurrent use.
type RateLimiter struct {
	l Limits
	// set is the configured Limits before defaults: the local user (an
	// unauthenticated loopback listener's one user) is limited only by
	// rates set explicitly, so one person's agents on their own machine
	// are not throttled by defaults meant to share a gateway.
	set Limits

	mu   sync.Mutex
	byID map[string]*list.Element
	lru  list.List // of *limiterEntry, most recent first
}

type limiterEntry struct {
	key string
	lim *rate.Limiter
}

// NewRateLimiter returns a limiter applying l (defaults filled in).
func NewRateLimiter(l Limits) *RateLimiter {
	return &RateLimiter{l: l.WithDefaults(), set: l, byID: map[string]*list.Element{}}
}

// AllowRequest takes one request of p from its bucket; a
// *RateLimitError when it is empty.
func (r *RateLimiter) AllowRequest(p Principal) error {
	if p.Local && r.set.RequestsPerSecond == 0 {
		return nil
	}
	return r.take("r\x00"+p.Key(), r.l.RequestsPerSecond, r.l.RequestBurst, func(d time.Duration) error {
		return &RateLimitError{Limit: "requests_per_second", Principal: p.Key(), RetryAfter: d}
	})
}

// AllowToolCall takes one call of server's tool by p; a *RateLimitError
// when its bucket is empty.
func (r *RateLimiter) AllowToolCall(p Principal, server, tool string) error {
	if p.Local && r.set.ToolCallsPerSecond == 0 {
		return nil
	}
	return r.take("t\x00"+p.Key()+"\x00"+server+"\x00"+tool, r.l.ToolCallsPerSecond, r.l.ToolCallBurst, func(d time.Duration) error {
		return &RateLimitError{Limit: "tool_calls_per_second", Principal: p.Key(), Tool: server + "/" + tool, RetryAfter: d}
	})
}

func (r *RateLimiter) take(key string, perSec float64, burst int, refuse func(time.Duration) error) error {
	if perSec < 0 {
		return nil // off
	}
	now := time.Now()
	res := r.limiter(key, perSec, burst).ReserveN(now, 1)
	if !res.OK() {
		return refuse(time.Second)
	}
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return refuse(d)
	}
	return nil
}

func (r *RateLimiter) limiter(key string, perSec float64, burst int) *rate.Limiter {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.byID[key]; ok {
		r.lru.MoveToFront(e)
		return e.Value.(*limiterEntry).lim
	}
	lim := rate.NewLimiter(rate.Limit(perSec), burst)
	r.byID[key] = r.lru.PushFront(&limiterEntry{key, lim})
	for r.lru.Len() > r.l.MaxLimiters {
		old := r.lru.Back()
		r.lru.Remove(old)
		delete(r.byID, old.Value.(*limiterEntry).key)
	}
	return lim
}

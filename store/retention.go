package store

// Retention (docs/design.md, "The store's promises"): the policy that decides which artifacts go, the
// optional interface of stores that apply it, and what they report.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// ErrQuotaExceeded is returned by Put when storing the artifact would
// take its session or trace past a limit of PutOptions.Quota (strategy
// none refuses instead of evicting). The error is a *LimitError.
var ErrQuotaExceeded = errors.New("store: quota exceeded")

// Strategy says which artifacts go first when a limit is exceeded.
type Strategy string

const (
	// StrategyLRU evicts the least recently read (or put) artifacts first;
	// the TTL counts from the last access.
	StrategyLRU Strategy = "lru"
	// StrategyFIFO evicts the oldest artifacts first; the TTL counts from
	// creation.
	StrategyFIFO Strategy = "fifo"
	// StrategyNone never evicts to meet a limit: puts that would exceed a
	// per-session or per-trace limit are refused instead. The TTL still
	// applies, counted from creation.
	StrategyNone Strategy = "none"
)

// The default policy, used by the gateway (mcpx serve, mcpx wrap)
// when the configuration has no retention section.
const (
	DefaultRetentionTTL           = time.Hour
	DefaultMaxArtifactBytes       = 50 << 20
	DefaultMaxSessionBytes        = 500 << 20
	DefaultMaxTraceBytes          = 100 << 20
	DefaultMaxArtifactsPerTrace   = 100
	DefaultMaxArtifactsPerSession = 1000
	DefaultStrategy               = StrategyLRU
)

// Retention is a retention policy. Every limit is off when zero, so the
// zero value keeps everything; DefaultRetention is the default policy.
//
//	{"ttl": "1h", "max_session_bytes": 524288000, "strategy": "lru"}
type Retention struct {
	// TTL removes an artifact this long after its last access (lru) or
	// its creation (fifo, none). A Go duration string ("1h", "30m").
	// Defaults to DefaultRetentionTTL (1h) in the gateway; 0 keeps
	// artifacts forever.
	TTL Duration `json:"ttl,omitempty"`
	// MaxBytes caps the bytes of the whole store; gc evicts beyond it
	// (never refused at put). Defaults to 0: no cap.
	MaxBytes int64 `json:"max_bytes,omitempty"`
	// MaxArtifactBytes caps one artifact: a larger value is not stored,
	// and the result says so. Defaults to DefaultMaxArtifactBytes (50 MB).
	MaxArtifactBytes int64 `json:"max_artifact_bytes,omitempty"`
	// MaxSessionBytes caps the bytes of one session's artifacts.
	// Defaults to DefaultMaxSessionBytes (500 MB).
	MaxSessionBytes int64 `json:"max_session_bytes,omitempty"`
	// MaxTraceBytes caps the bytes of one trace's artifacts. Defaults to
	// DefaultMaxTraceBytes (100 MB).
	MaxTraceBytes int64 `json:"max_trace_bytes,omitempty"`
	// MaxArtifactsPerSession caps how many artifacts one session holds.
	// Defaults to DefaultMaxArtifactsPerSession (1000).
	MaxArtifactsPerSession int64 `json:"max_artifacts_per_session,omitempty"`
	// MaxArtifactsPerTrace caps how many artifacts one trace holds.
	// Defaults to DefaultMaxArtifactsPerTrace (100).
	MaxArtifactsPerTrace int64 `json:"max_artifacts_per_trace,omitempty"`
	// Strategy is "lru", "fifo" or "none" (see Strategy). Defaults to
	// "lru"; empty means lru.
	Strategy Strategy `json:"strategy,omitempty"`
	// DropOnSessionEnd deletes a session's artifacts when the session
	// closes (the gateway's sessions). Defaults to false.
	DropOnSessionEnd bool `json:"drop_on_session_end,omitempty"`
}

// DefaultRetention returns the default policy (docs/design.md,
// "The store's promises").
func DefaultRetention() Retention {
	return Retention{
		TTL:                    Duration(DefaultRetentionTTL),
		MaxArtifactBytes:       DefaultMaxArtifactBytes,
		MaxSessionBytes:        DefaultMaxSessionBytes,
		MaxTraceBytes:          DefaultMaxTraceBytes,
		MaxArtifactsPerSession: DefaultMaxArtifactsPerSession,
		MaxArtifactsPerTrace:   DefaultMaxArtifactsPerTrace,
		Strategy:               DefaultStrategy,
	}
}

// Check returns an error for a policy no store can apply.
func (r Retention) Check() error {
	switch r.Strategy {
	case "", StrategyLRU, StrategyFIFO, StrategyNone:
	default:
		return fmt.Errorf("strategy %q: want lru, fifo or none", r.Strategy)
	}
	for _, f := range []struct {
		name string
		v    int64
	}{{"ttl", int64(r.TTL)}, {"max_bytes", r.MaxBytes}, {"max_artifact_bytes", r.MaxArtifactBytes},
		{"max_session_bytes", r.MaxSessionBytes}, {"max_trace_bytes", r.MaxTraceBytes},
		{"max_artifacts_per_session", r.MaxArtifactsPerSession}, {"max_artifacts_per_trace", r.MaxArtifactsPerTrace}} {
		if f.v < 0 {
			return fmt.Errorf("%s is negative", f.name)
		}
	}
	return nil
}

// Evicts reports whether gc evicts to meet the limits (lru, fifo).
func (r Retention) Evicts() bool { return r.Strategy != StrategyNone }

// ByAccess reports whether order and TTL follow the last access (lru)
// rather than creation.
func (r Retention) ByAccess() bool { return r.Strategy == "" || r.Strategy == StrategyLRU }

// Expiry returns when an artifact created at created and last read at
// lastAccess expires by TTL; the zero time when the TTL is off.
func (r Retention) Expiry(created, lastAccess time.Time) time.Time {
	if r.TTL <= 0 {
		return time.Time{}
	}
	if r.ByAccess() && lastAccess.After(created) {
		return lastAccess.Add(time.Duration(r.TTL))
	}
	return created.Add(time.Duration(r.TTL))
}

// Quota is what a put under strategy none must not exceed: the store
// refuses (ErrQuotaExceeded) a new artifact that would take its session
// or trace past a limit. Zero fields are off.
type Quota struct {
	MaxSessionBytes        int64
	MaxTraceBytes          int64
	MaxArtifactsPerSession int64
	MaxArtifactsPerTrace   int64
}

// PutQuota is the Quota a put under r carries: the per-session and
// per-trace limits when r refuses instead of evicting (none), else none.
func (r Retention) PutQuota() Quota {
	if r.Evicts() {
		return Quota{}
	}
	return Quota{MaxSessionBytes: r.MaxSessionBytes, MaxTraceBytes: r.MaxTraceBytes,
		MaxArtifactsPerSession: r.MaxArtifactsPerSession, MaxArtifactsPerTrace: r.MaxArtifactsPerTrace}
}

// IsZero reports whether no limit is set.
func (q Quota) IsZero() bool { return q == Quota{} }

// LimitError says which limit refused a put. It matches ErrQuotaExceeded
// with errors.Is (or ErrTooLarge for max_artifact_bytes).
type LimitError struct {
	// Limit is the policy field's JSON name ("max_session_bytes").
	Limit string
	// Max is the limit's value; Used what the session or trace would hold.
	Max, Used int64
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s is %d, this artifact would take it to %d", e.Limit, e.Max, e.Used)
}

// Is makes a LimitError match ErrQuotaExceeded.
func (e *LimitError) Is(target error) bool { return target == ErrQuotaExceeded }

// CheckQuota returns a *LimitError when an artifact of size bytes, new to
// a session holding sessionCount artifacts of sessionBytes (and likewise
// a trace), would exceed q. Stores call it inside their write transaction.
func (q Quota) CheckQuota(size int64, session, trace Usage) error {
	switch {
	case session.Scoped && q.MaxArtifactsPerSession > 0 && session.Count+1 > q.MaxArtifactsPerSession:
		return &LimitError{Limit: "max_artifacts_per_session", Max: q.MaxArtifactsPerSession, Used: session.Count + 1}
	case session.Scoped && q.MaxSessionBytes > 0 && session.Bytes+size > q.MaxSessionBytes:
		return &LimitError{Limit: "max_session_bytes", Max: q.MaxSessionBytes, Used: session.Bytes + size}
	case trace.Scoped && q.MaxArtifactsPerTrace > 0 && trace.Count+1 > q.MaxArtifactsPerTrace:
		return &LimitError{Limit: "max_artifacts_per_trace", Max: q.MaxArtifactsPerTrace, Used: trace.Count + 1}
	case trace.Scoped && q.MaxTraceBytes > 0 && trace.Bytes+size > q.MaxTraceBytes:
		return &LimitError{Limit: "max_trace_bytes", Max: q.MaxTraceBytes, Used: trace.Bytes + size}
	}
	return nil
}

// Usage is what one session or trace holds; Scoped is false when the put
// names no session (or trace), which no limit then counts.
type Usage struct {
	Scoped       bool
	Count, Bytes int64
}

// Collector is implemented by stores that apply a retention policy
// themselves (fsstore in SQL, memstore in Go). Several collectors may run
// on one store at once, in one process or several.
type Collector interface {
	// Collect removes what policy says must go (expired by TTL, beyond a
	// limit when the strategy evicts) and reports it. With DryRun it
	// removes nothing and reports what it would remove.
	Collect(ctx context.Context, policy Retention, o CollectOptions) (CollectReport, error)
	// DropScope removes scope (a session: only SessionID set) from every
	// artifact put under it, and the artifacts left with no scope.
	DropScope(ctx context.Context, scope Scope) (CollectReport, error)
}

// CollectOptions tune one Collect.
type CollectOptions struct {
	// Now is the time TTLs are measured against; zero means time.Now().
	Now time.Time
	// DryRun reports without removing anything.
	DryRun bool
	// Each, when set, receives every removal as it happens and the
	// report's Removed stays empty: memory stays flat however much goes.
	Each func(Removal)
}

// Removal is one artifact a collector removed, and why.
type Removal struct {
	ID    string `json:"id"`
	Bytes int64  `json:"bytes"`
	// Why names the rule: "ttl", "max_session_bytes session=abc", …
	Why string `json:"why"`
}

// CollectReport is what one Collect removed.
type CollectReport struct {
	Removed []Removal `json:"removed,omitempty"`
	// Count and Bytes total every removal (also those given to Each).
	Count int   `json:"count"`
	Bytes int64 `json:"bytes"`
	// DryRun is set when nothing was removed.
	DryRun bool `json:"dry_run,omitempty"`
}

// Add counts r and keeps it (or hands it to each).
func (c *CollectReport) Add(r Removal, each func(Removal)) {
	c.Count++
	c.Bytes += r.Bytes
	if each != nil {
		each(r)
		return
	}
	c.Removed = append(c.Removed, r)
}

// AccessLister is implemented by stores that record when an artifact was
// last read: ListAccess is ListOrder with each ref's last access time.
type AccessLister interface {
	ListAccess(ctx context.Context, scope Scope, cursor string, order Order) (refs []Ref, lastAccess []time.Time, next string, err error)
}

// Duration is a time.Duration written as a Go duration string in JSON
// ("1h30m"); a bare number is seconds.
type Duration time.Duration

// MarshalJSON writes d as a duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a duration string, or a number of seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var secs float64
		if nerr := json.Unmarshal(b, &secs); nerr != nil {
			return fmt.Errorf("want a duration such as \"1h\": %w", err)
		}
		*d = Duration(secs * float64(time.Second))
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Held is an artifact as a collector weighs it against a Retention (for
// stores that choose in Go rather than in SQL).
type Held struct {
	ID   string
	Size int64
	// Created and LastAccess are Unix nanoseconds; LastAccess is at least
	// Created.
	Created, LastAccess int64
	// Order breaks ties between equal keys: the greater is the newer.
	Order  int64
	Scopes []Scope
}

// Choose returns the artifacts of held that r removes, each with why (a
// CollectReport reason: "ttl", "max_artifact_bytes",
// "max_artifacts_per_session session=ID", "max_session_bytes
// session=ID", the same for traces, "max_bytes"). The limits keep the
// newest artifacts, or the most recently read under lru; the first reason
// found for an artifact is the one given.
func (r Retention) Choose(held []Held, now time.Time) map[string]string {
	key := func(h *Held) int64 {
		if r.ByAccess() {
			return h.LastAccess
		}
		return h.Created
	}
	order := make([]*Held, len(held))
	for i := range held {
		order[i] = &held[i]
	}
	slices.SortFunc(order, func(a, b *Held) int {
		return cmp.Or(cmp.Compare(key(b), key(a)), cmp.Compare(b.Order, a.Order))
	})
	why := map[string]string{}
	pick := func(id, reason string) {
		if _, ok := why[id]; !ok {
			why[id] = reason
		}
	}
	for _, h := range order {
		if r.TTL > 0 && key(h) < now.Add(-time.Duration(r.TTL)).UnixNano() {
			pick(h.ID, "ttl")
		}
	}
	for _, h := range order {
		if r.MaxArtifactBytes > 0 && h.Size > r.MaxArtifactBytes {
			pick(h.ID, "max_artifact_bytes")
		}
	}
	if !r.Evicts() {
		return why
	}
	for _, g := range []struct {
		name               string
		field              func(Scope) string
		maxCount, maxBytes int64
	}{
		{"session", func(sc Scope) string { return sc.SessionID }, r.MaxArtifactsPerSession, r.MaxSessionBytes},
		{"trace", func(sc Scope) string { return sc.TraceID }, r.MaxArtifactsPerTrace, r.MaxTraceBytes},
	} {
		if g.maxCount == 0 && g.maxBytes == 0 {
			continue
		}
		type usage struct{ n, bytes int64 }
		used := map[string]*usage{}
		var picked [][2]string // id, why: applied after the pass, so one group's picks do not shift its own counts
		for _, h := range order {
			if _, gone := why[h.ID]; gone {
				continue
			}
			seen := map[string]bool{}
			for _, sc := range h.Scopes {
				k := g.field(sc)
				if k == "" || seen[k] {
					continue
				}
				seen[k] = true
				u := used[k]
				if u == nil {
					u = &usage{}
					used[k] = u
				}
				u.n++
				u.bytes += h.Size
				switch {
				case g.maxCount > 0 && u.n > g.maxCount:
					picked = append(picked, [2]string{h.ID, "max_artifacts_per_" + g.name + " " + g.name + "=" + k})
				case g.maxBytes > 0 && u.bytes > g.maxBytes:
					picked = append(picked, [2]string{h.ID, "max_" + g.name + "_bytes " + g.name + "=" + k})
				}
			}
		}
		for _, p := range picked {
			pick(p[0], p[1])
		}
	}
	if r.MaxBytes > 0 {
		var total int64
		for _, h := range order {
			if _, gone := why[h.ID]; gone {
				continue
			}
			if total += h.Size; total > r.MaxBytes {
				pick(h.ID, "max_bytes")
			}
		}
	}
	return why
}

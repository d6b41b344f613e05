package store

// Retention (docs/design.md, "The store's promises"): the policy that decides which artifacts go, the
// optional interface of stores that apply it, and what they report.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// ErrQuotaExceeded is returned by Put when storing the artifact would
// take its session, trace or owner past a limit of PutOptions.Quota
// (strategy none refuses instead of evicting). The error is a
// *LimitError.
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
	// per-session, per-trace or per-user limit are refused instead. The
	// TTL still applies, counted from creation.
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
	// DefaultMaxUserBytes and DefaultMaxArtifactsPerUser are two
	// sessions' worth: a principal that opens a new session for every
	// call still holds no more than that.
	DefaultMaxUserBytes        = 1024 << 20
	DefaultMaxArtifactsPerUser = 2000
	DefaultStrategy            = StrategyLRU
)

// Retention is a retention policy. Every limit is off when zero, so the
// zero value keeps everything; DefaultRetention is the default policy.
//
// Every limit but max_bytes and max_artifact_bytes is per principal: a
// session, a trace and a user are counted within their owner (tenant
// and user, see Owner), so that a caller naming another's session or
// trace id counts against its own, and reaching a limit removes (or
// refuses) only what that owner holds. An artifact several owners hold
// counts for each; when one owner's limit lets it go, that owner's
// scopes are removed from it and the others keep it (a release, see
// Removal).
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
	// MaxSessionBytes caps the bytes of one session's artifacts (of
	// one owner). Defaults to DefaultMaxSessionBytes (500 MB).
	MaxSessionBytes int64 `json:"max_session_bytes,omitempty"`
	// MaxTraceBytes caps the bytes of one trace's artifacts (of one
	// owner). Defaults to DefaultMaxTraceBytes (100 MB).
	MaxTraceBytes int64 `json:"max_trace_bytes,omitempty"`
	// MaxUserBytes caps the bytes of one owner's artifacts (a tenant
	// and user; the unauthenticated user is one owner) across all its
	// sessions and traces, so that opening sessions does not lift
	// max_session_bytes. Defaults to DefaultMaxUserBytes (1 GiB).
	MaxUserBytes int64 `json:"max_user_bytes,omitempty"`
	// MaxArtifactsPerSession caps how many artifacts one session holds.
	// Defaults to DefaultMaxArtifactsPerSession (1000).
	MaxArtifactsPerSession int64 `json:"max_artifacts_per_session,omitempty"`
	// MaxArtifactsPerTrace caps how many artifacts one trace holds.
	// Defaults to DefaultMaxArtifactsPerTrace (100).
	MaxArtifactsPerTrace int64 `json:"max_artifacts_per_trace,omitempty"`
	// MaxArtifactsPerUser caps how many artifacts one owner holds
	// across its sessions and traces. Defaults to
	// DefaultMaxArtifactsPerUser (2000).
	MaxArtifactsPerUser int64 `json:"max_artifacts_per_user,omitempty"`
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
		MaxUserBytes:           DefaultMaxUserBytes,
		MaxArtifactsPerUser:    DefaultMaxArtifactsPerUser,
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
		{"max_artifacts_per_session", r.MaxArtifactsPerSession}, {"max_artifacts_per_trace", r.MaxArtifactsPerTrace},
		{"max_user_bytes", r.MaxUserBytes}, {"max_artifacts_per_user", r.MaxArtifactsPerUser}} {
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
// refuses (ErrQuotaExceeded) a new artifact that would take its session,
// trace or owner past a limit, each counted within the put's owner.
// Zero fields are off.
type Quota struct {
	MaxSessionBytes        int64
	MaxTraceBytes          int64
	MaxUserBytes           int64
	MaxArtifactsPerSession int64
	MaxArtifactsPerTrace   int64
	MaxArtifactsPerUser    int64
}

// PutQuota is the Quota a put under r carries: the per-session,
// per-trace and per-user limits when r refuses instead of evicting
// (none), else none.
func (r Retention) PutQuota() Quota {
	if r.Evicts() {
		return Quota{}
	}
	return Quota{MaxSessionBytes: r.MaxSessionBytes, MaxTraceBytes: r.MaxTraceBytes, MaxUserBytes: r.MaxUserBytes,
		MaxArtifactsPerSession: r.MaxArtifactsPerSession, MaxArtifactsPerTrace: r.MaxArtifactsPerTrace,
		MaxArtifactsPerUser: r.MaxArtifactsPerUser}
}

// IsZero reports whether no limit is set.
func (q Quota) IsZero() bool { return q == Quota{} }

// LimitError says which limit refused a put. It matches ErrQuotaExceeded
// with errors.Is (or ErrTooLarge for max_artifact_bytes).
type LimitError struct {
	// Limit is the policy field's JSON name ("max_session_bytes").
	Limit string
	// Max is the limit's value; Used what the session, trace or owner
	// would hold.
	Max, Used int64
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s is %d, this artifact would take it to %d", e.Limit, e.Max, e.Used)
}

// Is makes a LimitError match ErrQuotaExceeded.
func (e *LimitError) Is(target error) bool { return target == ErrQuotaExceeded }

// CheckQuota returns a *LimitError when an artifact of size bytes, new to
// a session holding session.Count artifacts of session.Bytes (and likewise
// its trace and its owner), would exceed q. Stores call it inside their
// write transaction, with usages counted within the put's owner.
func (q Quota) CheckQuota(size int64, session, trace, user Usage) error {
	for _, c := range []struct {
		u                  Usage
		name               string
		maxCount, maxBytes int64
	}{
		{session, "session", q.MaxArtifactsPerSession, q.MaxSessionBytes},
		{trace, "trace", q.MaxArtifactsPerTrace, q.MaxTraceBytes},
		{user, "user", q.MaxArtifactsPerUser, q.MaxUserBytes},
	} {
		switch {
		case !c.u.Scoped:
		case c.maxCount > 0 && c.u.Count+1 > c.maxCount:
			return &LimitError{Limit: "max_artifacts_per_" + c.name, Max: c.maxCount, Used: c.u.Count + 1}
		case c.maxBytes > 0 && c.u.Bytes+size > c.maxBytes:
			return &LimitError{Limit: "max_" + c.name + "_bytes", Max: c.maxBytes, Used: c.u.Bytes + size}
		}
	}
	return nil
}

// Check is CheckQuota over held, what a store holds (for stores that
// count in Go rather than in SQL): an artifact of size bytes put under
// sc, id being the artifact when it exists already ("" for new content):
// a session, trace or owner that holds it already gains nothing.
func (q Quota) Check(held []Held, sc Scope, id string, size int64) error {
	usage := func(in func(Scope) bool) Usage {
		var u Usage
		for _, h := range held {
			if !slices.ContainsFunc(h.Scopes, func(o HeldScope) bool { return in(o.Scope) }) {
				continue
			}
			if h.ID == id {
				return Usage{}
			}
			u.Count++
			u.Bytes += h.Size
		}
		u.Scoped = true
		return u
	}
	owner := sc.Owner()
	var session, trace Usage
	if sc.SessionID != "" {
		session = usage(func(o Scope) bool { return owner.Holds(o) && o.SessionID == sc.SessionID })
	}
	if sc.TraceID != "" {
		trace = usage(func(o Scope) bool { return owner.Holds(o) && o.TraceID == sc.TraceID })
	}
	return q.CheckQuota(size, session, trace, usage(owner.Holds))
}

// Usage is what one session, trace or owner holds; Scoped is false when
// the put names no session (or trace), which no limit then counts, or
// when the group holds the artifact already.
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
	// artifact put under it, and the artifacts left with no scope (the
	// gateway's session ids are its own, whoever the session's owner).
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

// Removal is one artifact a collector removed, or released, and why.
type Removal struct {
	ID string `json:"id"`
	// Bytes is what the store freed: the artifact's size, 0 for a
	// release.
	Bytes int64 `json:"bytes"`
	// Why names the rule, and the owner and session or trace it counted
	// for: "ttl", "max_session_bytes session=abc",
	// "max_user_bytes tenant=acme user=alice", …
	Why string `json:"why"`
	// Released, when set, makes this a release: these scopes let the
	// artifact go while other scopes (other owners, other sessions)
	// still hold it, so it stays, and only what counted it under these
	// scopes no longer does.
	Released []Scope `json:"released,omitempty"`
}

// CollectReport is what one Collect removed and released.
type CollectReport struct {
	Removed []Removal `json:"removed,omitempty"`
	// Count and Bytes total every removal and release (also those given
	// to Each).
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
// EachAccess reads the same page but hands each ref and its last access
// to each as the store reads it, so that a caller such as mcpx artifacts
// ls shows the first row without waiting for the page to be whole; it
// returns the cursor of the next page, and an error from each stops the
// page and is returned as it is. each runs while the page is being read:
// a slow one keeps that read open (writers of the store go on).
type AccessLister interface {
	ListAccess(ctx context.Context, scope Scope, cursor string, order Order) (refs []Ref, lastAccess []time.Time, next string, err error)
	EachAccess(ctx context.Context, scope Scope, cursor string, order Order, each func(Ref, time.Time) error) (next string, err error)
}

// Held is an artifact as a collector weighs it against a Retention (for
// stores that choose in Go rather than in SQL).
type Held struct {
	ID   string
	Size int64
	// Created and LastAccess are Unix nanoseconds; LastAccess is at least
	// the Created of every scope (a put under any scope is a use).
	Created, LastAccess int64
	// Order breaks ties between equal keys: the greater is the newer.
	Order  int64
	Scopes []HeldScope
}

// HeldScope is one scope a Held artifact was put under, and when it
// first was (Unix nanoseconds).
type HeldScope struct {
	Scope   Scope
	Created int64
}

// Chosen is what Choose decides for one artifact: which of its scopes
// go (indices into Held.Scopes, ascending) and why (the first reason
// found); All when every scope goes, and with them the artifact.
type Chosen struct {
	Why    string
	Scopes []int
	All    bool
}

// Removal returns the report of c applied to h: a removal when the
// artifact goes, else a release of the scopes that go.
func (c Chosen) Removal(h Held) Removal {
	if c.All {
		return Removal{ID: h.ID, Bytes: h.Size, Why: c.Why}
	}
	r := Removal{ID: h.ID, Why: c.Why}
	for _, i := range c.Scopes {
		r.Released = append(r.Released, h.Scopes[i].Scope)
	}
	return r
}

// Choose returns what r removes of held, by artifact id (see Chosen).
// The reasons are "ttl", "max_artifact_bytes",
// "max_artifacts_per_session session=ID", "max_session_bytes
// session=ID" (each with " tenant=T user=U" before the session when
// the owner has them), the same for traces, "max_artifacts_per_user"
// and "max_user_bytes" (with the owner), and "max_bytes". The TTL runs
// per scope (fifo and none: from the scope's creation; lru: from the
// artifact's last use). The session, trace and user limits count and
// remove within one owner: past one, that owner's scopes of the
// artifacts beyond it go, and the artifact goes only when no scope is
// left. max_artifact_bytes and max_bytes remove whole artifacts. The
// limits keep the newest artifacts, or the most recently read under
// lru; the first reason found for an artifact is the one given.
func (r Retention) Choose(held []Held, now time.Time) map[string]Chosen {
	lru := r.ByAccess()
	key := func(h *Held) int64 {
		if lru {
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
	gone := map[*Held][]bool{}
	whole := map[*Held]bool{}
	why := map[*Held]string{}
	live := func(h *Held, i int) bool { return gone[h] == nil || !gone[h][i] }
	drop := func(h *Held, i int, reason string) {
		if gone[h] == nil {
			gone[h] = make([]bool, len(h.Scopes))
		}
		gone[h][i] = true
		if _, ok := why[h]; !ok {
			why[h] = reason
		}
	}
	dropAll := func(h *Held, reason string) {
		whole[h] = true
		if _, ok := why[h]; !ok {
			why[h] = reason
		}
		for i := range h.Scopes {
			drop(h, i, reason)
		}
	}
	if r.TTL > 0 {
		cut := now.Add(-time.Duration(r.TTL)).UnixNano()
		for _, h := range order {
			for i, sc := range h.Scopes {
				k := sc.Created
				if lru {
					k = max(h.LastAccess, sc.Created)
				}
				if k < cut {
					drop(h, i, "ttl")
				}
			}
		}
	}
	for _, h := range order {
		if r.MaxArtifactBytes > 0 && h.Size > r.MaxArtifactBytes {
			dropAll(h, "max_artifact_bytes")
		}
	}
	if r.Evicts() {
		for _, g := range []struct {
			name               string
			field              func(Scope) string
			maxCount, maxBytes int64
		}{
			{"session", func(sc Scope) string { return sc.SessionID }, r.MaxArtifactsPerSession, r.MaxSessionBytes},
			{"trace", func(sc Scope) string { return sc.TraceID }, r.MaxArtifactsPerTrace, r.MaxTraceBytes},
			{"user", nil, r.MaxArtifactsPerUser, r.MaxUserBytes},
		} {
			if g.maxCount > 0 || g.maxBytes > 0 {
				r.chooseInGroups(order, g.name, g.field, g.maxCount, g.maxBytes, live, drop)
			}
		}
		if r.MaxBytes > 0 {
			var total int64
			for _, h := range order {
				if whole[h] || (gone[h] != nil && !slices.Contains(gone[h], false)) {
					continue // gone already
				}
				if total += h.Size; total > r.MaxBytes {
					dropAll(h, "max_bytes")
				}
			}
		}
	}
	out := make(map[string]Chosen, len(why))
	for h, reason := range why {
		c := Chosen{Why: reason, All: whole[h]}
		for i, g := range gone[h] {
			if g {
				c.Scopes = append(c.Scopes, i)
			}
		}
		c.All = c.All || len(c.Scopes) == len(h.Scopes)
		out[h.ID] = c
	}
	return out
}

// chooseInGroups applies one kind of per-principal limit (session,
// trace: field names the group within the owner; user: field is nil)
// to order, newest first: within each group, the artifacts past
// maxCount, or past maxBytes counted newest first, lose the group's
// scopes. The picks are applied after the pass, so that one group's
// picks do not shift its own counts.
func (r Retention) chooseInGroups(order []*Held, name string, field func(Scope) string, maxCount, maxBytes int64,
	live func(*Held, int) bool, drop func(*Held, int, string)) {
	type group struct {
		owner Owner
		k     string
	}
	type member struct {
		h       *Held
		scopes  []int
		created int64 // the earliest of scopes: the group's fifo key
	}
	members := map[group][]*member{}
	var groups []group
	for _, h := range order {
		var mine map[group]*member
		for i, sc := range h.Scopes {
			if !live(h, i) {
				continue
			}
			g := group{owner: sc.Scope.Owner()}
			if field != nil {
				if g.k = field(sc.Scope); g.k == "" {
					continue
				}
			}
			m := mine[g]
			if m == nil {
				if mine == nil {
					mine = map[group]*member{}
				}
				m = &member{h: h, created: sc.Created}
				mine[g] = m
				if members[g] == nil {
					groups = append(groups, g)
				}
				members[g] = append(members[g], m)
			}
			m.scopes = append(m.scopes, i)
			m.created = min(m.created, sc.Created)
		}
	}
	type pick struct {
		m   *member
		why string
	}
	var picks []pick
	for _, g := range groups {
		ms := members[g]
		if !r.ByAccess() {
			slices.SortStableFunc(ms, func(a, b *member) int {
				return cmp.Or(cmp.Compare(b.created, a.created), cmp.Compare(b.h.Order, a.h.Order))
			})
		}
		who := ""
		if g.owner.TenantID != "" {
			who += " tenant=" + g.owner.TenantID
		}
		if g.owner.UserID != "" {
			who += " user=" + g.owner.UserID
		}
		if field != nil {
			who += " " + name + "=" + g.k
		}
		var n, used int64
		for _, m := range ms {
			n++
			used += m.h.Size
			switch {
			case maxCount > 0 && n > maxCount:
				picks = append(picks, pick{m, "max_artifacts_per_" + name + who})
			case maxBytes > 0 && used > maxBytes:
				picks = append(picks, pick{m, "max_" + name + "_bytes" + who})
			}
		}
	}
	for _, p := range picks {
		for _, i := range p.m.scopes {
			drop(p.m.h, i, p.why)
		}
	}
}

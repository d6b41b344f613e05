package web

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpx-dev/mcpx/engine"
)

// Query parameters of a download URL.
const (
	paramExpires = "exp"
	paramSession = "sid"
	paramKeyID   = "kid"
	paramSig     = "sig"
)

// DefaultTTL is how long a URL stays valid when SignerConfig.TTL is zero.
const DefaultTTL = 15 * time.Minute

// reloadEvery bounds how often a URL signed with a key this process does
// not know rereads the key ring (another replica may have rotated).
const reloadEvery = 10 * time.Second

// Errors of Verify; the handler answers 403 for each.
var (
	ErrBadSignature = errors.New("web: bad signature")
	ErrExpired      = errors.New("web: link expired")
)

// SignerConfig configures a Signer.
type SignerConfig struct {
	// BaseURL is where the HTTP surface is reachable ("http://host:port",
	// an optional path prefix kept). Required.
	BaseURL string
	// Keys is the key ring: the first signs, all verify (see KeyRing).
	// Defaults to Secret as the only key.
	Keys []Key
	// Secret is the HMAC key when Keys is empty. Defaults to 32 random
	// bytes: URLs then stop working when the process restarts (use
	// LoadKeys to keep a ring with the store).
	Secret []byte
	// Keeper, when set, is reread (at most every 10s) when a URL names a
	// key the ring lacks: a key another replica rotated in.
	Keeper KeyKeeper
	// TTL is how long a URL stays valid. Defaults to DefaultTTL.
	TTL time.Duration
	// Now is the clock (tests). Defaults to time.Now.
	Now func() time.Time
}

// Signer makes and checks capability URLs for artifacts. It implements
// engine.Linker and is safe for concurrent use.
type Signer struct {
	base   *url.URL
	keys   atomic.Pointer[[]Key]
	keeper KeyKeeper
	ttl    time.Duration
	now    func() time.Time

	reloadMu   sync.Mutex
	lastReload time.Time
}

// NewSigner checks c and returns a Signer.
func NewSigner(c SignerConfig) (*Signer, error) {
	u, err := url.Parse(strings.TrimRight(c.BaseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("web: base URL %q: want an absolute http(s) URL", c.BaseURL)
	}
	s := &Signer{base: u, ttl: c.TTL, now: c.Now, keeper: c.Keeper}
	keys := c.Keys
	if len(keys) == 0 {
		secret := c.Secret
		if len(secret) == 0 {
			secret = make([]byte, 32)
			if _, err := rand.Read(secret); err != nil {
				return nil, fmt.Errorf("web: secret: %w", err)
			}
		}
		keys = []Key{{Secret: secret}}
	}
	for _, k := range keys {
		if len(k.Secret) == 0 {
			return nil, fmt.Errorf("web: key %q has no secret", k.ID)
		}
	}
	s.keys.Store(&keys)
	if s.ttl <= 0 {
		s.ttl = DefaultTTL
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s, nil
}

// TTL returns how long the URLs it makes stay valid.
func (s *Signer) TTL() time.Duration { return s.ttl }

// SetKeys replaces the key ring (after a rotation): the first signs from
// now on, all verify.
func (s *Signer) SetKeys(keys []Key) {
	if len(keys) > 0 {
		s.keys.Store(&keys)
	}
}

// ArtifactURL returns a signed URL for ref, valid for the TTL and bound
// to ref's session. It implements engine.Linker.
func (s *Signer) ArtifactURL(ref engine.ArtifactRef) string {
	sid := ""
	if ref.Scope != nil {
		sid = ref.Scope.SessionID
	}
	return s.URL(ref.ID, sid)
}

// URL returns a signed URL for artifact id in session sid, signed with
// the ring's first key and naming it ("kid").
func (s *Signer) URL(id, sid string) string {
	exp := s.now().Add(s.ttl).Unix()
	k := (*s.keys.Load())[0]
	q := url.Values{}
	q.Set(paramExpires, strconv.FormatInt(exp, 10))
	if sid != "" {
		q.Set(paramSession, sid)
	}
	if k.ID != "" {
		q.Set(paramKeyID, k.ID)
	}
	q.Set(paramSig, sign(k.Secret, id, sid, exp))
	u := *s.base
	u.Path = u.Path + "/artifacts/" + url.PathEscape(id)
	u.RawQuery = q.Encode()
	return u.String()
}

func sign(secret []byte, id, sid string, exp int64) string {
	m := hmac.New(sha256.New, secret)
	fmt.Fprintf(m, "v1\n%s\n%s\n%d", id, sid, exp)
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Verify checks a download request's signature and expiry and returns the
// session the URL was issued for. A URL names its key ("kid"); one
// without (made before key rings) is checked against every key.
func (s *Signer) Verify(id string, q url.Values) (string, error) {
	exp, err := strconv.ParseInt(q.Get(paramExpires), 10, 64)
	if err != nil {
		return "", fmt.Errorf("%w: no expiry", ErrBadSignature)
	}
	sid, kid, got := q.Get(paramSession), q.Get(paramKeyID), []byte(q.Get(paramSig))
	match := func(keys []Key) (known, ok bool) {
		for _, k := range keys {
			if kid != "" && k.ID != kid {
				continue
			}
			known = true
			if hmac.Equal([]byte(sign(k.Secret, id, sid, exp)), got) {
				return true, true
			}
		}
		return known, false
	}
	known, ok := match(*s.keys.Load())
	if !known && kid != "" && s.reload() {
		_, ok = match(*s.keys.Load())
	}
	if !ok {
		return "", ErrBadSignature
	}
	if s.now().Unix() > exp {
		return "", fmt.Errorf("%w at %s", ErrExpired, time.Unix(exp, 0).UTC().Format(time.RFC3339))
	}
	return sid, nil
}

// reload rereads the key ring from the keeper, at most every
// reloadEvery; it reports whether it did.
func (s *Signer) reload() bool {
	if s.keeper == nil {
		return false
	}
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	now := time.Now()
	if now.Sub(s.lastReload) < reloadEvery {
		return false
	}
	s.lastReload = now
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ring, err := readRing(ctx, s.keeper)
	if err != nil || len(ring.Keys) == 0 {
		return false
	}
	s.SetKeys(ring.Keys)
	return true
}

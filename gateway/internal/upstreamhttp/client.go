package upstreamhttp

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// pools are a transport's HTTP clients. Calls go through one pool; what a
// call may wait on (the answer to a server's request, a notification, the
// long-lived GET stream) through the other, so that calls holding every
// connection of theirs cannot keep back the answer one of them waits for.
// Each pool opens at most Config.MaxConnsPerHost connections: past that,
// requests wait for one instead of each opening a socket.
type pools struct {
	calls  *http.Client
	others *http.Client
	// owned: the transport built the pools and closes their idle
	// connections when it ends.
	owned bool
}

// newPools returns the pools of cfg: Config.Client for both when set, else
// two of Config.MaxConnsPerHost connections. Either way, a redirect off
// origin's origin is refused.
func newPools(cfg Config, origin *url.URL) pools {
	if cfg.Client != nil {
		c := *cfg.Client
		c.CheckRedirect = sameOriginRedirects(origin, cfg.Client.CheckRedirect)
		return pools{calls: &c, others: &c}
	}
	maxConns := cfg.MaxConnsPerHost
	if maxConns <= 0 {
		maxConns = DefaultMaxConnsPerHost
	}
	pool := func() *http.Client {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxConnsPerHost = maxConns
		// Idle connections are kept up to the cap (Go's default keeps 2
		// and reconnects for the rest).
		tr.MaxIdleConnsPerHost = maxConns
		tr.MaxIdleConns = maxConns
		return &http.Client{Transport: tr, CheckRedirect: sameOriginRedirects(origin, nil)}
	}
	return pools{calls: pool(), others: pool(), owned: true}
}

// closeIdle closes the idle connections of pools the transport built.
func (p pools) closeIdle() {
	if p.owned {
		p.calls.CloseIdleConnections()
		p.others.CloseIdleConnections()
	}
}

// maxRedirects is Go's default bound on a chain of redirects.
const maxRedirects = 10

// sameOriginRedirects is a CheckRedirect that follows a redirect only
// within origin's origin (scheme, host and port), then asks next (Go's
// default when nil). Go's client re-sends the request's headers (an
// API key, the session ID; Authorization to a host it deems related)
// and, for 307 and 308, its body to wherever a redirect points, so one
// off origin is an error naming both origins.
func sameOriginRedirects(origin *url.URL, next func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	want := originOf(origin)
	return func(req *http.Request, via []*http.Request) error {
		if got := originOf(req.URL); got != want {
			return fmt.Errorf("%w: %s redirects to %s", ErrCrossOriginRedirect, want, got)
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= maxRedirects {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
}

// originOf is u's origin as "scheme://host:port", the port made explicit.
func originOf(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		switch scheme {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	host := strings.ToLower(u.Hostname())
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return scheme + "://" + host + ":" + port
}

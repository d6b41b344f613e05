package auth

import (
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// hostAllowed reports whether a loopback listener may answer a request
// for host (the Host header): a DNS-rebinding page reaches 127.0.0.1
// under its own name, which is not a loopback name.
func (a *Authenticator) hostAllowed(host string) bool {
	if slices.ContainsFunc(a.c.AllowedHosts, func(h string) bool { return strings.EqualFold(h, host) }) {
		return true
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return isLoopbackName(strings.Trim(host, "[]"))
}

// originAllowed reports whether a browser page of origin may call a
// loopback listener: loopback origins and the configured ones.
func (a *Authenticator) originAllowed(origin string) bool {
	if origin == "" {
		return true // not a browser
	}
	if slices.Contains(a.c.AllowedOrigins, origin) {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false // "null" (sandboxed frames, file:) included
	}
	return isLoopbackName(u.Hostname())
}

func isLoopbackName(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CheckHost answers 403 and returns false for a request to a loopback
// listener whose Host is not a loopback name or an allowed host (DNS
// rebinding); on other listeners it passes everything, tokens protecting
// those. Guard runs it for the HTTP API and the UI, and the gateway for
// /mcp, whose Origin rule is its own (serve.allowed_origins).
func (a *Authenticator) CheckHost(w http.ResponseWriter, r *http.Request) bool {
	if !a.loopback || a.hostAllowed(r.Host) {
		return true
	}
	a.log.Info("refused: Host is not loopback", "host", r.Host)
	http.Error(w, "forbidden: Host is not a loopback name (DNS rebinding?)", http.StatusForbidden)
	return false
}

// Guard refuses (403) requests to a loopback listener whose Host is not a
// loopback name or an allowed host (CheckHost), or whose Origin is a page
// of another site: DNS rebinding. On other listeners it passes
// everything; tokens protect those.
func (a *Authenticator) Guard(next http.Handler) http.Handler {
	if !a.loopback {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !a.CheckHost(w, r) {
			return
		}
		if !a.originAllowed(r.Header.Get("Origin")) {
			a.log.Info("refused: cross-site Origin", "origin", r.Header.Get("Origin"))
			http.Error(w, "forbidden: Origin not allowed", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

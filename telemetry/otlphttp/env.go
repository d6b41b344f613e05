package otlphttp

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"
)

// envPrefix names the OpenTelemetry exporter's variables; each is read
// with _TRACES_ after the prefix first, then without.
const envPrefix = "OTEL_EXPORTER_OTLP_"

// FromEnv reads the exporter configuration from the standard
// environment (the OpenTelemetry specification's "OTLP Exporter
// Configuration"): OTEL_EXPORTER_OTLP_ENDPOINT (a base URL; spans go to
// its /v1/traces) or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (the URL as is),
// _HEADERS (name=value pairs, comma-separated, values URL-encoded),
// _COMPRESSION (gzip or none), _TIMEOUT (milliseconds), _CERTIFICATE (a
// PEM file of CAs), _CLIENT_CERTIFICATE and _CLIENT_KEY, each also as
// _TRACES_ variants that win. As the specification asks, a value that
// cannot be used is left out and reported in the returned errors, for
// the caller to log; URL is "" when neither endpoint is set. _PROTOCOL
// other than http/protobuf is reported too: spans go as protobuf, which
// collectors accept.
func FromEnv() (Config, []error) {
	var c Config
	var problems []error
	bad := func(name, v, want string) {
		problems = append(problems, fmt.Errorf("otlphttp: %s=%q ignored: want %s", name, v, want))
	}
	get := func(name string) (string, string, bool) {
		for _, n := range []string{envPrefix + "TRACES_" + name, envPrefix + name} {
			if v := strings.TrimSpace(os.Getenv(n)); v != "" {
				return n, v, true
			}
		}
		return "", "", false
	}
	if v := strings.TrimSpace(os.Getenv(envPrefix + "TRACES_ENDPOINT")); v != "" {
		c.URL = v
		if u, err := url.Parse(v); err == nil && u.Path == "" {
			u.Path = "/"
			c.URL = u.String()
		}
	} else if v := strings.TrimSpace(os.Getenv(envPrefix + "ENDPOINT")); v != "" {
		c.URL = v
		if u, err := url.Parse(v); err == nil {
			u.Path = path.Join(u.Path, "/v1/traces")
			c.URL = u.String()
		}
	}
	if n, v, ok := get("HEADERS"); ok {
		c.Headers = map[string]string{}
		for pair := range strings.SplitSeq(v, ",") {
			k, val, found := strings.Cut(pair, "=")
			k = strings.TrimSpace(k)
			dec, err := url.PathUnescape(val)
			if !found || !httpguts.ValidHeaderFieldName(k) || err != nil {
				bad(n, pair, "name=value with a header name and a URL-encoded value")
				continue
			}
			c.Headers[k] = strings.TrimSpace(dec)
		}
	}
	if n, v, ok := get("COMPRESSION"); ok {
		switch v {
		case "gzip":
			c.Gzip = true
		case "none":
		default:
			bad(n, v, "gzip or none")
		}
	}
	if n, v, ok := get("TIMEOUT"); ok {
		if ms, err := strconv.Atoi(v); err == nil && ms > 0 {
			c.Timeout = time.Duration(ms) * time.Millisecond
		} else {
			bad(n, v, "a positive number of milliseconds")
		}
	}
	if n, v, ok := get("PROTOCOL"); ok && v != "http/protobuf" {
		bad(n, v, "http/protobuf (spans are sent as protobuf)")
	}
	var tlsConf tls.Config
	if n, v, ok := get("CERTIFICATE"); ok {
		pem, err := os.ReadFile(v)
		pool := x509.NewCertPool()
		if err != nil || !pool.AppendCertsFromPEM(pem) {
			bad(n, v, "a readable PEM file of CA certificates")
		} else {
			tlsConf.RootCAs = pool
		}
	}
	if n, cert, ok := get("CLIENT_CERTIFICATE"); ok {
		kn, key, _ := get("CLIENT_KEY")
		if pair, err := tls.LoadX509KeyPair(cert, key); err != nil {
			bad(n+" and "+kn, cert+", "+key, fmt.Sprintf("a PEM certificate and key (%v)", err))
		} else {
			tlsConf.Certificates = []tls.Certificate{pair}
		}
	}
	if tlsConf.RootCAs != nil || tlsConf.Certificates != nil {
		c.TLS = &tlsConf
	}
	return c, problems
}

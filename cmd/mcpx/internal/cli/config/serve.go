package config

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mcpx-dev/mcpx/auth"
	gatewayconfig "github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/internal/redact"
	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/telemetry"
	"github.com/mcpx-dev/mcpx/web"
)

// Serve configures "mcpx serve" over HTTP.
type Serve struct {
	// Listen is the address of the HTTP surface (MCP at /mcp, artifact
	// downloads at /artifacts/{id}); --listen overrides it. Defaults to ""
	// (serve MCP over stdio, no HTTP).
	Listen string `json:"listen,omitempty"`
	// BaseURL is the external URL of the HTTP surface, used in download
	// links (behind a proxy). Defaults to http://{listen}.
	BaseURL string `json:"base_url,omitempty"`
	// AllowedOrigins are the browser origins allowed to call /mcp (the
	// Origin header; DNS-rebinding protection). Defaults to loopback
	// origins only.
	AllowedOrigins []string `json:"allowed_origins,omitempty"`
	// Tokens maps bearer tokens to the identity they authenticate; when
	// set, /mcp requires "Authorization: Bearer TOKEN" and the identity is
	// injected as "username" into tools that declare it. Defaults to none
	// (no authentication: keep Listen on loopback).
	Tokens map[string]string `json:"tokens,omitempty"`
	// URLSecret signs artifact download URLs (HMAC-SHA256) as the only
	// key, in place of the kept key ring. Defaults to "": the ring kept
	// with the store (see URLKeyFile), so URLs survive a restart.
	URLSecret string `json:"url_secret,omitempty"`
	// URLKeyFile is the file of the URL-signing key ring (mode 0600,
	// made on first start). Defaults to url-signing-keys.json in the
	// fsstore folder, or the object keys/url-signing.json of the S3 store.
	URLKeyFile string `json:"url_key_file,omitempty"`
	// URLKeyRotation makes a new signing key when the current one is this
	// old ("720h"), checked at start and hourly; older keys verify until
	// the URLs they signed expire. Defaults to 0: never rotate.
	URLKeyRotation store.Duration `json:"url_key_rotation,omitempty"`
	// Auth is the access control of the HTTP API (/artifacts, /events,
	// /resources, /transform): static tokens with tenant and user, JWTs
	// against a JWKS, the protected-resource metadata, Host/Origin
	// checks and rate limits (see auth.Config). Tokens also accepts the
	// identities of serve.tokens. Defaults to none: a loopback listener
	// has one local user who sees everything; any other refuses the API.
	Auth auth.Config `json:"auth,omitzero"`
	// Telemetry says where OpenTelemetry traces of tools/call go (an
	// OTLP/HTTP collector; see telemetry.TracingConfig). Defaults to
	// none: off, unless OTEL_EXPORTER_OTLP_ENDPOINT is set.
	Telemetry telemetry.TracingConfig `json:"telemetry,omitzero"`
	// API bounds the HTTP API's event buffer, streams and transform body
	// (see web.Limits). Defaults to web.Limits' defaults.
	API web.Limits `json:"api,omitzero"`
	// URLTTL is how long a download URL stays valid ("15m"). Defaults to
	// DefaultURLTTL.
	URLTTL store.Duration `json:"url_ttl,omitempty"`
	// Limits bound message sizes, buffers, sessions, stderr logging and
	// the HTTP listener's timeouts (see gatewayconfig.Limits; "mcpx wrap" uses
	// them too). Defaults to gatewayconfig.Limits' defaults.
	Limits gatewayconfig.Limits `json:"limits,omitzero"`
	// Profiles fit results to the client by the prefix of its
	// clientInfo.name (case-insensitive, longest first): {"claude-code":
	// {"max_tokens": 25000, "images": true}}. They add to and replace
	// the built-in ones (see gateway.Options.Profiles); "default"
	// applies to any other client.
	// Defaults to the built-in profiles only.
	Profiles map[string]gatewayconfig.Profile `json:"profiles,omitempty"`
	// ArtifactTools configure the artifacts_query and artifacts_search
	// tools (names, answer budget, query time and memory caps, search
	// hits) and the text limit of resources/read of a text artifact
	// ("mcpx wrap" uses them too). See gatewayconfig.ArtifactToolsOptions.
	// Defaults to its defaults: both tools offered, 10,000 characters an
	// answer, 1 MiB of text a resources/read.
	ArtifactTools gatewayconfig.ArtifactToolsOptions `json:"artifact_tools,omitzero"`

	// secrets are the values ${VAR} substitution took from the
	// environment, by variable name.
	secrets map[string]string
}

// Secrets returns the values that ${VAR} substitution took from the
// environment, by variable name: mcpx masks them wherever it prints text
// (see internal/redact). Defaults from ${VAR:-default} are not secrets.
func (f File) Secrets() map[string]string { return f.Serve.secrets }

// DefaultURLTTL is how long signed artifact URLs stay valid by default.
const DefaultURLTTL = 15 * time.Minute

// TTL returns URLTTL with its default applied.
func (s Serve) TTL() time.Duration {
	if s.URLTTL <= 0 {
		return DefaultURLTTL
	}
	return time.Duration(s.URLTTL)
}

// envRef matches ${VAR} and ${VAR:-default}; compiled on first use, not
// in every mcpx process's init (BENCHMARKS.md, "Start-up").
var envRef = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)
})

// Expand replaces ${VAR} and ${VAR:-default} in s using lookup. A VAR
// that is unset or set to "" takes the default, as in the shell's ":-";
// without a default it is an error naming it, because an empty token or
// URL is a mistake that would otherwise surface later as a confusing
// upstream failure. "$${" escapes a literal "${".
func Expand(s string, lookup func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	const esc = "\x00dollar\x00"
	s = strings.ReplaceAll(s, "$${", esc)
	var missing []string
	re := envRef()
	out := re.ReplaceAllStringFunc(s, func(m string) string {
		sub := re.FindStringSubmatch(m)
		if v, ok := lookup(sub[1]); ok && v != "" {
			return v
		}
		if sub[2] != "" {
			return sub[3]
		}
		missing = append(missing, sub[1])
		return m
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("environment variable %s is not set or is empty (write ${%s:-default} for a fallback)", missing[0], missing[0])
	}
	return strings.ReplaceAll(out, esc, "${"), nil
}

// expandAndCheck substitutes environment variables in mcpServers and serve,
// and checks those sections.
func (f *File) expandAndCheck(lookup func(string) (string, bool)) error {
	secrets := map[string]string{}
	recorded := func(name string) (string, bool) {
		v, ok := lookup(name)
		if ok && v != "" {
			secrets[name] = v
		}
		return v, ok
	}
	err := f.expandAndCheckWith(recorded)
	f.Serve.secrets = secrets
	if err != nil {
		// a check may quote an expanded value (an invalid URL)
		return &maskedError{msg: redact.New(secrets).String(err.Error()), err: err}
	}
	return nil
}

// maskedError is an error whose message has its secrets masked; it
// unwraps to the original.
type maskedError struct {
	msg string
	err error
}

func (e *maskedError) Error() string { return e.msg }
func (e *maskedError) Unwrap() error { return e.err }

func (f *File) expandAndCheckWith(lookup func(string) (string, bool)) error {
	for _, name := range sortedNames(f.MCPServers) {
		s := f.MCPServers[name]
		at := "mcpServers." + name
		var err error
		ex := func(field string, v *string) {
			if err != nil {
				return
			}
			var e error
			if *v, e = Expand(*v, lookup); e != nil {
				err = fmt.Errorf("%s.%s: %w", at, field, e)
			}
		}
		ex("command", &s.Command)
		ex("cwd", &s.Cwd)
		ex("url", &s.URL)
		ex("type", &s.Type)
		for i := range s.Args {
			ex(fmt.Sprintf("args[%d]", i), &s.Args[i])
		}
		s.Env = expandMap(s.Env, at+".env", lookup, &err)
		s.Headers = expandMap(s.Headers, at+".headers", lookup, &err)
		if err != nil {
			return err
		}
		if err := s.Validate(name); err != nil {
			return err
		}
		f.MCPServers[name] = s
	}
	var err error
	for _, p := range []struct {
		field string
		v     *string
	}{{"listen", &f.Serve.Listen}, {"base_url", &f.Serve.BaseURL}, {"url_secret", &f.Serve.URLSecret}, {"url_key_file", &f.Serve.URLKeyFile}} {
		if *p.v, err = Expand(*p.v, lookup); err != nil {
			return fmt.Errorf("serve.%s: %w", p.field, err)
		}
	}
	if len(f.Serve.Tokens) > 0 {
		toks := map[string]string{}
		for tok, user := range f.Serve.Tokens {
			t, err := Expand(tok, lookup)
			if err != nil {
				return fmt.Errorf("serve.tokens: %w", err)
			}
			if t == "" || user == "" {
				return errors.New("serve.tokens: tokens and identities must not be empty")
			}
			toks[t] = user
		}
		f.Serve.Tokens = toks
	}
	if err := f.Serve.expandAuth(lookup); err != nil {
		return err
	}
	if f.Serve.Telemetry.OTLPEndpoint, err = Expand(f.Serve.Telemetry.OTLPEndpoint, lookup); err != nil {
		return fmt.Errorf("serve.telemetry.otlp_endpoint: %w", err)
	}
	f.Serve.Telemetry.Headers = expandMap(f.Serve.Telemetry.Headers, "serve.telemetry.headers", lookup, &err)
	if err != nil {
		return err
	}
	if err := f.Serve.Telemetry.Validate(); err != nil {
		return fmt.Errorf("serve.telemetry: %w", err)
	}
	if f.Serve.BaseURL != "" {
		u, err := url.Parse(f.Serve.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("serve.base_url %q: want an absolute http(s) URL", f.Serve.BaseURL)
		}
	}
	if f.Serve.URLTTL < 0 || f.Serve.URLKeyRotation < 0 {
		return errors.New("serve.url_ttl and serve.url_key_rotation must not be negative")
	}
	if err := f.Serve.Limits.Validate(); err != nil {
		return fmt.Errorf("serve.%w", err)
	}
	return nil
}

func expandMap(m map[string]string, at string, lookup func(string) (string, bool), errp *error) map[string]string {
	if len(m) == 0 || *errp != nil {
		return m
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		x, err := Expand(v, lookup)
		if err != nil {
			*errp = fmt.Errorf("%s.%s: %w", at, k, err)
			return m
		}
		out[k] = x
	}
	return out
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// expandAuth substitutes environment variables in serve.auth's tokens and
// JWT settings, and checks the section.
func (s *Serve) expandAuth(lookup func(string) (string, bool)) error {
	if len(s.Auth.Tokens) > 0 {
		toks := make(map[string]auth.Identity, len(s.Auth.Tokens))
		for tok, id := range s.Auth.Tokens {
			t, err := Expand(tok, lookup)
			if err != nil {
				return fmt.Errorf("serve.auth.tokens: %w", err)
			}
			toks[t] = id
		}
		s.Auth.Tokens = toks
	}
	if j := s.Auth.JWT; j != nil {
		for _, p := range []struct {
			field string
			v     *string
		}{{"jwks_url", &j.JWKSURL}, {"issuer", &j.Issuer}, {"audience", &j.Audience}} {
			v, err := Expand(*p.v, lookup)
			if err != nil {
				return fmt.Errorf("serve.auth.jwt.%s: %w", p.field, err)
			}
			*p.v = v
		}
	}
	if err := s.Auth.Validate(); err != nil {
		return fmt.Errorf("serve.auth: %w", err)
	}
	return nil
}

// Users is who may call the gateway of `mcpx serve`: over HTTP
// (listening), the identities of AuthConfig's tokens and, with a JWT,
// any number of users; over stdio one user, whatever tokens are set.
// The gateway gives a stdio server a process per user when there may be
// several (gatewayconfig.ServerConfig.InstanceModeFor).
func (s Serve) Users(listening bool) gatewayconfig.Users {
	if !listening {
		return gatewayconfig.Users{}
	}
	a := s.AuthConfig()
	return gatewayconfig.Users{Identities: a.Identities(), JWT: a.JWT != nil}
}

// AuthConfig is serve.auth with serve.tokens' identities added (a user,
// no tenant).
func (s Serve) AuthConfig() auth.Config {
	c := s.Auth
	if len(s.Tokens) > 0 {
		toks := make(map[string]auth.Identity, len(c.Tokens)+len(s.Tokens))
		for t, user := range s.Tokens {
			toks[t] = auth.Identity{User: user}
		}
		for t, id := range c.Tokens {
			toks[t] = id
		}
		c.Tokens = toks
	}
	return c
}

// Package config is the gateway's configuration, in the config file's
// shape: an mcpServers entry (ServerConfig, with mcpx's own section
// ServerOptions, per-tool ToolOptions and ArgumentOptions, and Roots),
// the Limits, the client Profiles, the artifact tools'
// ArtifactToolsOptions, and who calls (Users). A host fills them in
// gateway.Options; the upstream supervisor (gateway/internal/upstream)
// reads them too, so they live in a package below both. Durations are
// store.Duration: "30s", or a number of seconds.
package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/store"
)

// Upstream transport types, the values of ServerConfig.Type.
const (
	TypeStdio          = "stdio"
	TypeStreamableHTTP = "streamable-http"
	TypeSSE            = "sse"
)

// ProtocolAuto is ServerOptions.Protocol's default: probe for 2026-07-28.
const ProtocolAuto = "auto"

// The revisions ServerOptions.Protocol may name (mcp-go's
// ProtocolVersion constants, spelled out: this package stays out of
// mcp-go, so that the CLI's config links none of it).
const (
	protocol20251125 = "2025-11-25"
	protocol20260728 = "2026-07-28"
)

// DefaultTimeout bounds one upstream request when ServerConfig.Timeout is
// not set.
const DefaultTimeout = 60 * time.Second

// DefaultStdioStartupTimeout is the least a stdio upstream is given to
// start (ServerOptions.StartupTimeout): its command may compile or
// download the server first ("go run", "npx -y"), which takes minutes on
// a new machine.
const DefaultStdioStartupTimeout = 2 * time.Minute

// ServerConfig is one entry of the config file's "mcpServers" map, in Claude
// Desktop's shape plus mcpx's own section.
//
//	"tableau": {"command": "tableau-mcp", "args": ["--site", "x"], "env": {"TOKEN": "${TABLEAU_TOKEN}"}}
//	"github":  {"type": "streamable-http", "url": "https://api.example/mcp", "headers": {"Authorization": "Bearer ${GH}"}}
type ServerConfig struct {
	// Command starts a stdio upstream. Either Command or URL is required.
	// Defaults to "" (a remote upstream at URL).
	Command string `json:"command,omitempty"`
	// Args are Command's arguments. Defaults to none.
	Args []string `json:"args,omitempty"`
	// Env adds variables to the environment mcpx passes on to Command.
	// Defaults to none.
	Env map[string]string `json:"env,omitempty"`
	// InheritEnv passes mcpx's whole environment to Command (besides
	// Env). Defaults to false: Command gets only the InheritedEnv
	// allowlist (PATH, HOME, locale, ...) and Env.
	InheritEnv bool `json:"inherit_env,omitempty"`
	// Cwd is Command's working folder. Defaults to mcpx's own.
	Cwd string `json:"cwd,omitempty"`
	// URL is a remote upstream's endpoint. Defaults to "" (a stdio
	// upstream run by Command).
	URL string `json:"url,omitempty"`
	// Headers are sent with every request to URL (e.g. Authorization).
	// Defaults to none.
	Headers map[string]string `json:"headers,omitempty"`
	// Type is "stdio", "streamable-http" ("http" is accepted) or "sse".
	// Defaults to "stdio" with Command, "streamable-http" with URL.
	Type string `json:"type,omitempty"`
	// Timeout bounds each request to this upstream: a duration ("30s") or
	// seconds (30). Defaults to DefaultTimeout.
	Timeout store.Duration `json:"timeout,omitempty"`
	// Disabled keeps the entry in the file without starting it. Defaults
	// to false.
	Disabled bool `json:"disabled,omitempty"`
	// Mcpx holds mcpx's options for this server.
	Mcpx ServerOptions `json:"mcpx,omitzero"`
}

// ServerOptions are mcpx's own per-server settings.
type ServerOptions struct {
	// ResourceTools adds the generated tools {server}_resources_list,
	// {server}_resources_read and {server}_resources_templates_list when the
	// server has resources. Defaults to true.
	ResourceTools *bool `json:"resource_tools,omitempty"`
	// AutoReadIfSizeUnderBytes is the resourcelink layer's option of the
	// same name.
	//
	// Deprecated: layer options live in pipeline.servers.NAME.layers
	// (docs/design.md, "The chain"); mcpx moves an old config's there
	// when it loads it, with a warning, for one release, and New refuses
	// it.
	AutoReadIfSizeUnderBytes int64 `json:"auto_read_if_size_under_bytes,omitempty"`
	// Layers are layer options for this server.
	//
	// Deprecated: set pipeline.servers.NAME.layers, their one home; see
	// AutoReadIfSizeUnderBytes.
	Layers map[string]json.RawMessage `json:"layers,omitempty"`
	// Tools holds per-tool settings by tool name or glob.
	Tools map[string]ToolOptions `json:"tools,omitempty"`
	// Protocol says which revisions mcpx speaks to this server. Defaults
	// to "auto", which probes a streamable-HTTP server with server/discover
	// and sends it the stateless (2026-07-28) requests of stateless
	// clients when it speaks that revision, besides the 2025-11-25 session
	// every upstream has; "2025-11-25" keeps to the session;
	// "2026-07-28" never initializes it (server/discover, then stateless
	// requests only; also chosen by itself when initialize is refused).
	Protocol string `json:"protocol,omitempty"`
	// Roots, when set, are this server's roots: the gateway declares the
	// roots capability and answers roots/list with them instead of
	// relaying the client's (see serverreq.go).
	Roots []Root `json:"roots,omitempty"`
	// StartupTimeout bounds one start of the server: from launching its
	// command (or the first request to its URL) until its initialize is
	// answered and its tools are listed. A client's initialize waits as
	// long for a server that is still starting (Options.StartWait), and
	// a server that starts later than its clients asked is announced
	// with notifications/tools/list_changed. A duration ("3m") or
	// seconds. Defaults to the larger of DefaultStdioStartupTimeout and
	// Timeout for a stdio server, to Timeout for a remote one.
	StartupTimeout store.Duration `json:"startup_timeout,omitempty"`
	// ClientCapabilities, when set (a JSON object), is declared to this
	// server verbatim as the client's capabilities in initialize, at
	// gateway start. Defaults to unset: over stdio (mcpx wrap, mcpx
	// serve) mcpx declares what the one client declared, of what it
	// relays (sampling, elicitation, roots), and initialize waits for
	// that client; over --listen, where no client may ever come, the
	// server starts at once and is told {"sampling": {}, "elicitation":
	// {}}: mcpx relays those requests to the client whose call asked,
	// and answers a client that lacks the capability "method not found:
	// the client declared no sampling capability", which fails that one
	// call upstream (session/upstream_caps.go). Set it where the clients
	// of a listener are known: {} for clients that take no server
	// requests, {"roots": {"listChanged": true}} for clients with roots.
	ClientCapabilities json.RawMessage `json:"client_capabilities,omitempty"`
	// Instances says how many processes of a stdio server serve the
	// gateway's clients (gateway/internal/upstream/instances.go):
	//
	//   - "shared": one process for every session and user. Right for
	//     servers that hold nothing of their user's; a server that
	//     answers one request at a time serializes every client on it.
	//   - "per_user": a process per principal (tenant and user), started
	//     on the principal's first call, shared by its sessions and its
	//     2026-07-28 requests, and stopped once it has had no call for
	//     limits.user_process_idle_timeout. For servers that hold their
	//     user's state (a browser's pages, cookies and logins; roots;
	//     credentials): no user drives another's. At most
	//     limits.max_user_processes at once per server.
	//   - "per_session": a process per downstream session, started on the
	//     session's first call and stopped when the session ends. For
	//     servers whose state should not outlive a conversation (a shell,
	//     a REPL): sessions never see each other's. At most
	//     limits.max_session_processes at once per server.
	//   - "pool": PoolSize processes; each call goes to the least busy.
	//     For stateless servers that answer one request at a time (most
	//     Python servers): concurrent clients no longer wait on each other.
	//
	// Defaults to "per_user" on a gateway that more than one principal
	// may call (several token identities, or a JWT issuer: Users), so
	// that users do not share a process unless the config says so, and
	// to "shared" otherwise (stdio, no token or one: one user);
	// InstanceModeFor decides. Lists (tools, resources, prompts) and
	// subscriptions always go to the shared process, which runs in every
	// mode; calls (tools/call, resources/read, prompts/get,
	// completion/complete) go to the instances. A 2026-07-28 (stateless)
	// request has no session: under per_session it is served by the
	// shared process, under per_user by its principal's. Remote servers
	// serve concurrent requests themselves: only "shared" applies to them.
	Instances string `json:"instances,omitempty"`
	// PoolSize is how many processes "pool" runs, the shared one
	// included. Defaults to DefaultPoolSize; at most MaxPoolSize.
	PoolSize int `json:"pool_size,omitempty"`
}

// Instance modes, the values of ServerOptions.Instances.
const (
	InstancesShared     = "shared"
	InstancesPerUser    = "per_user"
	InstancesPerSession = "per_session"
	InstancesPool       = "pool"
)

// DefaultPoolSize is ServerOptions.PoolSize's default: four processes
// take a 2-core machine's worth of one-request-at-a-time servers past
// the point where the gateway, not the server, is the bottleneck,
// without starting a process per client.
const DefaultPoolSize = 4

// MaxPoolSize bounds ServerOptions.PoolSize: each process is started and
// kept for the gateway's life.
const MaxPoolSize = 64

// InstanceMode returns ServerOptions.Instances, "shared" when unset:
// the gateway sets it from InstanceModeFor before it starts a server.
func (c ServerConfig) InstanceMode() string {
	if c.Mcpx.Instances == "" || c.Kind() != TypeStdio {
		return InstancesShared
	}
	return c.Mcpx.Instances
}

// Users says who may call a gateway: the principals its listener admits.
// The zero value is one user (a stdio client, or a listener without
// tokens or with one).
type Users struct {
	// Identities counts the distinct identities (tenant and user) that
	// the listener's static tokens name.
	Identities int
	// JWT says the listener accepts JWTs, which admit any number of users.
	JWT bool
}

// Many reports whether more than one principal may call the gateway.
func (u Users) Many() bool { return u.JWT || u.Identities > 1 }

// String says who u admits, for `mcpx serve --check`.
func (u Users) String() string {
	switch {
	case u.JWT:
		return "JWTs admit any number of users"
	case u.Identities > 1:
		return fmt.Sprintf("%d principals are configured", u.Identities)
	case u.Identities == 1:
		return "one principal is configured"
	default:
		return "one user"
	}
}

// InstanceModeFor returns the instance mode c gets on a gateway that u
// may call, and why: the configured mcpx.instances ("explicit"), or its
// default, "per_user" for a stdio server that more than one principal
// may call (one user's browser, roots or credentials are never
// another's) and "shared" otherwise. It is the one place that default is
// decided.
func (c ServerConfig) InstanceModeFor(u Users) (mode, why string) {
	switch {
	case c.Kind() != TypeStdio:
		return InstancesShared, "a remote server"
	case c.Mcpx.Instances != "":
		return c.Mcpx.Instances, "explicit"
	case u.Many():
		return InstancesPerUser, "default: " + u.String()
	default:
		return InstancesShared, "default: " + u.String()
	}
}

// PoolSize returns the processes of a "pool" server, its default
// applied; 1 in the other modes.
func (c ServerConfig) PoolSize() int {
	switch {
	case c.InstanceMode() != InstancesPool:
		return 1
	case c.Mcpx.PoolSize <= 0:
		return DefaultPoolSize
	default:
		return c.Mcpx.PoolSize
	}
}

// ToolOptions are mcpx's settings for one tool.
type ToolOptions struct {
	// Arguments says how artifact references in the tool's arguments are
	// rewritten before the call (docs/design.md, "Arguments on the way
	// in").
	Arguments ArgumentOptions `json:"arguments,omitzero"`
	// Layers are layer options for this tool.
	//
	// Deprecated: set pipeline.servers.NAME.tools.TOOL.layers, their one
	// home; see ServerOptions.AutoReadIfSizeUnderBytes.
	Layers map[string]json.RawMessage `json:"layers,omitempty"`
}

// Argument rewriting modes, the values of ArgumentOptions.Mode.
const (
	// ArgsURL rewrites an artifact reference to a signed download URL
	// (a capability URL: whoever holds it may download); it needs an HTTP base URL and
	// falls back to ArgsBase64 without one.
	ArgsURL = "url"
	// ArgsBase64 inlines the artifact's bytes as standard base64.
	ArgsBase64 = "base64"
	// ArgsDataURI inlines the bytes as a data: URI with the MIME type.
	ArgsDataURI = "data-uri"
	// ArgsOff leaves arguments as the model wrote them.
	ArgsOff = "off"
)

// ArgumentOptions configure argument rewriting for a tool.
type ArgumentOptions struct {
	// Mode is "url", "base64", "data-uri" or "off". Defaults to "url".
	Mode string `json:"mode,omitempty"`
	// Fields are the argument names whose values (a string or an array of
	// strings) may name an artifact by id or file name, besides any string
	// that is an mcpx://artifacts/{id} URI anywhere in the arguments.
	// Defaults to ["filename", "file_names"].
	Fields []string `json:"fields,omitempty"`
	// MaxInlineBytes caps what base64 and data-uri modes inline; a larger
	// artifact is an error. Defaults to 20 MiB.
	MaxInlineBytes int64 `json:"max_inline_bytes,omitempty"`
}

// DefaultArgumentFields are the argument names rewritten by default.
var DefaultArgumentFields = []string{"filename", "file_names"}

// DefaultMaxInlineBytes caps an artifact inlined into arguments.
const DefaultMaxInlineBytes = 20 << 20

// WithDefaults fills what is unset.
func (a ArgumentOptions) WithDefaults() ArgumentOptions {
	if a.Mode == "" {
		a.Mode = ArgsURL
	}
	if a.Fields == nil {
		a.Fields = DefaultArgumentFields
	}
	if a.MaxInlineBytes <= 0 {
		a.MaxInlineBytes = DefaultMaxInlineBytes
	}
	return a
}

// Kind returns the transport the entry uses, with its default applied.
func (c ServerConfig) Kind() string {
	switch strings.ToLower(c.Type) {
	case "":
		if c.URL != "" {
			return TypeStreamableHTTP
		}
		return TypeStdio
	case "http", "streamablehttp", "streamable_http", TypeStreamableHTTP:
		return TypeStreamableHTTP
	default:
		return strings.ToLower(c.Type)
	}
}

// RequestTimeout returns the per-request timeout with its default applied.
func (c ServerConfig) RequestTimeout() time.Duration {
	if c.Timeout <= 0 {
		return DefaultTimeout
	}
	return time.Duration(c.Timeout)
}

// StartupTimeout returns the start-up timeout with its default applied.
func (c ServerConfig) StartupTimeout() time.Duration {
	switch {
	case c.Mcpx.StartupTimeout > 0:
		return time.Duration(c.Mcpx.StartupTimeout)
	case c.Kind() == TypeStdio:
		return max(DefaultStdioStartupTimeout, c.RequestTimeout())
	default:
		return c.RequestTimeout()
	}
}

// ResourceToolsOn reports whether the generated resource tools are on.
func (c ServerConfig) ResourceToolsOn() bool {
	return c.Mcpx.ResourceTools == nil || *c.Mcpx.ResourceTools
}

// Validate checks one entry; name is used in messages.
func (c ServerConfig) Validate(name string) error {
	if err := checkServerName(name); err != nil {
		return err
	}
	switch c.Kind() {
	case TypeStdio:
		if c.Command == "" {
			return fmt.Errorf("mcpServers.%s: stdio needs \"command\"", name)
		}
		if c.URL != "" {
			return fmt.Errorf("mcpServers.%s: give \"command\" or \"url\", not both", name)
		}
	case TypeStreamableHTTP, TypeSSE:
		if c.URL == "" {
			return fmt.Errorf("mcpServers.%s: type %q needs \"url\"", name, c.Kind())
		}
		if !strings.HasPrefix(c.URL, "http://") && !strings.HasPrefix(c.URL, "https://") {
			return fmt.Errorf("mcpServers.%s: url %q: want http:// or https://", name, c.URL)
		}
		if c.Command != "" {
			return fmt.Errorf("mcpServers.%s: give \"command\" or \"url\", not both", name)
		}
	default:
		return fmt.Errorf("mcpServers.%s: type %q: want stdio, streamable-http or sse", name, c.Type)
	}
	if c.Timeout < 0 {
		return fmt.Errorf("mcpServers.%s: timeout must not be negative", name)
	}
	if c.Mcpx.StartupTimeout < 0 {
		return fmt.Errorf("mcpServers.%s: mcpx.startup_timeout must not be negative", name)
	}
	switch c.Mcpx.Protocol {
	case "", ProtocolAuto, protocol20251125, protocol20260728:
	default:
		return fmt.Errorf("mcpServers.%s: mcpx.protocol %q: want %q, %q or %q", name, c.Mcpx.Protocol, ProtocolAuto, protocol20251125, protocol20260728)
	}
	switch c.Mcpx.Instances {
	case "", InstancesShared:
	case InstancesPerUser, InstancesPerSession, InstancesPool:
		if c.Kind() != TypeStdio {
			return fmt.Errorf("mcpServers.%s: mcpx.instances %q applies to stdio servers; a remote server serves concurrent requests itself", name, c.Mcpx.Instances)
		}
	default:
		return fmt.Errorf("mcpServers.%s: mcpx.instances %q: want %q, %q, %q or %q", name, c.Mcpx.Instances, InstancesShared, InstancesPerUser, InstancesPerSession, InstancesPool)
	}
	if c.Mcpx.PoolSize < 0 || c.Mcpx.PoolSize > MaxPoolSize {
		return fmt.Errorf("mcpServers.%s: mcpx.pool_size %d: want 1 to %d", name, c.Mcpx.PoolSize, MaxPoolSize)
	}
	if err := checkRoots(name, c.Mcpx.Roots); err != nil {
		return err
	}
	if cc := c.Mcpx.ClientCapabilities; len(cc) > 0 && (!gjson.ValidBytes(cc) || !gjson.ParseBytes(cc).IsObject()) {
		return fmt.Errorf("mcpServers.%s: mcpx.client_capabilities: want a JSON object", name)
	}
	if c.Mcpx.AutoReadIfSizeUnderBytes < 0 {
		return fmt.Errorf("mcpServers.%s: mcpx.auto_read_if_size_under_bytes must not be negative", name)
	}
	for tool, t := range c.Mcpx.Tools {
		switch t.Arguments.Mode {
		case "", ArgsURL, ArgsBase64, ArgsDataURI, ArgsOff:
		default:
			return fmt.Errorf("mcpServers.%s: mcpx.tools.%s.arguments.mode %q: want url, base64, data-uri or off", name, tool, t.Arguments.Mode)
		}
	}
	return nil
}

// checkServerName keeps names usable as tool-name prefixes and artifact
// namespaces.
func checkServerName(name string) error {
	if name == "" {
		return errors.New("mcpServers: a server name must not be empty")
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return fmt.Errorf("mcpServers.%s: names may hold letters, digits, '-', '_' and '.'", name)
		}
	}
	return nil
}

// Describe renders the entry as one line for `mcpx serve --check`,
// without header or env values (they may hold secrets), with the
// instance mode it gets on a gateway that u may call and why.
func (c ServerConfig) Describe(u Users) string {
	var b strings.Builder
	if c.Disabled {
		b.WriteString("(disabled) ")
	}
	switch c.Kind() {
	case TypeStdio:
		b.WriteString("stdio: ")
		b.WriteString(strconv.Quote(c.Command))
		for _, a := range c.Args {
			b.WriteString(" ")
			b.WriteString(strconv.Quote(a))
		}
		if c.Cwd != "" {
			fmt.Fprintf(&b, " in %s", c.Cwd)
		}
		if len(c.Env) > 0 {
			fmt.Fprintf(&b, " env %s", strings.Join(sortedKeys(c.Env), ","))
		}
		if c.InheritEnv {
			b.WriteString("; inherits mcpx's whole environment")
		}
	default:
		fmt.Fprintf(&b, "%s: %s", c.Kind(), c.URL)
		if len(c.Headers) > 0 {
			fmt.Fprintf(&b, " headers %s", strings.Join(sortedKeys(c.Headers), ","))
		}
	}
	fmt.Fprintf(&b, "; timeout %s; startup timeout %s", c.RequestTimeout(), c.StartupTimeout())
	mode, why := c.InstanceModeFor(u)
	switch mode {
	case InstancesPerUser:
		fmt.Fprintf(&b, "; instances per_user: a process per user (%s)", why)
	case InstancesPerSession:
		fmt.Fprintf(&b, "; instances per_session: a process per session (%s)", why)
	case InstancesPool:
		fmt.Fprintf(&b, "; instances pool: %d processes (%s)", c.PoolSize(), why)
	case InstancesShared:
		if c.Kind() == TypeStdio {
			fmt.Fprintf(&b, "; instances shared: one process for every user (%s)", why)
		} else {
			fmt.Fprintf(&b, "; instances shared (%s)", why)
		}
	}
	if !c.ResourceToolsOn() {
		b.WriteString("; no resource tools")
	}
	return b.String()
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// Root is one root an upstream is given (ServerOptions.Roots). In config
// it is an object ({"uri": "file:///srv/data", "name": "data"}) or a
// string: a URI, or an absolute path that becomes a file:// URI.
type Root struct {
	// URI is the root ("file:///srv/data"). Required.
	URI string `json:"uri"`
	// Name is the root's name for the server. Defaults to "".
	Name string `json:"name,omitempty"`
}

// UnmarshalJSON accepts a root object or a URI or path string.
func (r *Root) UnmarshalJSON(b []byte) error {
	var str string
	if err := json.Unmarshal(b, &str); err == nil {
		*r = Root{URI: rootURI(str)}
		return nil
	}
	type plain Root
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return fmt.Errorf("root: %w", err)
	}
	p.URI = rootURI(p.URI)
	*r = Root(p)
	return nil
}

// rootURI turns an absolute path into a file:// URI and keeps URIs.
func rootURI(s string) string {
	if filepath.IsAbs(s) {
		return (&url.URL{Scheme: "file", Path: filepath.ToSlash(s)}).String()
	}
	return s
}

// checkRoots validates mcpServers.NAME.mcpx.roots: every root is a URI
// with a scheme (file:// for folders).
func checkRoots(name string, roots []Root) error {
	for i, r := range roots {
		u, err := url.Parse(r.URI)
		if err != nil || u.Scheme == "" {
			return fmt.Errorf("mcpServers.%s: mcpx.roots[%d] %q: want a URI (file:///path) or an absolute path", name, i, r.URI)
		}
	}
	return nil
}

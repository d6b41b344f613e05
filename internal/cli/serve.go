package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"sort"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/auth"
	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway"
	"github.com/mcpx-dev/mcpx/internal/cli/config"
	"github.com/mcpx-dev/mcpx/internal/redact"
	_ "github.com/mcpx-dev/mcpx/layers" // the built-in layers
	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/fsstore"
	"github.com/mcpx-dev/mcpx/store/noopstore"
	"github.com/mcpx-dev/mcpx/web"
)

var serveCmd = command{
	name:     "serve",
	synopsis: "--config FILE [--listen ADDR] [--store DIR] [--preset NAME]... [--plugin FILE.wasm]... [--plugins DIR] [--check]",
	about: `
Serve runs the MCP gateway: it starts the upstream servers of the config
file's "mcpServers" map (Claude Desktop's format: "command", "args", "env",
"cwd" for stdio servers; "url", "headers", "type" streamable-http or sse for
remote ones; plus "timeout", "disabled" and mcpx's own "mcpx" section) and
serves their tools, resources and prompts as one MCP server. Every tool
result passes through the layer chain: base64 blobs and oversized text
become artifacts, and the model gets {"artifact": {...}, "summary": "..."}
and a resource_link to mcpx://artifacts/{id}.

Without --listen the gateway speaks MCP over stdin/stdout (point an MCP
client's "command" at it). With --listen ADDR it serves streamable HTTP at
http://ADDR/mcp and signed, expiring artifact downloads at
http://ADDR/artifacts/{id}; refs then carry a "url".

--preset, --plugin and --plugins add WASM presets and custom transformers
for this run, besides the config's; a --plugins folder is watched, and a
new or changed .wasm is swapped in without a restart. Plugins, folders and
their NAME.json sidecars are documented in README.md#wasm-plugins (and
"mcpx plugin --help").

--check validates the config (strings may use ${VAR} and ${VAR:-default}),
builds every configured layer, prints what it would run, and exits. Values
taken from the environment through ${VAR} are masked wherever mcpx prints
them (logs, errors, --check).

A stdio upstream gets only an allowlist of mcpx's environment (PATH, HOME,
USER, SHELL, TERM, locale, TZ, TMPDIR, ...) plus its entry's "env";
"inherit_env": true in the entry passes everything. The config's
"serve.limits" caps message sizes, buffers, sessions, stderr logging and
the HTTP timeouts (see the README, "Upstreams and limits").

One upstream keeps its tool names; with several, tools are named
{server}_{tool}. Resource URIs are passed on as the servers send them;
when two servers list the same URI, the first keeps it and the other's is
listed as mcpx://upstream/{server}/{uri}. A crashed stdio upstream is
restarted with backoff; the others keep serving.

Without --store or store.dir, artifacts go to the default folder; when
that falls back (no HOME, as MCP clients often start servers), the folder
and the reason are logged as a warning.`,
	example: `
mcpx serve --config examples/quickstart/mcpx.json
mcpx serve --config mcpx.json --listen 127.0.0.1:8080
mcpx serve --config mcpx.json --check
mcpx serve --config mcpx.json --plugins ~/.config/mcpx/plugins`,
}

// runServe is "mcpx serve".
func (p program) runServe(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := serveCmd
	fs := newFlagSet(c)
	var (
		o      common
		plug   pluginFlags
		listen string
		check  bool
	)
	o.register(fs, p.parts)
	plug.register(fs)
	fs.StringVar(&listen, "listen", "", "serve streamable HTTP on `ADDR` (host:port; /mcp and /artifacts/{id})\ninstead of stdio")
	fs.BoolVar(&check, "check", false, "validate the config, print what would run, and exit")
	pos, code := parse(c, fs, args, stdout, stderr)
	if code >= 0 {
		return code
	}
	if len(pos) > 0 {
		return usageError(stderr, c, fmt.Errorf("unexpected argument %q", pos[0]))
	}
	if o.configPath == "" {
		return usageError(stderr, c, errors.New("--config FILE is required (or use \"mcpx wrap -- COMMAND\")"))
	}
	cfg, log, err := o.setup(stderr)
	if err != nil {
		return fail(stderr, c, err)
	}
	stderr = maskSecrets(cfg, log, stderr)
	if code := plug.applyOr(c, &cfg.Pipeline, stderr); code >= 0 {
		return code
	}
	if listen == "" {
		listen = cfg.Serve.Listen
	}
	if len(cfg.MCPServers) == 0 {
		return fail(stderr, c, fmt.Errorf("%s: no \"mcpServers\" to serve", o.configPath))
	}
	if check {
		return checkServe(c, cfg, listen, o, redact.New(cfg.Secrets()).Writer(stdout), stderr)
	}
	return serveGateway(c, cfg, o, listen, log, stdin, stdout, stderr)
}

// checkServe prints what serve would run, after building every layer of
// every configured server and tool.
func checkServe(c command, cfg config.File, listen string, o common, stdout, stderr io.Writer) int {
	names := make([]string, 0, len(cfg.MCPServers))
	for n := range cfg.MCPServers {
		names = append(names, n)
	}
	sort.Strings(names)
	st, err := openCheckStore()
	if err != nil {
		return fail(stderr, c, err)
	}
	host, err := newPluginHost(context.Background(), names)
	if err != nil {
		return fail(stderr, c, err)
	}
	defer host.Close(context.Background())
	gw, err := gateway.New(gateway.Options{Servers: cfg.MCPServers, Engine: engine.Options{Store: st, Config: cfg.Pipeline, Plugins: host}, Limits: cfg.Serve.Limits, Profiles: cfg.Serve.Profiles, ArtifactTools: cfg.Serve.ArtifactTools, Secrets: cfg.Secrets()})
	if err != nil {
		return fail(stderr, c, err)
	}
	eng := gw.Engine()
	for _, n := range names {
		if err := eng.Validate(n, ""); err != nil {
			return fail(stderr, c, fmt.Errorf("mcpServers.%s: %w", n, err))
		}
		for tool := range cfg.MCPServers[n].Mcpx.Tools {
			if err := eng.Validate(n, tool); err != nil {
				return fail(stderr, c, fmt.Errorf("mcpServers.%s.mcpx.tools.%s: %w", n, tool, err))
			}
		}
	}
	fmt.Fprintf(stdout, "config %s is valid\n", o.configPath)
	dir := o.storeDir
	if dir == "" {
		dir = cfg.Store.Dir
	}
	if dir == "" {
		dir = "(default folder)"
	}
	fmt.Fprintf(stdout, "store: %s\n", dir)
	if listen != "" {
		fmt.Fprintf(stdout, "downstream: streamable HTTP on http://%s/mcp, HTTP API at /artifacts, /events, /transform (docs/artifacts.md)\n", listen)
	} else {
		fmt.Fprintln(stdout, "downstream: stdio")
	}
	fmt.Fprintln(stdout, "upstreams:")
	for _, n := range names {
		fmt.Fprintf(stdout, "  %s: %s\n", n, cfg.MCPServers[n].Describe())
	}
	_ = gw.Close(context.Background())
	return exitOK
}

// serveGateway runs the gateway until stdin ends (stdio) or a signal
// arrives (HTTP).
func serveGateway(c command, cfg config.File, o common, listen string, log hclog.Logger, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.storeDir == "" && cfg.Store.Dir == "" && cfg.Store.S3 == nil {
		// MCP clients often start servers with a minimal environment (no
		// HOME): say where artifacts go and why, at a level the default
		// log shows, since the client's log is the only place to see it.
		dir, why, err := fsstore.DefaultDir()
		if err != nil {
			return fail(stderr, c, fmt.Errorf("default artifact store: %w", err))
		}
		if why != "" {
			log.Warn("default artifact store: "+why, "dir", dir)
		}
		o.storeDir = dir
	}
	st, err := o.openStore(ctx, cfg, log)
	if err != nil {
		return fail(stderr, c, err)
	}
	defer closeStore(context.Background(), st, log)

	host, err := newPluginHost(ctx, serverNames(cfg))
	if err != nil {
		return fail(stderr, c, err)
	}
	// Deferred before the gateway's Close, so it runs after: the engine's
	// layers let go of their plugins first.
	defer host.Close(context.Background())
	eo := engine.Options{Store: st, Config: cfg.Pipeline, Logger: log, Plugins: host}
	var (
		signer *web.Signer
		ln     net.Listener
		bus    *web.EventBus
		base   string
	)
	if listen != "" {
		if ln, err = net.Listen("tcp", listen); err != nil {
			return fail(stderr, c, fmt.Errorf("listen: %w", err))
		}
		base = cfg.Serve.BaseURL
		if base == "" {
			base = "http://" + ln.Addr().String()
		}
		if signer, err = newSigner(ctx, cfg, st, base, log); err != nil {
			return fail(stderr, c, err)
		}
		bus = web.NewEventBus(cfg.Serve.API)
		eo.Linker = signer
	}
	obs, err := o.parts.Observe(ctx, cfg, bus, log)
	if err != nil {
		return fail(stderr, c, err)
	}
	defer obs.Shutdown()
	eo.Listener = obs.Listener()
	// Clients will connect: each upstream is told what the first of them
	// can do, so it offers what it would offer that client directly.
	gwo := gateway.Options{Servers: cfg.MCPServers, Logger: log, Version: moduleVersion(), Limits: cfg.Serve.Limits, Profiles: cfg.Serve.Profiles, ArtifactTools: cfg.Serve.ArtifactTools, Secrets: cfg.Secrets(), StdioReadsStore: true, WaitForClientCapabilities: true}
	obs.Configure(&gwo)
	policy := gatewayRetention(cfg)
	rlog := log.Named("retention")
	applyRetention(policy, st, &eo, &gwo, rlog)
	gwo.Engine = eo
	gw, err := gateway.New(gwo)
	if err != nil {
		return fail(stderr, c, err)
	}
	gw.Start(ctx)
	collectCtx, stopCollect := context.WithCancel(ctx)
	collected := make(chan struct{})
	go func() { defer close(collected); runCollector(collectCtx, st, policy, rlog, obs.Evicted()) }()
	defer func() { stopCollect(); <-collected }()
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := gw.Close(cctx); err != nil {
			log.Warn("closing the gateway", "error", err)
		}
	}()
	if ln == nil {
		if err := gw.ServeStdio(ctx, stdin, stdout); err != nil {
			return fail(stderr, c, err)
		}
		return exitOK
	}
	au, err := auth.New(ctx, auth.Options{Config: cfg.Serve.AuthConfig(), Loopback: isLoopback(ln), BaseURL: base, Logger: log})
	if err != nil {
		return fail(stderr, c, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", gw.HTTPHandler(gateway.HTTPOptions{AllowedOrigins: cfg.Serve.AllowedOrigins, Auth: au, Logger: log}))
	obs.Watch(gw)
	api, err := newAPI(cfg, st, signer, bus, au, gw, obs, log)
	if err != nil {
		return fail(stderr, c, err)
	}
	api.Register(mux)
	srv := newHTTPServer(mux, cfg.Serve.Limits)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("serving", "mcp", "http://"+ln.Addr().String()+"/mcp")
	fmt.Fprintf(stderr, "mcpx serve: MCP at http://%s/mcp\n", ln.Addr())
	select {
	case err := <-errc:
		return fail(stderr, c, err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return exitOK
}

// newHTTPServer is the server of --listen, with the limits' timeouts: a
// slow-loris client (headers or body a byte at a time, or an idle
// keep-alive connection) is cut off instead of holding a connection
// forever. There is no write timeout: SSE streams stay open as long as
// their session.
func newHTTPServer(h http.Handler, l gateway.Limits) *http.Server {
	l = l.WithDefaults()
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: time.Duration(l.ReadHeaderTimeout),
		ReadTimeout:       time.Duration(l.ReadTimeout),
		IdleTimeout:       time.Duration(l.IdleTimeout),
		MaxHeaderBytes:    64 << 10,
	}
}

// maskSecrets makes log and the returned stderr mask the values the
// config took from the environment (${VAR}); log must not have named
// children yet (they keep the writer they were made with).
func maskSecrets(cfg config.File, log hclog.Logger, stderr io.Writer) io.Writer {
	red := redact.New(cfg.Secrets())
	masked := red.Writer(stderr)
	if masked == stderr {
		return stderr
	}
	if r, ok := log.(hclog.OutputResettable); ok {
		_ = r.ResetOutput(&hclog.LoggerOptions{Output: masked})
	}
	return masked
}

// moduleVersion is the version reported to MCP clients.
func moduleVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "(devel)"
}

// openCheckStore is the store --check builds layers against: nothing is
// written.
func openCheckStore() (store.Store, error) { return noopstore.New(hclog.NewNullLogger()), nil }

// serverNames lists the upstreams' names, for the WASM host.
func serverNames(cfg config.File) []string {
	names := make([]string, 0, len(cfg.MCPServers))
	for n := range cfg.MCPServers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"

	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/cmd/mcpx/internal/cli/config"
	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/internal/redact"
	_ "github.com/mcpx-dev/mcpx/layers" // the built-in layers
	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/fsstore"
	"github.com/mcpx-dev/mcpx/store/noopstore"
)

var serveCmd = command{
	name:     "serve",
	brief:    "run the MCP gateway in front of the config's mcpServers",
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
their NAME.json sidecars are documented in docs/plugins.md (and
"mcpx plugin --help").

--check validates the config (strings may use ${VAR} and ${VAR:-default}),
builds every configured layer, prints what it would run (with each
server's instance mode and why: a stdio server runs a process per user
when the listener admits several principals), and exits. Values
taken from the environment through ${VAR} are masked wherever mcpx prints
them (logs, errors, --check).

A stdio upstream gets only an allowlist of mcpx's environment (PATH, HOME,
USER, SHELL, TERM, locale, TZ, TMPDIR, ...) plus its entry's "env";
"inherit_env": true in the entry passes everything. The config's
"serve.limits" caps message sizes, buffers, sessions, stderr logging and
the HTTP timeouts (docs/config.md lists each with its default).

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
	o.register(fs, p.stores)
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
	o.resolveConfig()
	if o.configPath == "" {
		return usageError(stderr, c, errors.New("--config FILE (or $"+envConfig+") is required (or use \"mcpx wrap -- COMMAND\")"))
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
	if listen == "" && enabledServers(cfg) == 0 {
		// One client over stdio wants servers; a listener with none is an
		// artifact service (POST /transform, the artifact tools on /mcp).
		return fail(stderr, c, fmt.Errorf("%s: no enabled \"mcpServers\" to serve over stdio (with --listen, no servers is an artifact service: /mcp offers the artifact tools, the HTTP API /transform and /artifacts)", o.configPath))
	}
	if check {
		stdout = redact.New(cfg.Secrets()).Writer(stdout)
	}
	return p.gateway(c, cfg, o, listen, check, log, stdin, stdout, stderr)
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

// gateway opens what the gateway runs on, the store (one that writes
// nothing for --check) and the WASM host of the configured servers, and
// serves it (checkGateway with --check, else serveGateway).
func (p program) gateway(c command, cfg config.File, o common, listen string, check bool, log hclog.Logger, stdin io.Reader, stdout, stderr io.Writer) int {
	// SIGINT and SIGTERM end the gateway; caught until the store is
	// closed, so that one arriving while the gateway shuts down (a client
	// that closed stdin sends SIGTERM when mcpx takes a while) does not
	// kill the process in the middle of the store's close.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var st store.Store
	if check {
		st = noopstore.New(hclog.NewNullLogger())
	} else {
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
		as, err := o.openStore(ctx, cfg, log)
		if err != nil {
			return fail(stderr, c, err)
		}
		defer closeStore(context.Background(), as, log)
		st = as
	}
	host, reg, err := newPluginHost(ctx, serverNames(cfg))
	if err != nil {
		return fail(stderr, c, err)
	}
	// Closed after the gateway returns, so after its Close: the engine's
	// layers let go of their plugins first.
	defer host.Close(context.Background())
	eo := engine.Options{Store: st, Config: cfg.Pipeline, Logger: log, Registry: reg}
	engineRetention(cfg.Store.RetentionFor(true), &eo)
	if check {
		err = checkGateway(cfg, o, listen, eo, stdout)
	} else {
		err = serveGateway(ctx, cfg, listen, eo, log, stdin, stdout, stderr)
	}
	if err != nil {
		return fail(stderr, c, err)
	}
	return exitOK
}

// enabledServers counts the upstreams that are not disabled.
func enabledServers(cfg config.File) int {
	n := 0
	for _, s := range cfg.MCPServers {
		if !s.Disabled {
			n++
		}
	}
	return n
}

// serverNames lists the upstreams' names, for the WASM host.
func serverNames(cfg config.File) []string {
	names := make([]string, 0, len(cfg.MCPServers))
	for n := range cfg.MCPServers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

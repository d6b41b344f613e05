package cli

// The gateway of "mcpx serve" and "mcpx wrap": the engine, the upstreams,
// stdio or streamable HTTP with the HTTP API, retention's collector, and
// the metrics and traces of observe.go.

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/auth"
	"github.com/mcpx-dev/mcpx/cmd/mcpx/internal/cli/config"
	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway"
	gatewayconfig "github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/web"
)

// checkGateway is "serve --check": it prints what serveGateway would
// run, after building every layer of every configured server and tool
// with eo (its store writes nothing). o's config file (and whether
// --config or $MCPX_CONFIG named it) and --store are for the message.
func checkGateway(cfg config.File, o common, listen string, eo engine.Options, stdout io.Writer) error {
	names := serverNames(cfg)
	users := cfg.Serve.Users(listen != "")
	gw, err := gateway.New(gateway.Options{Servers: cfg.MCPServers, Users: users, Engine: eo, Limits: cfg.Serve.Limits, Profiles: cfg.Serve.Profiles, ArtifactTools: cfg.Serve.ArtifactTools, Secrets: cfg.Secrets()})
	if err != nil {
		return err
	}
	defer gw.Close(context.Background())
	eng := gw.Engine()
	for _, n := range names {
		if err := eng.Validate(n, ""); err != nil {
			return fmt.Errorf("mcpServers.%s: %w", n, err)
		}
		for tool := range cfg.MCPServers[n].Mcpx.Tools {
			if err := eng.Validate(n, tool); err != nil {
				return fmt.Errorf("mcpServers.%s.mcpx.tools.%s: %w", n, tool, err)
			}
		}
	}
	fmt.Fprintf(stdout, "config %s is valid\n", o.configPath)
	fmt.Fprintf(stdout, "config file from: %s\n", o.configFrom)
	dir := o.storeDir
	if dir == "" {
		dir = cfg.Store.Dir
	}
	if dir == "" {
		dir = "(default folder)"
	}
	fmt.Fprintf(stdout, "store: %s\n", dir)
	if listen != "" {
		fmt.Fprintf(stdout, "downstream: streamable HTTP on http://%s/mcp, HTTP API at /artifacts, /events, /transform (docs/http.md)\n", listen)
	} else {
		fmt.Fprintln(stdout, "downstream: stdio")
	}
	if len(names) == 0 {
		fmt.Fprintln(stdout, "upstreams: none (the artifact service only: /mcp offers the artifact tools)")
	} else {
		fmt.Fprintln(stdout, "upstreams:")
	}
	for _, n := range names {
		fmt.Fprintf(stdout, "  %s: %s\n", n, cfg.MCPServers[n].Describe(users))
	}
	return nil
}

// serveGateway runs the gateway of cfg with the engine of eo (its
// store, pipeline, WASM host and retention's put-time rules) until stdin
// ends (listen "": MCP over stdin and stdout), or ctx ends or a signal
// arrives (HTTP on listen); the caller catches the signals.
func serveGateway(ctx context.Context, cfg config.File, listen string, eo engine.Options, log hclog.Logger, stdin io.Reader, stdout, stderr io.Writer) error {
	st := eo.Store
	var err error
	var (
		signer *web.Signer
		ln     net.Listener
		bus    *web.EventBus
		base   string
	)
	if listen != "" {
		if ln, err = net.Listen("tcp", listen); err != nil {
			return fmt.Errorf("listen: %w", err)
		}
		base = cfg.Serve.BaseURL
		if base == "" {
			base = "http://" + ln.Addr().String()
		}
		if signer, err = newSigner(ctx, cfg, st, base, log); err != nil {
			return err
		}
		bus = web.NewEventBus(cfg.Serve.API)
		eo.Linker = signer
	}
	if l := presignedLinker(cfg, st, signer, log); l != nil {
		eo.Linker = l
	}
	obs, err := newObservability(ctx, cfg, bus, log)
	if err != nil {
		return err
	}
	defer obs.Shutdown()
	eo.Listener = obs.Listener()
	// Over stdio the one client will connect: each upstream is told what
	// it can do, so it offers what it would offer that client directly.
	// A listener starts its upstreams at once, declaring the gateway's
	// default set (config.ServerOptions.ClientCapabilities): no client may
	// ever come, and a readiness probe that gates traffic waits for them.
	gwo := gateway.Options{Servers: cfg.MCPServers, Users: cfg.Serve.Users(listen != ""), Logger: log, Version: moduleVersion(), Limits: cfg.Serve.Limits, Profiles: cfg.Serve.Profiles, ArtifactTools: cfg.Serve.ArtifactTools, Secrets: cfg.Secrets(), StdioReadsStore: true, WaitForClientCapabilities: listen == ""}
	obs.Configure(&gwo)
	policy := cfg.Store.RetentionFor(true)
	rlog := log.Named("retention")
	applyRetention(policy, st, &gwo, rlog)
	gwo.Engine = eo
	gw, err := gateway.New(gwo)
	if err != nil {
		return err
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
		in, out := stdin, stdout
		if f, ok := in.(*os.File); ok {
			pf, restore := pollable(f, -1)
			defer restore()
			in = pf
		}
		if f, ok := out.(*os.File); ok {
			pf, restore := pollable(f, int(os.Stderr.Fd()))
			defer restore()
			out = pf
		}
		return gw.ServeStdio(ctx, in, out)
	}
	au, err := auth.New(ctx, auth.Options{Config: cfg.Serve.AuthConfig(), Loopback: isLoopback(ln), BaseURL: base, Logger: log})
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", gw.HTTPHandler(gateway.HTTPOptions{AllowedOrigins: cfg.Serve.AllowedOrigins, Auth: au, Logger: log}))
	obs.Watch(gw)
	api, err := newAPI(cfg, st, signer, bus, au, gw, obs, log)
	if err != nil {
		return err
	}
	api.Register(mux)
	srv := newHTTPServer(mux, cfg.Serve.Limits)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("serving", "mcp", "http://"+ln.Addr().String()+"/mcp")
	fmt.Fprintf(stderr, "mcpx serve: MCP at http://%s/mcp\n", ln.Addr())
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return nil
}

// newHTTPServer is the server of --listen, with the limits' timeouts: a
// slow-loris client (headers or body a byte at a time, or an idle
// keep-alive connection) is cut off instead of holding a connection
// forever. There is no write timeout: SSE streams stay open as long as
// their session.
func newHTTPServer(h http.Handler, l gatewayconfig.Limits) *http.Server {
	l = l.WithDefaults()
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: time.Duration(l.ReadHeaderTimeout),
		ReadTimeout:       time.Duration(l.ReadTimeout),
		IdleTimeout:       time.Duration(l.IdleTimeout),
		MaxHeaderBytes:    64 << 10,
	}
}

// moduleVersion is the version reported to MCP clients.
func moduleVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "(devel)"
}

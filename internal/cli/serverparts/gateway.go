package serverparts

// The gateway of "mcpx serve" and "mcpx wrap": the engine, the upstreams,
// stdio or streamable HTTP with the HTTP API, retention's collector, and
// the metrics and traces of observe.go.

import (
	"context"
	"fmt"
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
	"github.com/mcpx-dev/mcpx/gateway"
	"github.com/mcpx-dev/mcpx/internal/cli/parts"
	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/web"
)

// check is parts.Set's Check: it prints what Serve would run, after
// building every layer of every configured server and tool.
func check(ctx context.Context, r parts.GatewayRun) error {
	cfg, stdout := r.Config, r.Stdout
	names := make([]string, 0, len(cfg.MCPServers))
	for n := range cfg.MCPServers {
		names = append(names, n)
	}
	sort.Strings(names)
	users := cfg.Serve.Users(r.Listen != "")
	gw, err := gateway.New(gateway.Options{Servers: cfg.MCPServers, Users: users, Engine: r.Engine, Limits: cfg.Serve.Limits, Profiles: cfg.Serve.Profiles, ArtifactTools: cfg.Serve.ArtifactTools, Secrets: cfg.Secrets()})
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
	fmt.Fprintf(stdout, "config %s is valid\n", r.ConfigPath)
	dir := r.StoreDir
	if dir == "" {
		dir = cfg.Store.Dir
	}
	if dir == "" {
		dir = "(default folder)"
	}
	fmt.Fprintf(stdout, "store: %s\n", dir)
	if r.Listen != "" {
		fmt.Fprintf(stdout, "downstream: streamable HTTP on http://%s/mcp, HTTP API at /artifacts, /events, /transform (docs/artifacts.md)\n", r.Listen)
	} else {
		fmt.Fprintln(stdout, "downstream: stdio")
	}
	fmt.Fprintln(stdout, "upstreams:")
	for _, n := range names {
		fmt.Fprintf(stdout, "  %s: %s\n", n, cfg.MCPServers[n].Describe(users))
	}
	return nil
}

// serve is parts.Set's Serve: it runs the gateway until stdin ends
// (stdio), or ctx ends or a signal arrives (HTTP).
func serve(ctx context.Context, r parts.GatewayRun) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, st, log, listen, stderr := r.Config, r.Engine.Store, r.Log, r.Listen, r.Stderr
	var err error
	eo := r.Engine
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
	// Clients will connect: each upstream is told what the first of them
	// can do, so it offers what it would offer that client directly.
	gwo := gateway.Options{Servers: cfg.MCPServers, Users: cfg.Serve.Users(listen != ""), Logger: log, Version: moduleVersion(), Limits: cfg.Serve.Limits, Profiles: cfg.Serve.Profiles, ArtifactTools: cfg.Serve.ArtifactTools, Secrets: cfg.Secrets(), StdioReadsStore: true, WaitForClientCapabilities: true}
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
		in, out := r.Stdin, r.Stdout
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

// moduleVersion is the version reported to MCP clients.
func moduleVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "(devel)"
}

// collectInterval is how often the gateway's collector applies the
// retention policy (and once at start).
const collectInterval = time.Minute

// maxRemovalsLogged is how many removed ids one collection logs by name;
// the rest are counted.
const maxRemovalsLogged = 20

// applyRetention sets gwo's OnSessionEnd to drop a closed session's
// artifacts under drop_on_session_end (the CLI applied policy's put-time
// rules to the engine).
func applyRetention(policy store.Retention, st store.Store, gwo *gateway.Options, log hclog.Logger) {
	c, ok := st.(store.Collector)
	if !ok || !policy.DropOnSessionEnd {
		return
	}
	gwo.OnSessionEnd = func(id string) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		rep, err := c.DropScope(ctx, store.Scope{SessionID: id})
		if err != nil {
			log.Warn("could not drop the artifacts of a closed session", "session", id, "error", err)
			return
		}
		if rep.Count > 0 {
			log.Info("dropped the artifacts of a closed session", "session", id, "count", rep.Count, "bytes", rep.Bytes)
		}
	}
}

// runCollector applies policy to st now and every collectInterval until
// ctx ends, logging what it removed and handing each removal to each
// (the HTTP API's artifact_evicted events; may be nil).
func runCollector(ctx context.Context, st store.Store, policy store.Retention, log hclog.Logger, each func(store.Removal)) {
	c, ok := st.(store.Collector)
	if !ok || policy == (store.Retention{DropOnSessionEnd: policy.DropOnSessionEnd, Strategy: policy.Strategy}) {
		return // nothing to collect
	}
	t := time.NewTicker(collectInterval)
	defer t.Stop()
	for {
		collectOnce(ctx, c, policy, log, each)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func collectOnce(ctx context.Context, c store.Collector, policy store.Retention, log hclog.Logger, each func(store.Removal)) {
	var ids []string
	rep, err := c.Collect(ctx, policy, store.CollectOptions{Each: func(r store.Removal) {
		if each != nil {
			each(r)
		}
		if len(ids) < maxRemovalsLogged {
			ids = append(ids, r.ID+" ("+r.Why+")")
		}
	}})
	if err != nil {
		if ctx.Err() == nil {
			log.Warn("retention: gc failed", "error", err)
		}
		return
	}
	if rep.Count > 0 {
		log.Info("removed artifacts", "count", rep.Count, "bytes", rep.Bytes, "ids", ids)
	}
}

package cli

// The HTTP API of "mcpx serve --listen": the signing key ring
// kept with the store, the access control and the endpoints of package
// web, mounted beside /mcp.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/auth"
	"github.com/mcpx-dev/mcpx/cmd/mcpx/internal/cli/config"
	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway"
	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/fsstore"
	"github.com/mcpx-dev/mcpx/web"
)

// keyRotationCheck is how often serve checks whether the signing key is
// due for rotation (serve.url_key_rotation).
const keyRotationCheck = time.Hour

// urlKeyKeeper is where the signing key ring is kept: serve.url_key_file,
// else beside the store (a file in the fsstore folder, an object of the
// S3 store); nil when neither (a random key per process).
func urlKeyKeeper(cfg config.File, st store.Store) web.KeyKeeper {
	if cfg.Serve.URLKeyFile != "" {
		return web.KeyFile(cfg.Serve.URLKeyFile)
	}
	switch st := st.(type) {
	case web.KeyKeeper:
		return st
	case *fsstore.Store:
		return web.KeyFile(filepath.Join(st.Dir(), web.KeyFileName))
	}
	return nil
}

// newSigner makes the download URL signer of base: serve.url_secret as
// the only key when set, else the kept ring (rotated when due, and
// checked hourly until ctx ends).
func newSigner(ctx context.Context, cfg config.File, st store.Store, base string, log hclog.Logger) (*web.Signer, error) {
	sc := web.SignerConfig{BaseURL: base, TTL: cfg.Serve.TTL()}
	keeper := urlKeyKeeper(cfg, st)
	if cfg.Serve.URLSecret != "" || keeper == nil {
		sc.Secret = []byte(cfg.Serve.URLSecret)
		return web.NewSigner(sc)
	}
	keys, err := web.LoadKeys(ctx, keeper)
	if err != nil {
		return nil, err
	}
	every := time.Duration(cfg.Serve.URLKeyRotation)
	if web.RotateDue(keys, every, time.Now()) {
		if keys, err = web.RotateKeys(ctx, keeper, cfg.Serve.TTL(), time.Now()); err != nil {
			return nil, err
		}
		log.Info("rotated the URL signing key", "kid", keys[0].ID)
	}
	sc.Keys, sc.Keeper = keys, keeper
	s, err := web.NewSigner(sc)
	if err != nil || every <= 0 {
		return s, err
	}
	go func() {
		t := time.NewTicker(keyRotationCheck)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			keys, err := web.LoadKeys(ctx, keeper)
			if err == nil && web.RotateDue(keys, every, time.Now()) {
				keys, err = web.RotateKeys(ctx, keeper, cfg.Serve.TTL(), time.Now())
			}
			if err != nil {
				log.Warn("URL signing key rotation", "error", err)
				continue
			}
			s.SetKeys(keys)
		}
	}()
	return s, nil
}

// presignTimeout bounds finding an artifact's bytes to presign its URL
// (one small request at most); past it the ref gets the gateway's URL.
const presignTimeout = 5 * time.Second

// presignedLinker is the engine's Linker with store.s3.presign_urls: an
// artifact ref's url is a presigned GET of the object, valid for
// serve.url_ttl, so downloads go to the object store rather than through
// mcpx (with or without --listen). A URL that cannot be presigned falls
// back to signer's (nil: none). The HTTP API's own refs keep the
// gateway's URLs: the UI reads them on its own origin. Nil when presigning
// is off.
func presignedLinker(cfg config.File, st store.Store, signer *web.Signer, log hclog.Logger) engine.Linker {
	p, ok := st.(presigner)
	if !ok || cfg.Store.S3 == nil || !cfg.Store.S3.PresignURLs {
		return nil
	}
	l := presignLinker{st: p, ttl: cfg.Serve.TTL(), log: log.Named("presign")}
	if signer != nil {
		l.fallback = signer
	}
	return l
}

// presigner is a store that hands out URLs of its own for an artifact's
// bytes (s3store.Store's PresignURL).
type presigner interface {
	PresignURL(ctx context.Context, id, mimeType, filename string, expiry time.Duration) (*url.URL, error)
}

type presignLinker struct {
	st       presigner
	ttl      time.Duration
	fallback engine.Linker
	log      hclog.Logger
}

func (l presignLinker) ArtifactURL(ref engine.ArtifactRef) string {
	ctx, cancel := context.WithTimeout(context.Background(), presignTimeout)
	defer cancel()
	u, err := l.st.PresignURL(ctx, ref.ID, ref.MIMEType, ref.Filename, l.ttl)
	if err == nil {
		return u.String()
	}
	if l.fallback == nil {
		l.log.Warn("cannot presign an artifact URL; the ref goes without one", "id", ref.ID, "error", err)
		return ""
	}
	l.log.Warn("cannot presign an artifact URL; the gateway's goes instead", "id", ref.ID, "error", err)
	return l.fallback.ArtifactURL(ref)
}

// isLoopback reports whether ln listens on a loopback address only.
func isLoopback(ln net.Listener) bool {
	a, ok := ln.Addr().(*net.TCPAddr)
	return ok && a.IP.IsLoopback()
}

// upstreamReadiness is /readyz's view of the gateway: ready when every
// upstream is.
type upstreamReadiness struct{ gw *gateway.Gateway }

func (u upstreamReadiness) Ready(context.Context) error {
	var notReady []string
	for _, s := range u.gw.Status() {
		if s.State != "ready" {
			notReady = append(notReady, s.Name+" "+s.State)
		}
	}
	if len(notReady) > 0 {
		return &upstreamsNotReady{notReady}
	}
	return nil
}

type upstreamsNotReady struct{ names []string }

func (e *upstreamsNotReady) Error() string {
	out := ""
	for i, n := range e.names {
		if i > 0 {
			out += ", "
		}
		out += n
	}
	return out
}

// newAPI builds the HTTP API over the gateway's engine, store and
// upstream resources, with /metrics.
func newAPI(cfg config.File, st store.Store, signer *web.Signer, bus *web.EventBus, au *auth.Authenticator, gw *gateway.Gateway, obs *observability, log hclog.Logger) (*web.API, error) {
	return web.NewAPI(web.APIOptions{
		Store: st, Signer: signer, Auth: au, Events: bus, Transformer: gw.Engine(), Observer: obs.metrics, Resources: resourceBrowser{gw},
		Ready: upstreamReadiness{gw}, Retention: cfg.Store.RetentionFor(true), Metrics: obs.Handler(), Limits: cfg.Serve.API, Logger: log,
	})
}

// resourceBrowser is web.ResourceBrowser over the gateway's upstreams:
// every principal may browse every server's resources (they are the
// servers', not any user's).
type resourceBrowser struct{ gw *gateway.Gateway }

func (b resourceBrowser) ListResources(ctx context.Context, _ auth.Principal, server, cursor string) (json.RawMessage, error) {
	res, err := b.gw.ServerResources(ctx, server, cursor)
	return res, b.errorFor(server, err)
}

func (b resourceBrowser) ReadResource(ctx context.Context, _ auth.Principal, server, uri string) (json.RawMessage, error) {
	res, err := b.gw.ReadServerResource(ctx, server, uri)
	return res, b.errorFor(server, err)
}

// ResourceServers lists the configured servers (web.ResourceServerLister);
// one that declares no resources lists none, with a note.
func (b resourceBrowser) ResourceServers(context.Context, auth.Principal) ([]string, error) {
	st := b.gw.Status()
	names := make([]string, len(st))
	for i, s := range st {
		names[i] = s.Name
	}
	return names, nil
}

// errorFor is browserError for server: the gateway's unknown server is a
// configured one that declares no resources capability (web lists none
// for it), or a name nothing has.
func (b resourceBrowser) errorFor(server string, err error) error {
	if errors.Is(err, gateway.ErrUnknownServer) && slices.ContainsFunc(b.gw.Status(), func(s gateway.Status) bool { return s.Name == server }) {
		return fmt.Errorf("%w: %w", web.ErrNoResources, err)
	}
	return browserError(err)
}

// browserError maps the gateway's not-found errors to web's (404).
func browserError(err error) error {
	switch {
	case errors.Is(err, gateway.ErrUnknownServer):
		return fmt.Errorf("%w: %w", web.ErrUnknownServer, err)
	case errors.Is(err, gateway.ErrUnknownResource):
		return fmt.Errorf("%w: %w", web.ErrUnknownResource, err)
	}
	return err
}

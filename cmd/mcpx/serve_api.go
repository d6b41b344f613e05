package main

// The HTTP API of "mcpx serve --listen" (issue 19): the signing key ring
// kept with the store, the access control and the endpoints of package
// web, mounted beside /mcp.

import (
	"context"
	"net"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/auth"
	"github.com/mcpx-dev/mcpx/cmd/mcpx/internal/config"
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

// newAPI builds the HTTP API over the gateway's engine and store.
func newAPI(ctx context.Context, cfg config.File, st store.Store, signer *web.Signer, bus *web.EventBus, gw *gateway.Gateway, loopback bool, base string, log hclog.Logger) (*web.API, error) {
	au, err := auth.New(ctx, auth.Options{Config: cfg.Serve.AuthConfig(), Loopback: loopback, BaseURL: base, Logger: log})
	if err != nil {
		return nil, err
	}
	return web.NewAPI(web.APIOptions{
		Store: st, Signer: signer, Auth: au, Events: bus, Transformer: gw.Engine(),
		Ready: upstreamReadiness{gw}, Retention: gatewayRetention(cfg), Limits: cfg.Serve.API, Logger: log,
	})
}

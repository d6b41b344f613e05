package cli

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/cmd/mcpx/internal/cli/config"
	"github.com/mcpx-dev/mcpx/gateway"
	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/fsstore"
	"github.com/mcpx-dev/mcpx/store/s3store"
	"github.com/mcpx-dev/mcpx/store/s3store/s3test"
	"github.com/mcpx-dev/mcpx/web"
)

// The signing key was random per process, so every URL a
// client was given answered 403 after a restart (40 of 40 in a load
// test). serve keeps the key ring with the store.
func TestSignedURLsSurviveRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	check := func(t *testing.T, cfg config.File, st store.Store) {
		t.Helper()
		first, err := newSigner(ctx, cfg, st, "http://127.0.0.1:1", hclog.NewNullLogger())
		if err != nil {
			t.Fatal(err)
		}
		raw := first.URL("t_0123456789ab", "s1")
		restarted, err := newSigner(ctx, cfg, st, "http://127.0.0.1:1", hclog.NewNullLogger())
		if err != nil {
			t.Fatal(err)
		}
		u, _ := url.Parse(raw)
		if _, err := restarted.Verify("t_0123456789ab", u.Query()); err != nil {
			t.Fatalf("a URL from before the restart: %v", err)
		}
	}
	t.Run("fsstore", func(t *testing.T) {
		dir := t.TempDir()
		st, err := fsstore.Open(ctx, dir, fsstore.Config{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close(ctx)
		check(t, config.File{}, st)
		fi, err := os.Stat(filepath.Join(dir, web.KeyFileName))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("key file: %v, %v; want mode 0600", fi, err)
		}
		// serve.url_key_file moves it
		other := filepath.Join(t.TempDir(), "keys.json")
		check(t, config.File{Serve: config.Serve{URLKeyFile: other}}, st)
		if _, err := os.Stat(other); err != nil {
			t.Fatal(err)
		}
		// serve.url_secret is the one key, as before
		check(t, config.File{Serve: config.Serve{URLSecret: "configured"}}, st)
	})
	t.Run("s3store", func(t *testing.T) {
		srv := s3test.Start(t)
		st, err := s3store.Open(ctx, s3store.Config{Endpoint: srv.Endpoint, Bucket: srv.Bucket(t), PathStyle: true,
			AccessKey: s3test.AccessKey, SecretKey: s3test.SecretKey, Prefix: "p"})
		if err != nil {
			t.Fatal(err)
		}
		check(t, config.File{}, st)
		if _, err := st.ReadKeys(ctx); err != nil {
			t.Fatalf("no ring in the bucket: %v", err)
		}
	})
}

func TestResourceBrowserErrors(t *testing.T) {
	t.Parallel()
	if err := browserError(fmt.Errorf("x: %w", gateway.ErrUnknownServer)); !errors.Is(err, web.ErrUnknownServer) {
		t.Errorf("unknown server: %v", err)
	}
	if err := browserError(gateway.ErrUnknownResource); !errors.Is(err, web.ErrUnknownResource) {
		t.Errorf("unknown resource: %v", err)
	}
}

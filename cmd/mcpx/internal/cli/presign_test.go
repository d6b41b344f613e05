package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/cmd/mcpx/internal/cli/config"
	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/s3store"
	"github.com/mcpx-dev/mcpx/store/s3store/s3test"
	"github.com/mcpx-dev/mcpx/web"
)

// With store.s3.presign_urls the engine's refs link to the bucket; an
// artifact that cannot be presigned (not found) gets the gateway's URL,
// or none without one; without the setting the gateway signs.
func TestPresignedLinker(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	ctx := context.Background()
	st, err := s3store.Open(ctx, s3store.Config{Endpoint: srv.Endpoint, Bucket: srv.Bucket(t), PathStyle: true,
		AccessKey: s3test.AccessKey, SecretKey: s3test.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(ctx)
	signer, err := web.NewSigner(web.SignerConfig{BaseURL: "http://gw.example", Secret: []byte("k")})
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.File{Store: config.Store{S3: &config.S3{Bucket: "b", PresignURLs: true}}, Serve: config.Serve{URLTTL: store.Duration(90 * time.Second)}}
	sref, err := st.Put(ctx, strings.NewReader("linked"), store.PutOptions{Namespace: "n", MIMEType: "text/plain"})
	if err != nil {
		t.Fatal(err)
	}
	ref := engine.RefFromStore(sref)
	l := presignedLinker(cfg, st, signer, hclog.NewNullLogger())
	if u := l.ArtifactURL(ref); !strings.HasPrefix(u, srv.Endpoint+"/") || !strings.Contains(u, "X-Amz-Expires=90") {
		t.Errorf("presigned url %q: want the bucket's, valid 90 s", u)
	}
	missing := engine.ArtifactRef{ID: "n_000000000000"}
	if u := l.ArtifactURL(missing); !strings.HasPrefix(u, "http://gw.example/artifacts/") {
		t.Errorf("fallback url %q: want the gateway's", u)
	}
	if u := presignedLinker(cfg, st, nil, hclog.NewNullLogger()).ArtifactURL(missing); u != "" {
		t.Errorf("fallback without a gateway: %q, want none", u)
	}
	cfg.Store.S3.PresignURLs = false
	if l := presignedLinker(cfg, st, signer, hclog.NewNullLogger()); l != nil {
		t.Errorf("presigning off: linker %T, want none (the gateway signs)", l)
	}
}

package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/mcpx-dev/mcpx/store/s3store" // store.s3, as cmd/mcpx links it
	"github.com/mcpx-dev/mcpx/store/s3store/s3test"
)

// With store.s3 in the config file (credentials from the AWS_*
// variables), transform puts the artifact in the bucket and the artifacts
// commands list, read and collect it there.
func TestTransformAndArtifactsOnS3(t *testing.T) {
	isolate(t)
	srv := s3test.Start(t)
	bucket := srv.Bucket(t)
	t.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretKey)
	t.Setenv("AWS_ENDPOINT_URL", srv.Endpoint)
	cfg := filepath.Join(t.TempDir(), "mcpx.json")
	if err := os.WriteFile(cfg, []byte(`{"store": {"s3": {"bucket": "`+bucket+`", "prefix": "cli", "path_style": true}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	pdf := samplePDF()
	got := runCLI(t, bytes.NewReader(tableauResult(t, pdf)), "transform", "--config", cfg, "--server", "tableau", "--tool", "download_workbook")
	if got.code != exitOK {
		t.Fatalf("transform: exit %d; stderr:\n%s", got.code, got.stderr)
	}
	id := artifactOf(t, got.stdout)
	ls := runCLI(t, nil, "artifacts", "ls", "--config", cfg)
	if ls.code != exitOK || !strings.Contains(ls.stdout, id) {
		t.Fatalf("artifacts ls: exit %d, stdout %q, stderr %q; want %s", ls.code, ls.stdout, ls.stderr, id)
	}
	back := runCLI(t, nil, "artifacts", "get", "--config", cfg, id)
	if back.code != exitOK || !bytes.Equal([]byte(back.stdout), pdf) {
		t.Fatalf("artifacts get: exit %d, %d bytes, want the %d original; stderr:\n%s", back.code, len(back.stdout), len(pdf), back.stderr)
	}
	if keys := srv.Keys(t, bucket, "cli/blobs/"); len(keys) != 1 {
		t.Fatalf("the bucket does not hold the artifact's bytes")
	}
	missing := runCLI(t, nil, "artifacts", "get", "--config", cfg, "tableau_000000000000")
	if missing.code == exitOK || !strings.Contains(missing.stderr, "s3://"+bucket+"/cli/") {
		t.Errorf("get of a missing id: exit %d, stderr %q; want the store named", missing.code, missing.stderr)
	}
	rm := runCLI(t, nil, "artifacts", "rm", "--config", cfg, id)
	if rm.code != exitOK {
		t.Fatalf("artifacts rm: exit %d, stderr %q", rm.code, rm.stderr)
	}
	if ls := runCLI(t, nil, "artifacts", "ls", "--config", cfg); strings.Contains(ls.stdout, id) {
		t.Errorf("ls after rm still lists %s", id)
	}
}

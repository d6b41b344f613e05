package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/fsstore"
)

// fullDiskStore is the folder store on a full disk: every put fails as
// its own would.
type fullDiskStore struct {
	artifactStore
	dir string
}

func (s fullDiskStore) Put(context.Context, io.Reader, store.PutOptions) (store.Ref, error) {
	return store.Ref{}, fmt.Errorf("fsstore: %w", &fs.PathError{Op: "write", Path: filepath.Join(s.dir, "tmp", "put-1"), Err: syscall.ENOSPC})
}

// TestTransformStoreFailure: mcpx transform on a store that cannot keep
// anything (ENOSPC) exits 0 with a valid result clamped to
// max_observation_chars, in which each value it could not store is a
// preview and a not_stored note, and says so on stderr in one warning
// that counts them and names the failure.
func TestTransformStoreFailure(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "mcpx.json")
	if err := os.WriteFile(cfg, []byte(`{"store": {"s3": {"bucket": "on-a-full-disk"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	p := program{stores: store.DefaultBackends().With(store.Backend{Kind: "s3", Open: func(ctx context.Context, _ json.RawMessage, _ store.OpenOptions) (store.Store, error) {
		st, err := fsstore.Open(ctx, dir, fsstore.Config{})
		if err != nil {
			return nil, err
		}
		return fullDiskStore{st, dir}, nil
	}})}
	blob := make([]byte, 2<<20)
	_, _ = rand.Read(blob)
	png := append([]byte("\x89PNG\r\n\x1a\n"), blob...)
	rows := make([]string, 20000)
	for i := range rows {
		rows[i] = fmt.Sprintf("row %05d of a listing that is long only in number", i)
	}
	listing, _ := json.Marshal(map[string]any{"rows": rows})
	// One large image, eleven smaller ones (a step lists only its first
	// few failures; the warning counts them all) and a listing the
	// guardrail cuts.
	content := []any{map[string]string{"type": "image", "mimeType": "image/png", "data": base64.StdEncoding.EncodeToString(png)}}
	for i := range 11 {
		content = append(content, map[string]string{"type": "image", "mimeType": "image/png", "data": base64.StdEncoding.EncodeToString(png[:(i+1)<<12])})
	}
	content = append(content, map[string]string{"type": "text", "text": string(listing)})
	in, _ := json.Marshal(map[string]any{"content": content})
	var stdout, stderr bytes.Buffer
	code := p.run([]string{"transform", "--config", cfg, "--server", "shots"}, bytes.NewReader(in), &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	out := stdout.Bytes()
	if meta := len(gjson.GetBytes(out, "_meta").Raw); !json.Valid(out) || len(out)-meta > 50000 {
		t.Fatalf("%d bytes in, %d out (_meta %d): not clamped to max_observation_chars 50000", len(in), len(out), meta)
	}
	if n := strings.Count(string(out), "NOT stored: the artifact store failed (no space left on device)"); n != 13 {
		t.Errorf("%d notes that the store failed, want one for each image and one for the cut listing: %.600s", n, out)
	}
	if bytes.Contains(out, []byte(base64.StdEncoding.EncodeToString(png[:300]))) {
		t.Error("the image's bytes are in the output")
	}
	want := fmt.Sprintf(": fsstore: write %s: no space left on device; the output holds a preview and a not_stored note in place of each\n", filepath.Join(dir, "tmp", "put-1"))
	var warning string
	for _, l := range strings.SplitAfter(stderr.String(), "\n") {
		if strings.HasPrefix(l, "mcpx transform: warning: ") {
			warning = l
		}
	}
	if !strings.HasPrefix(warning, "mcpx transform: warning: 13 values not stored, the artifact store failed: layer[") || !strings.HasSuffix(warning, want) {
		t.Errorf("stderr %s\nwant a warning that counts the values not stored and names the failure", stderr.String())
	}
}

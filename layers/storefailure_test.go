package layers_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"syscall"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

// fullDisk is a store on a full disk: every put fails as the folder
// store's does.
type fullDisk struct{ store.Store }

func (fullDisk) Put(context.Context, io.Reader, store.PutOptions) (store.Ref, error) {
	return store.Ref{}, fmt.Errorf("fsstore: %w", &fs.PathError{Op: "write", Path: "/srv/mcpx/artifacts/tmp/put-1", Err: syscall.ENOSPC})
}

// TestStoreFailureStillClamped: through the default chain on a store
// whose every put fails (ENOSPC), a result is still held to
// max_observation_chars: the values the layers would have stored, and the
// parts the guardrail cuts, leave previews and notes that say the store
// failed, never the bytes themselves, and every failure is reported.
func TestStoreFailureStillClamped(t *testing.T) {
	blob := make([]byte, 2<<20) // 2.67 MB of base64, as a tool sent it
	_, _ = rand.Read(blob)
	png := append([]byte("\x89PNG\r\n\x1a\n"), blob...)
	text, _ := json.Marshal(map[string]string{"file": base64.StdEncoding.EncodeToString(blob)})
	rows := make([]string, 20000)
	for i := range rows {
		rows[i] = fmt.Sprintf("row %05d of a listing that is long only in number", i)
	}
	listing, _ := json.Marshal(map[string]any{"content": []any{}, "structuredContent": map[string]any{"rows": rows}})
	for _, tc := range []struct {
		name    string
		in      []byte
		clamped bool
	}{
		{"base64 in a text block", mustJSON(t, map[string]any{"content": []any{map[string]string{"type": "text", "text": string(text)}}}), false},
		{"an image block", mustJSON(t, map[string]any{"content": []any{map[string]string{"type": "image", "mimeType": "image/png", "data": base64.StdEncoding.EncodeToString(png)}}}), false},
		{"many short values", listing, true},
		{"many images", imagesResult(2000), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eng, err := engine.New(engine.Options{Store: fullDisk{memstore.New(memstore.Config{})}})
			if err != nil {
				t.Fatal(err)
			}
			res, err := eng.Transform(context.Background(), engine.Call{Server: "s", Tool: "t"}, tc.in)
			if err != nil {
				t.Fatal(err)
			}
			meta := len(gjson.GetBytes(res.Raw, "_meta").Raw)
			if !json.Valid(res.Raw) || len(res.Raw)-meta > 50000 {
				t.Fatalf("%d bytes in, %d out (_meta %d), over max_observation_chars 50000: %.300s", len(tc.in), len(res.Raw), meta, res.Raw)
			}
			if res.Clamped != tc.clamped {
				t.Errorf("clamped %v, want %v", res.Clamped, tc.clamped)
			}
			if !strings.Contains(string(res.Raw), "NOT stored: the artifact store failed (no space left on device)") {
				t.Errorf("no note says the store failed: %.600s", res.Raw)
			}
			if len(res.Failures) == 0 || len(res.Artifacts) != 0 {
				t.Fatalf("failures %v, artifacts %d", res.Failures, len(res.Artifacts))
			}
			for _, f := range res.Failures {
				if !errors.Is(f, engine.ErrStoreWrite) && !errors.Is(f, engine.ErrFailuresElided) {
					t.Errorf("failure %v, want ErrStoreWrite", f)
				}
			}
			t.Logf("%d bytes in, %d out, %d failures reported", len(tc.in), len(res.Raw), len(res.Failures))
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

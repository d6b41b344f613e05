package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/layers/wasm"
	"github.com/mcpx-dev/mcpx/plugins"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

// TestTryPlugin: a plugin's trial returns its rewrites, the result with
// them applied and the artifact in the given store, byte for byte the
// value the rewrite replaced; a result that is not JSON is an error naming
// it.
func TestTryPlugin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h, err := wasm.NewHost(ctx, wasm.HostOptions{CacheDir: "-", Presets: plugins.Catalog()})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	p, err := h.Preset(ctx, "tableau")
	if err != nil {
		t.Fatal(err)
	}
	st := memstore.New(memstore.Config{})
	in := tableauResult(t, samplePDF())
	call := engine.Call{Server: "tableau", Tool: "download_workbook"}
	tr, err := tryPlugin(ctx, p, call, in, wasm.ModeRewrites, engine.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.rewrites) != 1 || len(tr.result.Artifacts) != 1 || len(tr.result.Failures) != 0 || tr.took <= 0 {
		t.Fatalf("trial: %d rewrites, artifacts %+v, failures %v, took %v", len(tr.rewrites), tr.result.Artifacts, tr.result.Failures, tr.took)
	}
	if !strings.Contains(string(tr.result.Raw), "Downloaded workbook 'Sales' as PDF") {
		t.Errorf("result: %s", tr.result.Raw)
	}
	rc, _, err := st.Get(ctx, tr.result.Artifacts[0].ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rc)
	rc.Close()
	if !bytes.Equal(got, samplePDF()) {
		t.Errorf("stored %d bytes, want the %d of the PDF", len(got), len(samplePDF()))
	}

	_, err = tryPlugin(ctx, p, call, []byte(`{"content":`), wasm.ModeRewrites, engine.Options{Store: st})
	if err == nil || !strings.Contains(err.Error(), "result") || !errors.Is(err, engine.ErrBadJSON) {
		t.Errorf("a broken result: %v", err)
	}
}

package wasm_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/layers/wasm"
)

// TestTry: a plugin's trial returns its rewrites, the result with them
// applied and the artifact in the given store, byte for byte the value
// the rewrite replaced; a result that is not JSON is an error naming it.
func TestTry(t *testing.T) {
	ctx := context.Background()
	h := newHost(t, nil)
	p, err := h.Preset(ctx, "tableau")
	if err != nil {
		t.Fatal(err)
	}
	st := newStore()
	in := readDoc(t, "tableau_download_workbook.json")
	call := engine.Call{Server: "tableau", Tool: "download_workbook"}
	tr, err := p.Try(ctx, call, in, wasm.ModeRewrites, engine.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Rewrites) != 1 || len(tr.Result.Artifacts) != 1 || len(tr.Result.Failures) != 0 || tr.Took <= 0 {
		t.Fatalf("trial: %d rewrites, artifacts %+v, failures %v, took %v", len(tr.Rewrites), tr.Result.Artifacts, tr.Result.Failures, tr.Took)
	}
	if !strings.Contains(string(tr.Result.Raw), "Downloaded workbook 'Sales Dashboard' as PDF") {
		t.Errorf("result: %s", tr.Result.Raw)
	}
	rc, _, err := st.Get(ctx, tr.Result.Artifacts[0].ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rc)
	rc.Close()
	if len(got) == 0 || string(got[:5]) != "%PDF-" {
		t.Errorf("stored artifact starts %q, want a PDF", got[:min(len(got), 8)])
	}

	_, err = p.Try(ctx, call, []byte(`{"content":`), wasm.ModeRewrites, engine.Options{Store: st})
	if err == nil || !strings.Contains(err.Error(), "result") || !errors.Is(err, engine.ErrBadJSON) {
		t.Errorf("a broken result: %v", err)
	}
}

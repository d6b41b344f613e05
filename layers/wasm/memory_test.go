//go:build unix

package wasm_test

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"testing"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/layers/wasm"
)

// A guest that allocates until its 128 MiB limit leaves nothing on the Go
// heap: its memory is a mapping, grown in place and unmapped when the
// instance closes (internal/wasmmem). On the heap, growth by append
// allocated several times the limit per call (1.36 GB of gateway RSS with
// 16 such guests beside a load; the reliability suite).
func TestGuestMemoryOffHeap(t *testing.T) {
	h := newHost(t, nil)
	p, err := h.Compile(context.Background(), "hostile", hostile(t), wasm.SandboxConfig{}, json.RawMessage(`{"mode_":"grow"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	d := layer.NewDoc(engine.Call{Server: "s", Tool: "t"}, []byte(`{"a":1}`))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 3 {
		if _, err := p.Run(context.Background(), d, wasm.ModeCustom); !errors.Is(err, wasm.ErrMemoryLimit) {
			t.Fatalf("grow: %v, want ErrMemoryLimit", err)
		}
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Errorf("three guests grown to 128 MiB allocated %d MiB on the Go heap", grew>>20)
	}
}

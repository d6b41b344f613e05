package wasm_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/internal/wasmtest"
	_ "github.com/mcpx-dev/mcpx/layers" // the built-in layers
	"github.com/mcpx-dev/mcpx/layers/wasm"
	"github.com/mcpx-dev/mcpx/plugins"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

// newHost returns a Host with its cache in a temporary folder.
func newHost(t testing.TB, log hclog.Logger) *wasm.Host {
	t.Helper()
	h, err := wasm.NewHost(context.Background(), wasm.HostOptions{CacheDir: sharedCacheDir(t), Logger: log, Presets: plugins.Catalog()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	return h
}

var (
	cacheOnce sync.Once
	cacheDir  string
)

// sharedCacheDir is one compilation cache for the package's tests, so the
// Go guests compile once.
func sharedCacheDir(t testing.TB) string {
	cacheOnce.Do(func() {
		d, err := os.UserCacheDir()
		if err != nil {
			d = os.TempDir()
		}
		cacheDir = filepath.Join(d, "mcpx", "wasm-test")
	})
	return cacheDir
}

func hostile(t testing.TB) []byte {
	return wasmtest.Build(t, wasmtest.Go, "./layers/wasm/testdata/hostile")
}

func readDoc(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "docs", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// newEngine runs chain with cfg over a memory store.
func newEngine(t testing.TB, cfg engine.Config, listener engine.Listener) *engine.Engine {
	t.Helper()
	eng, err := engine.New(engine.Options{Store: memstore.New(memstore.Config{}), Config: cfg, Listener: listener})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close(context.Background()) })
	return eng
}

func rawJSON(t testing.TB, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// events collects engine events.
type events struct {
	mu  sync.Mutex
	evs []engine.Event
}

func (e *events) OnEvent(ev engine.Event) {
	e.mu.Lock()
	e.evs = append(e.evs, ev)
	e.mu.Unlock()
}

func (e *events) of(typ engine.EventType) []engine.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []engine.Event
	for _, ev := range e.evs {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

func newStore() *memstore.Store { return memstore.New(memstore.Config{}) }

// newEngineWithHost builds an engine whose custom and presets layers run
// on h rather than the default host.
func newEngineWithHost(t testing.TB, h *wasm.Host, cfg engine.Config, log hclog.Logger) *engine.Engine {
	t.Helper()
	reg := layer.NewRegistry().With(wasm.Layers(h)...)
	eng, err := engine.New(engine.Options{Store: newStore(), Config: cfg, Registry: reg, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close(context.Background()) })
	return eng
}

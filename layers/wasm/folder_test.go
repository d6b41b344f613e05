package wasm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/internal/syncbuf"
	"github.com/mcpx-dev/mcpx/internal/wasmtest"
	"github.com/mcpx-dev/mcpx/layers/wasm"
	"github.com/mcpx-dev/mcpx/plugins"
)

func tableauBuilds(t *testing.T) (tiny, std []byte) {
	info, ok := plugins.Lookup("tableau")
	if !ok {
		t.Fatal("no tableau preset")
	}
	return info.Wasm, wasmtest.Build(t, wasmtest.Go, "./plugins/tableau")
}

// writeAtomic replaces a file the way deploy tools do: temp file, rename.
func writeAtomic(t testing.TB, path string, b []byte) {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		t.Error(err)
		return
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Error(err)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute) // a cold compile under -race is slow
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestHotReloadUnderLoad: many calls at once through a folder plugin while
// the module is swapped again and again (by rename and by plain writes that
// a call may catch half written): every call completes on a whole plugin.
func TestHotReloadUnderLoad(t *testing.T) {
	tiny, std := tableauBuilds(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "tableau.wasm")
	writeAtomic(t, file, tiny)
	var logs syncbuf.Buffer
	log := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info})
	h := newHost(t, log)
	// The subject is reloading, not deadlines: a standard Go guest's
	// initialization can take over the default 2 s on a loaded machine
	// under -race, which would fail a reload.
	f, err := wasm.OpenFolder(context.Background(), h, dir, wasm.SandboxConfig{Timeout: time.Minute}, log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close(context.Background())
	if got := f.Names(); len(got) != 1 || got[0] != "tableau" {
		t.Fatalf("loaded %v, want [tableau]", got)
	}
	reg := layer.NewRegistry()
	reg.Register(layer.Info{Name: "custom", New: func(_ json.RawMessage, r layer.Resources) (layer.Layer, error) {
		return folderLayer{f}, nil
	}})
	in := readDoc(t, "tableau_download_workbook.json")
	// Warm the compilation cache with the standard build, whose first
	// compile takes seconds (much more under -race).
	if p, err := h.Compile(context.Background(), "warm", std, h.Sandbox(), nil); err != nil {
		t.Fatal(err)
	} else {
		_ = p.Close(context.Background())
	}

	var stop atomic.Bool
	var calls atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			eng, err := engine.New(engine.Options{Store: newStore(), Registry: reg, Config: engine.Config{Chain: []string{"custom"}}})
			if err != nil {
				t.Error(err)
				return
			}
			defer eng.Close(context.Background())
			for !stop.Load() {
				res, err := eng.Transform(context.Background(), engine.Call{Server: "tableau", Tool: "download_workbook"}, in)
				if err != nil {
					t.Error(err)
					return
				}
				if len(res.Failures) > 0 || len(res.Artifacts) != 1 || res.Artifacts[0].MIMEType != "application/pdf" {
					t.Errorf("call during reload: failures %v, artifacts %+v", res.Failures, res.Artifacts)
					return
				}
				calls.Add(1)
			}
		}()
	}
	gen0 := f.Generation()
	for i := 0; i < 6; i++ {
		bin := std
		if i%2 == 1 {
			bin = tiny
		}
		if i%3 == 2 {
			if err := os.WriteFile(file, bin, 0o644); err != nil { // not atomic
				t.Fatal(err)
			}
		} else {
			writeAtomic(t, file, bin)
		}
		want := gen0 + uint64(i) + 1
		start := time.Now()
		waitFor(t, "a reload:\n"+logs.String(), func() bool { return f.Generation() >= want })
		t.Logf("reload %d after %v", i, time.Since(start))
	}
	stop.Store(true)
	wg.Wait()
	if calls.Load() < 50 {
		t.Fatalf("only %d calls ran during the reloads", calls.Load())
	}
	t.Logf("%d calls across %d reloads", calls.Load(), f.Generation()-gen0)
}

// folderLayer is the custom layer over a given folder.
type folderLayer struct{ f *wasm.Folder }

func (l folderLayer) Plan(ctx context.Context, d *layer.Doc) ([]layer.Rewrite, error) {
	p := l.f.Plugin("tableau")
	if p == nil {
		return nil, nil
	}
	rws, err := p.Run(ctx, d, wasm.ModeCustom)
	for tries := 0; err != nil && strings.Contains(err.Error(), wasm.ErrClosed.Error()) && tries < 5; tries++ {
		// Retired between the lookup and the call: take the successor.
		rws, err = l.f.Plugin("tableau").Run(ctx, d, wasm.ModeCustom)
	}
	return rws, err
}

// TestFolderLifecycle: a bad module keeps the previous version serving and
// logs why; a sidecar changes what the plugin serves; removal unloads.
func TestFolderLifecycle(t *testing.T) {
	t.Parallel()
	tiny, _ := tableauBuilds(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "tableau.wasm")
	writeAtomic(t, file, tiny)
	var logs syncbuf.Buffer
	log := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info})
	h := newHost(t, log)

	cfg := engine.Config{Chain: []string{"custom"}, Layers: map[string]json.RawMessage{"custom": rawJSON(t, wasm.CustomOptions{Dir: dir})}}
	// The registered custom layer shares one Folder per dir across chains.
	eng := newEngineWithHost(t, h, cfg, log)
	in := readDoc(t, "tableau_download_workbook.json")
	run := func() *engine.Result {
		t.Helper()
		res, err := eng.Transform(context.Background(), engine.Call{Server: "tableau", Tool: "download_workbook"}, in)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := run(); len(res.Artifacts) != 1 {
		t.Fatalf("artifacts = %+v, want the PDF", res.Artifacts)
	}

	writeAtomic(t, file, []byte("not a module"))
	waitFor(t, "the failed load to be logged", func() bool { return strings.Contains(logs.String(), "previous version keeps serving") })
	if res := run(); len(res.Artifacts) != 1 || len(res.Failures) > 0 {
		t.Fatalf("after a bad module: artifacts %+v failures %v, want the previous version serving", res.Artifacts, res.Failures)
	}
	if !strings.Contains(logs.String(), "plugin[tableau]") {
		t.Fatalf("the log does not name the plugin:\n%s", logs.String())
	}

	writeAtomic(t, file, tiny)
	writeAtomic(t, filepath.Join(dir, "tableau.json"), []byte(`{"servers":["tableau-prod"]}`))
	waitFor(t, "the sidecar to apply", func() bool { return len(run().Artifacts) == 0 })

	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the plugin to unload", func() bool { return strings.Contains(logs.String(), "plugin removed") })
}

// TestInFlightFinishesOnOld: a call that started on a plugin finishes on it
// although a reload swaps in another version meanwhile; the next call runs
// on the new one.
func TestInFlightFinishesOnOld(t *testing.T) {
	dir := t.TempDir()
	writeAtomic(t, filepath.Join(dir, "slow.json"), []byte(`{"servers":["*"],"config":{"mode_":"slow"}}`))
	writeAtomic(t, filepath.Join(dir, "slow.wasm"), hostile(t))
	h := newHost(t, nil)
	f, err := wasm.OpenFolder(context.Background(), h, dir, wasm.SandboxConfig{Timeout: time.Minute}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close(context.Background())
	old := f.Plugin("slow")
	if old == nil {
		t.Fatal("not loaded")
	}
	d := layer.NewDoc(engine.Call{Server: "s", Tool: "t"}, []byte(`{"a":1}`))
	type result struct {
		rws []layer.Rewrite
		err error
	}
	done := make(chan result, 1)
	inGuest := make(chan struct{})
	var once sync.Once
	// The guest logs a line as the call enters it: the reload starts then.
	log := hclog.New(&hclog.LoggerOptions{Level: hclog.Info, Output: writerFunc(func(b []byte) (int, error) {
		if bytes.Contains(b, []byte("slow call started")) {
			once.Do(func() { close(inGuest) })
		}
		return len(b), nil
	})})
	started := time.Now()
	go func() {
		rws, err := old.Run(wasm.WithLogger(context.Background(), log), d, wasm.ModeCustom)
		done <- result{rws, err}
	}()
	select {
	case <-inGuest:
	case r := <-done:
		t.Fatalf("the slow call ended (%v) without logging its start", r.err)
	case <-time.After(time.Minute):
		t.Fatal("the slow call did not start")
	}
	gen := f.Generation()
	// The new version: the same module with another config.
	writeAtomic(t, filepath.Join(dir, "slow.json"), []byte(`{"servers":["*"],"config":{"mode_":"ok"}}`))
	waitFor(t, "the reload", func() bool { return f.Generation() > gen })
	if len(done) > 0 {
		t.Fatalf("the slow call finished %v after it started, before the reload: make the guest slower", time.Since(started))
	}
	var r result
	select {
	case r = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the in-flight call did not finish")
	}
	if r.err != nil || len(r.rws) != 1 || string(r.rws[0].Value) != `{"slow":0}` && string(r.rws[0].Value) != `{"slow":1}` {
		t.Fatalf("in-flight call: %v %+v, want the old version's answer", r.err, r.rws)
	}
	if rws, err := f.Plugin("slow").Run(context.Background(), d, wasm.ModeCustom); err != nil || len(rws) != 0 {
		t.Fatalf("after the reload: %v %+v, want the new version's empty answer", err, rws)
	}
	if _, err := old.Run(context.Background(), d, wasm.ModeCustom); !errors.Is(err, wasm.ErrClosed) {
		t.Fatalf("the old version after its last call: %v, want ErrClosed", err)
	}
}

// writerFunc is an io.Writer made of a function.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

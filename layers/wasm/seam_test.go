package wasm_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/internal/syncbuf"
	"github.com/mcpx-dev/mcpx/layers/wasm"
	"github.com/mcpx-dev/mcpx/plugins"
)

// TestSeamArrows: the engine knows nothing of WASM plugins (no
// layers/wasm, no presets in its build, and wazero only as the content
// summaries' PDF reader, package inspect, links it), the presets are data
// that import nothing of mcpx, and layers/wasm reaches the engine only
// through engine/layer, the layer author's API.
func TestSeamArrows(t *testing.T) {
	t.Parallel()
	const mod = "github.com/mcpx-dev/mcpx/"
	deps := func(pkg string) []string {
		out, err := exec.Command("go", "list", "-deps", mod+pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		return strings.Fields(string(out))
	}
	inspect := deps("inspect")
	for _, pkg := range deps("engine") {
		for _, bad := range []string{"github.com/tetratelabs/wazero", mod + "layers", mod + "plugins"} {
			if (pkg == bad || strings.HasPrefix(pkg, bad+"/")) && !slices.Contains(inspect, pkg) {
				t.Errorf("engine links %s", pkg)
			}
		}
	}
	for _, pkg := range inspect {
		if strings.HasPrefix(pkg, mod+"layers") || strings.HasPrefix(pkg, mod+"plugins") {
			t.Errorf("inspect links %s", pkg)
		}
	}
	for _, pkg := range deps("plugins") {
		if strings.HasPrefix(pkg, mod) && pkg != mod+"plugins" {
			t.Errorf("plugins links %s: the presets are data", pkg)
		}
	}
	if slices.Contains(deps("layers/wasm"), mod+"engine") {
		t.Errorf("layers/wasm links package engine: a layer needs engine/layer only")
	}
}

// TestLayersOnDemand: the kinds LayersOnDemand returns make their Host
// when the first layer is built, not before; every layer built from them,
// in one engine or several, runs on that one Host, which closes when the
// last of them closes (the engines' Close), and a later layer makes a new
// one. A layer that fails to build lets go of the Host at once.
func TestLayersOnDemand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var logs syncbuf.Buffer
	log := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Debug})
	reg := layer.NewRegistry().With(wasm.LayersOnDemand(wasm.HostOptions{CacheDir: "-", Logger: log, Presets: plugins.Catalog()})...)
	counts := func(wantMade, wantClosed int, when string) {
		t.Helper()
		made := strings.Count(logs.String(), "plugin host made on demand")
		closed := strings.Count(logs.String(), "on-demand plugin host closed")
		if made != wantMade || closed != wantClosed {
			t.Fatalf("%s: %d hosts made, %d closed; want %d and %d\n%s", when, made, closed, wantMade, wantClosed, logs.String())
		}
	}
	newEngine := func(cfg engine.Config) *engine.Engine {
		t.Helper()
		cfg.Chain = []string{"custom", "presets"}
		eng, err := engine.New(engine.Options{Store: newStore(), Registry: reg, Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		return eng
	}

	one, two := newEngine(engine.Config{}), newEngine(engine.Config{})
	counts(0, 0, "two engines, no chain built")
	for _, tool := range []string{"a", "b"} {
		if err := one.Validate("tableau", tool); err != nil {
			t.Fatal(err)
		}
	}
	res, err := two.Transform(ctx, engine.Call{Server: "tableau", Tool: "download_workbook"}, readDoc(t, "tableau_download_workbook.json"))
	if err != nil || len(res.Artifacts) != 1 || res.Artifacts[0].Source.Layer != "presets" {
		t.Fatalf("the tableau preset on the on-demand host: %v %+v %v", err, res.Artifacts, res.Failures)
	}
	counts(1, 0, "three chains of two engines")
	for range 2 {
		if err := one.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	counts(1, 0, "one engine closed (twice), one open")
	if err := two.Close(ctx); err != nil {
		t.Fatal(err)
	}
	counts(1, 1, "both engines closed")

	three := newEngine(engine.Config{})
	if err := three.Validate("tableau", "a"); err != nil {
		t.Fatal(err)
	}
	counts(2, 1, "a chain after the last close")
	if err := three.Close(ctx); err != nil {
		t.Fatal(err)
	}
	counts(2, 2, "the third engine closed")

	missing := filepath.Join(t.TempDir(), "missing.wasm")
	bad := newEngine(engine.Config{Layers: map[string]json.RawMessage{"custom": rawJSON(t, wasm.CustomOptions{Plugins: []wasm.PluginFile{{File: missing}}})}})
	defer bad.Close(ctx)
	if err := bad.Validate("s", "t"); err == nil || !strings.Contains(err.Error(), "missing.wasm") {
		t.Fatalf("a missing plugin file: %v", err)
	}
	counts(3, 3, "a custom layer that failed to build")
}

// TestLayersLeaveTheHost: the kinds Layers binds to a Host run on it and
// never close it; the caller does. Layers without a Host is a wiring bug.
func TestLayersLeaveTheHost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHost(t, nil)
	eng := newEngineWithHost(t, h, engine.Config{Chain: []string{"custom", "presets"}}, nil)
	res, err := eng.Transform(ctx, engine.Call{Server: "tableau", Tool: "download_workbook"}, readDoc(t, "tableau_download_workbook.json"))
	if err != nil || len(res.Artifacts) != 1 {
		t.Fatalf("%v %+v %v", err, res.Artifacts, res.Failures)
	}
	if err := eng.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Preset(ctx, "github"); err != nil {
		t.Fatalf("the host after the engine's Close: %v", err)
	}
	func() {
		defer func() {
			if r := recover(); r != "wasm: Layers needs a Host; LayersOnDemand makes its own" {
				t.Errorf("Layers(nil): recovered %v", r)
			}
		}()
		wasm.Layers(nil)
	}()
}

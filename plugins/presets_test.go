package plugins_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/internal/wasmtest"
	"github.com/mcpx-dev/mcpx/layers/wasm"
	"github.com/mcpx-dev/mcpx/plugins"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

var update = flag.Bool("update", false, "rewrite the .golden.json files")

func TestMain(m *testing.M) {
	code := m.Run()
	wasmtest.Cleanup()
	os.Exit(code)
}

// TestEmbeddedFresh rebuilds every preset from source with TinyGo and
// fails when the module embedded in the binary differs: a stale preset.
func TestEmbeddedFresh(t *testing.T) {
	for _, name := range plugins.Names() {
		t.Run(name, func(t *testing.T) {
			info, _ := plugins.Lookup(name)
			fresh := wasmtest.Build(t, wasmtest.TinyGo, "./plugins/"+name)
			if !bytes.Equal(fresh, info.Wasm) {
				t.Fatalf("plugins/%s/%s.wasm (%d bytes) is stale: a fresh build has %d bytes; rebuild it with scripts/build-wasm.sh",
					name, name, len(info.Wasm), len(fresh))
			}
		})
	}
}

// caseCall is <case>.call.json.
type caseCall struct {
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
}

type golden struct {
	Result    json.RawMessage `json:"result"`
	Artifacts []goldenRef     `json:"artifacts"`
	Failures  []string        `json:"failures,omitempty"`
}

type goldenRef struct {
	ID       string `json:"id"`
	MIMEType string `json:"mime_type"`
	Size     int64  `json:"size_bytes"`
	Filename string `json:"filename"`
	Path     string `json:"path"`
}

// TestGolden runs each preset, built by TinyGo (the embedded module) and
// by the standard Go toolchain, over real response shapes in
// <preset>/testdata: both builds must give the .golden.json.
func TestGolden(t *testing.T) {
	ctx := context.Background()
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	h, err := wasm.NewHost(ctx, wasm.HostOptions{CacheDir: filepath.Join(cache, "mcpx", "wasm-test")})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	for _, name := range plugins.Names() {
		info, _ := plugins.Lookup(name)
		ins, _ := filepath.Glob(filepath.Join(name, "testdata", "*.in.json"))
		if len(ins) < 5 {
			t.Fatalf("preset %s: %d cases, want at least 5", name, len(ins))
		}
		for _, build := range []string{"tinygo", "go"} {
			t.Run(name+"/"+build, func(t *testing.T) {
				bin := info.Wasm
				if build == "go" {
					bin = wasmtest.Build(t, wasmtest.Go, "./plugins/"+name)
				}
				p, err := h.Compile(ctx, name, bin, wasm.SandboxConfig{}, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer p.Close(ctx)
				for _, in := range ins {
					base := strings.TrimSuffix(in, ".in.json")
					t.Run(filepath.Base(base), func(t *testing.T) {
						runCase(t, p, base, build == "tinygo")
					})
				}
			})
		}
	}
}

func runCase(t *testing.T, p *wasm.Plugin, base string, mayUpdate bool) {
	raw, err := os.ReadFile(base + ".in.json")
	if err != nil {
		t.Fatal(err)
	}
	var call caseCall
	b, err := os.ReadFile(base + ".call.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &call); err != nil {
		t.Fatal(err)
	}
	reg := layer.NewRegistry()
	reg.Register(layer.Info{Name: "presets", New: func(json.RawMessage, layer.Resources) (layer.Layer, error) {
		return layerOnly{p}, nil
	}})
	st := memstore.New(memstore.Config{})
	eng, err := engine.New(engine.Options{Store: st, Registry: reg, Config: engine.Config{Chain: []string{"presets"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(context.Background())
	res, err := eng.Transform(context.Background(), engine.Call{Server: call.Server, Tool: call.Tool, Arguments: call.Arguments}, raw)
	if err != nil {
		t.Fatal(err)
	}
	if !gjson.ValidBytes(res.Raw) {
		t.Fatalf("output is not JSON:\n%s", res.Raw)
	}
	g := golden{Result: res.Raw}
	for _, a := range res.Artifacts {
		rc, ref, err := st.Get(context.Background(), a.ID, nil)
		if err != nil {
			t.Fatalf("artifact %s: %v", a.ID, err)
		}
		rc.Close()
		if ref.SizeBytes != a.SizeBytes {
			t.Fatalf("artifact %s: stored %d bytes, ref says %d", a.ID, ref.SizeBytes, a.SizeBytes)
		}
		g.Artifacts = append(g.Artifacts, goldenRef{ID: a.ID, MIMEType: a.MIMEType, Size: a.SizeBytes, Filename: a.Filename, Path: a.Source.Path})
	}
	for _, f := range res.Failures {
		g.Failures = append(g.Failures, f.Error())
	}
	got, err := json.MarshalIndent(g, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := base + ".golden.json"
	if *update && mayUpdate {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./plugins -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run go test ./plugins -update and review the diff)\n--- got:\n%s", path, clip(got))
	}
}

// layerOnly hides the plugin's Close from the engine: the test owns it.
type layerOnly struct{ p *wasm.Plugin }

func (l layerOnly) Plan(ctx context.Context, d *layer.Doc) ([]layer.Rewrite, error) {
	return l.p.Plan(ctx, d)
}

func clip(b []byte) string {
	if len(b) > 4000 {
		return fmt.Sprintf("%s... (%d bytes)", b[:4000], len(b))
	}
	return string(b)
}

package layers_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	_ "github.com/mcpx-dev/mcpx/layers"
	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

var update = flag.Bool("update", false, "rewrite the .golden.json files")

// caseCall is the optional <case>.call.json beside an input.
type caseCall struct {
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Config    engine.Config   `json:"config"`
}

// golden is what a .golden.json holds: the result and what was stored.
type golden struct {
	Result    json.RawMessage `json:"result"`
	Artifacts []goldenRef     `json:"artifacts"`
	Failures  []string        `json:"failures,omitempty"`
	Clamped   bool            `json:"clamped,omitempty"`
}

type goldenRef struct {
	ID       string `json:"id"`
	MIMEType string `json:"mime_type"`
	Size     int64  `json:"size_bytes"`
	Filename string `json:"filename"`
	Layer    string `json:"layer"`
	Path     string `json:"path"`
}

// TestGolden runs every testdata/<layer>/<case>.in.json through its layer
// alone (<case>.golden.json) and through the whole default chain
// (<case>.chain.golden.json). testdata/chain/ cases run the chain only.
func TestGolden(t *testing.T) {
	ins, err := filepath.Glob("testdata/*/*.in.json")
	if err != nil || len(ins) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	for _, in := range ins {
		layer := filepath.Base(filepath.Dir(in))
		name := strings.TrimSuffix(in, ".in.json")
		t.Run(layer+"/"+filepath.Base(name), func(t *testing.T) {
			raw, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			var call caseCall
			if b, err := os.ReadFile(name + ".call.json"); err == nil {
				if err := json.Unmarshal(b, &call); err != nil {
					t.Fatal(err)
				}
			}
			if call.Server == "" {
				call.Server = "test"
			}
			if call.Tool == "" {
				call.Tool = layer
			}
			if layer != "chain" {
				cfg := call.Config
				cfg.Chain = []string{layer}
				runCase(t, raw, call, cfg, name+".golden.json")
			}
			runCase(t, raw, call, call.Config, name+".chain.golden.json")
		})
	}
}

func runCase(t *testing.T, raw []byte, call caseCall, cfg engine.Config, goldenPath string) {
	t.Helper()
	ctx := context.Background()
	st := memstore.New(memstore.Config{})
	eng, err := engine.New(engine.Options{Store: st, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	res, err := eng.Transform(ctx, engine.Call{Server: call.Server, Tool: call.Tool, Arguments: call.Arguments}, raw)
	if err != nil {
		t.Fatal(err)
	}
	if !gjson.ValidBytes(res.Raw) {
		t.Fatalf("output is not valid JSON:\n%s", res.Raw)
	}
	if len(cfg.Chain) == 0 && len(res.Raw) > 50000 {
		t.Errorf("chain output is %d chars, over the 50,000 default", len(res.Raw))
	}
	g := golden{Result: res.Raw, Clamped: res.Clamped}
	for _, a := range res.Artifacts {
		checkStored(t, st, a)
		g.Artifacts = append(g.Artifacts, goldenRef{ID: a.ID, MIMEType: a.MIMEType, Size: a.SizeBytes, Filename: a.Filename, Layer: a.Source.Layer, Path: a.Source.Path})
		if bytes.Contains(res.Raw, []byte(a.SHA256)) && !strings.Contains(string(res.Raw), a.ID) {
			t.Errorf("artifact %s is not referenced by id in the output", a.ID)
		}
	}
	for _, f := range res.Failures {
		g.Failures = append(g.Failures, f.Error())
	}
	got, err := json.MarshalIndent(g, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	if *update {
		if err := os.WriteFile(goldenPath, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatalf("%v (run go test ./layers -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run go test ./layers -update and review the diff)\n--- got:\n%s", goldenPath, clip(got))
	}
}

// checkStored reads an artifact back and checks its size and hash.
func checkStored(t *testing.T, st store.Store, a engine.ArtifactRef) {
	t.Helper()
	rc, _, err := st.Get(context.Background(), a.ID, nil)
	if err != nil {
		t.Fatalf("artifact %s: %v", a.ID, err)
	}
	defer rc.Close()
	h := sha256.New()
	n, err := io.Copy(h, rc)
	if err != nil {
		t.Fatal(err)
	}
	if n != a.SizeBytes || hex.EncodeToString(h.Sum(nil)) != a.SHA256 {
		t.Errorf("artifact %s: read back %d bytes with another hash than its ref", a.ID, n)
	}
}

func clip(b []byte) []byte {
	if len(b) > 4000 {
		return append(b[:4000:4000], "..."...)
	}
	return b
}

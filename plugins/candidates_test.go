package plugins_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/layers/wasm"
	"github.com/mcpx-dev/mcpx/plugins"
)

// A preset that claims CandidatesOnly is not loaded for a result without a
// long string, so it must answer no rewrites for one: each case of its
// testdata, with every string cut below the skeleton's threshold (the
// embedded TinyGo module, the call's own tool and arguments). The uncut
// cases must give rewrites somewhere, or the cut proves nothing.
func TestCandidatesOnly(t *testing.T) {
	ctx := context.Background()
	h, err := wasm.NewHost(ctx, wasm.HostOptions{CacheDir: "-"})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	for _, name := range plugins.Names() {
		info, _ := plugins.Lookup(name)
		if !info.CandidatesOnly {
			continue
		}
		t.Run(name, func(t *testing.T) {
			p, err := h.Compile(ctx, name, info.Wasm, wasm.SandboxConfig{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close(ctx)
			ins, _ := filepath.Glob(filepath.Join(name, "testdata", "*.in.json"))
			uncut := 0
			for _, in := range ins {
				raw, err := os.ReadFile(in)
				if err != nil {
					t.Fatal(err)
				}
				var call caseCall
				b, err := os.ReadFile(strings.TrimSuffix(in, ".in.json") + ".call.json")
				if err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal(b, &call); err != nil {
					t.Fatal(err)
				}
				c := engine.Call{Server: call.Server, Tool: call.Tool, Arguments: call.Arguments}
				rws, err := p.Run(ctx, layer.NewDoc(c, raw), wasm.ModeRewrites)
				if err != nil {
					t.Fatal(err)
				}
				uncut += len(rws)
				short := cutStrings(t, raw, 100)
				d := layer.NewDoc(c, short)
				if n := len(d.Strings(wasm.DefaultLongString)); n != 0 {
					t.Fatalf("%s: %d strings still long after the cut", in, n)
				}
				if rws, err := p.Run(ctx, d, wasm.ModeRewrites); err != nil || len(rws) != 0 {
					t.Errorf("%s without long strings: %d rewrites (%v), want none: the preset is not CandidatesOnly", filepath.Base(in), len(rws), err)
				}
			}
			if uncut == 0 {
				t.Fatal("no case gave a rewrite even uncut")
			}
		})
	}
}

// cutStrings returns raw with every string value cut to at most n runes,
// the text of text blocks included (a JSON payload in a text then stays
// text).
func cutStrings(t *testing.T, raw []byte, n int) []byte {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	var cut func(any) any
	cut = func(v any) any {
		switch x := v.(type) {
		case string:
			if r := []rune(x); len(r) > n {
				return string(r[:n])
			}
		case []any:
			for i := range x {
				x[i] = cut(x[i])
			}
		case map[string]any:
			for k := range x {
				x[k] = cut(x[k])
			}
		}
		return v
	}
	out, err := json.Marshal(cut(v))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

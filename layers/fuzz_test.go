package layers_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

// FuzzChain runs the whole default chain on arbitrary JSON and checks the
// invariants: valid JSON out, bounded size, every ref resolves, and every
// string of the input is either still in the output or retrievable
// byte-exact from the store (as text, as decoded base64, or inside a stored
// JSON value). The fastmcp layer is off: it reshapes the document on
// purpose.
func FuzzChain(f *testing.F) {
	ins, _ := filepath.Glob("testdata/*/*.in.json")
	for _, in := range ins {
		if b, err := os.ReadFile(in); err == nil && len(b) < 200_000 {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"content":[{"type":"text","text":"{\"a\":\"JVBERi0xLjQKJeLjz9MK\"}"}]}`))
	f.Add([]byte(`[1,"x",{"y":null}]`))
	f.Add([]byte(`"` + strings.Repeat("A", 2000) + `"`))
	f.Fuzz(func(t *testing.T, in []byte) {
		ctx := context.Background()
		st := memstore.New(memstore.Config{})
		cfg := engine.Config{Layers: map[string]json.RawMessage{
			"fastmcp":    json.RawMessage(`{"enabled":false}`),
			"magicbytes": json.RawMessage(`{"min_size_for_detection":16}`),
			"sizenet":    json.RawMessage(`{"max_inline_size":2000}`),
			"guardrail":  json.RawMessage(`{"max_observation_chars":6000,"max_field_chars":1000,"auto_artifact_threshold":1500}`),
		}}
		eng, err := engine.New(engine.Options{Store: st, Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		res, err := eng.Transform(ctx, engine.Call{Server: "fuzz", Tool: "t"}, in)
		if err != nil {
			if !errors.Is(err, engine.ErrInvalidJSON) {
				t.Fatalf("unexpected error: %v", err)
			}
			if gjson.ValidBytes(in) && json.Valid(in) {
				t.Fatalf("valid JSON refused: %v", err)
			}
			return
		}
		if !json.Valid(res.Raw) {
			t.Fatalf("invalid JSON out:\n%s", res.Raw)
		}
		if limit := max(len(in), 6000) + 2000*len(res.Artifacts) + 2000; len(res.Raw) > limit {
			t.Fatalf("output %d bytes exceeds bound %d", len(res.Raw), limit)
		}
		stored := map[string][]byte{}
		for _, a := range res.Artifacts {
			rc, _, err := st.Get(ctx, a.ID, nil)
			if err != nil {
				t.Fatalf("ref %s does not resolve: %v", a.ID, err)
			}
			b, _ := io.ReadAll(rc)
			rc.Close()
			stored[a.ID] = b
		}
		for _, id := range refIDs(res.Raw) {
			if ok, _ := st.Exists(ctx, id); !ok {
				t.Fatalf("output names artifact %s that is not stored", id)
			}
		}
		out := map[string]bool{}
		collectStrings(res.Raw, out, 0)
		var all strings.Builder
		for s := range out {
			all.WriteString(s)
			all.WriteByte(0)
		}
		visible := all.String()
		in2 := map[string]bool{}
		collectStrings(in, in2, 0)
		for s := range in2 {
			// Still visible (small strings such as a block's type or uri
			// may move into a summary), or stored.
			if out[s] || strings.Contains(visible, s) || retrievable(s, stored) {
				continue
			}
			t.Fatalf("string of %d bytes lost: %.200q", len(s), s)
		}
	})
}

var refRE = regexp.MustCompile(`mcpx://artifacts/([a-z0-9-]+_[0-9a-f]+)`)

func refIDs(raw []byte) []string {
	var ids []string
	for _, m := range refRE.FindAllSubmatch(raw, -1) {
		ids = append(ids, string(m[1]))
	}
	return ids
}

// collectStrings adds every string value and key of raw, descending into
// strings that are themselves JSON documents (text carriers).
func collectStrings(raw []byte, into map[string]bool, depth int) {
	if depth > 4 {
		return
	}
	var walk func(r gjson.Result)
	walk = func(r gjson.Result) {
		switch {
		case r.IsObject() || r.IsArray():
			r.ForEach(func(k, v gjson.Result) bool {
				walk(v)
				return true
			})
		case r.Type == gjson.String:
			// A string holding a JSON document is a container: its strings
			// are what must survive.
			if t := strings.TrimSpace(r.Str); len(t) > 0 && (t[0] == '{' || t[0] == '[') && gjson.Valid(t) {
				collectStrings([]byte(t), into, depth+1)
				return
			}
			into[r.Str] = true
		}
	}
	walk(gjson.ParseBytes(raw))
}

func retrievable(s string, stored map[string][]byte) bool {
	for _, b := range stored {
		if string(b) == s || bytes.Contains(b, []byte(s)) {
			return true
		}
		if dec, ok := decodeAny(s); ok && bytes.Equal(dec, b) {
			return true
		}
		if json.Valid(b) {
			m := map[string]bool{}
			collectStrings(b, m, 0)
			if m[s] {
				return true
			}
		}
	}
	return false
}

func decodeAny(s string) ([]byte, bool) {
	if i := strings.Index(s, ";base64,"); strings.HasPrefix(s, "data:") && i > 0 {
		s = s[i+len(";base64,"):]
	}
	s = strings.NewReplacer("\n", "", "\r", "", " ", "", "\t", "").Replace(s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, true
		}
	}
	return nil, false
}

var _ store.Store = (*memstore.Store)(nil)

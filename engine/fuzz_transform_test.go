package engine_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"testing"

	"github.com/mcpx-dev/mcpx/engine"
	_ "github.com/mcpx-dev/mcpx/layers" // the built-in layers
	"github.com/mcpx-dev/mcpx/store/memstore"
)

// FuzzTransform runs the default chain over any tool result: input that
// is not JSON fails with ErrBadJSON and nothing else fails; the rewritten
// result is JSON; and every artifact it names reads back from the store
// with the size and sha256 the ref gives (nothing named that was not
// stored).
func FuzzTransform(f *testing.F) {
	f.Add([]byte(`{"content":[{"type":"image","data":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==","mimeType":"image/png"}]}`))
	f.Add([]byte(`{"content":[{"type":"text","text":"{\"data\":\"JVBERi0xLjQKJSBhIHBhZ2UgYSBwYWdlIGEgcGFnZSBhIHBhZ2UgYSBwYWdlIGEgcGFnZSBhIHBhZ2UK\"}"}]}`))
	f.Add([]byte(`{"content":[{"type":"resource","resource":{"uri":"file:///a.bin","blob":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+P0BBQkNERUZHSElKS0xNTk9QUVJTVFVWV1hZWltcXV5fYGFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6e3x9fn8="}}],"structuredContent":{"a":[1,2,{"b":null}]}}`))
	f.Add([]byte(`{"content":[{"type":"text","text":"plain"}],"isError":true}`))
	f.Add([]byte(`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`))
	f.Add([]byte(`{"content":"\u0000\ud800","x":1e999}`))
	f.Add([]byte(`{"content":[{"type":"text","text":"`))
	st := memstore.New(memstore.Config{})
	eng, err := engine.New(engine.Options{Store: st})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = eng.Close(context.Background()) })
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, raw []byte) {
		res, err := eng.Transform(ctx, engine.Call{Server: "fuzz", Tool: "t"}, raw)
		if !json.Valid(raw) {
			if !errors.Is(err, engine.ErrBadJSON) {
				t.Fatalf("Transform of input that is not JSON: %v, want ErrBadJSON", err)
			}
			return
		}
		if err != nil {
			t.Fatalf("Transform: %v", err)
		}
		if !json.Valid(res.Raw) {
			t.Fatalf("rewritten result is not JSON: %q", res.Raw)
		}
		for _, a := range res.Artifacts {
			if a.Truncated {
				continue
			}
			rc, ref, err := st.Get(ctx, a.ID, nil)
			if err != nil {
				t.Fatalf("artifact %s named in the result: %v", a.ID, err)
			}
			h := sha256.New()
			n, err := io.Copy(h, rc)
			rc.Close()
			if err != nil || n != a.SizeBytes || ref.SizeBytes != a.SizeBytes || (a.SHA256 != "" && hex.EncodeToString(h.Sum(nil)) != a.SHA256) {
				t.Fatalf("artifact %s reads back %d bytes (%v), ref says %d, sha256 %s", a.ID, n, err, a.SizeBytes, a.SHA256)
			}
		}
	})
}

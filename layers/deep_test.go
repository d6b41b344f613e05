package layers_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

// TestDeepNestingChain runs the chain on 10,000 nesting levels: no crash,
// valid JSON out, everything cut stored.
func TestDeepNestingChain(t *testing.T) {
	const depth = 10000
	for _, in := range []string{
		strings.Repeat("[", depth) + `"x"` + strings.Repeat("]", depth),
		strings.Repeat(`{"a":`, depth) + `"` + strings.Repeat("y", 60000) + `"` + strings.Repeat("}", depth),
	} {
		st := memstore.New(memstore.Config{})
		eng, err := engine.New(engine.Options{Store: st})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		res, err := eng.Transform(context.Background(), engine.Call{Server: "s", Tool: "t"}, []byte(in))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("depth %d: %d -> %d bytes in %v", depth, len(in), len(res.Raw), time.Since(start))
		if !json.Valid(res.Raw) || len(res.Failures) > 0 {
			t.Fatalf("invalid output or failures: %v", res.Failures)
		}
		if len(res.Raw) > 60000 {
			t.Errorf("output %d bytes", len(res.Raw))
		}
		for _, a := range res.Artifacts {
			checkStored(t, st, a)
		}
	}
}

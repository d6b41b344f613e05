package layers_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

func TestDeepNestingChain(t *testing.T) {
	const depth = 10000
	for _, in := range []string{
		strings.Repeat("[", depth) + `"x"` + strings.Repeat("]", depth),
		strings.Repeat(`{"a":`, depth) + `"` + strings.Repeat("y", 60000) + `"` + strings.Repeat("}", depth),
	} {
		eng, err := engine.New(engine.Options{Store: memstore.New(memstore.NewConfig())})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		res, err := eng.Transform(context.Background(), engine.Call{Server: "s", Tool: "t"}, []byte(in))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("depth %d: %d -> %d bytes in %v, failures %v", depth, len(in), len(res.Raw), time.Since(start), res.Failures)
		for _, a := range res.Artifacts {
			t.Logf("  %s %s %d %s", a.Source.Layer, a.ID, a.SizeBytes, a.MIMEType)
		}
	}
}

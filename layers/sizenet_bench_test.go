package layers_test

import (
	"context"
	"testing"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/internal/snapshottext"
	"github.com/mcpx-dev/mcpx/store/fsstore"
)

// BenchmarkChainText600K is the whole default chain (sizenet takes the
// block) on a 600,000-character text result, storing into fsstore: an
// accessibility snapshot as @playwright/mcp's browser_snapshot answers it,
// and plain text without a JSON escape.
func BenchmarkChainText600K(b *testing.B) {
	for _, kind := range []struct{ name, text string }{
		{"snapshot", snapshottext.Snapshot(600_000)},
		{"plain", snapshottext.Plain(600_000)},
	} {
		doc := snapshottext.Result(kind.text)
		b.Run(kind.name, func(b *testing.B) {
			st, err := fsstore.Open(context.Background(), b.TempDir(), fsstore.Config{})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close(context.Background())
			benchEngine(b, st, engine.Config{}, func(int) []byte { return doc }, true)
		})
	}
}

package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

// TestSummaryOfAScan: a stored PDF whose page is a scan is summarized
// with that page named, and a client that takes images (View.Images) is
// told to look at it as an image; another client is not.
func TestSummaryOfAScan(t *testing.T) {
	scan, err := os.ReadFile(filepath.Join("..", "inspect", "testdata", "pdf", "scan.pdf"))
	if err != nil {
		t.Fatal(err)
	}
	rws := fixed{{Path: "pdf", Target: layer.TargetResult, Action: layer.ActionArtifact, Encoding: layer.EncodingBase64}}
	eng := newEngine(t, memstore.New(memstore.Config{}), rws, nil)
	in := []byte(`{"pdf":"` + b64(scan) + `"}`)
	for _, tc := range []struct {
		view engine.View
		want string
	}{
		{engine.View{Profile: "claude-code", Images: true}, `; page 2 has no text (a scan or a drawing) is not in this result`},
		{engine.View{}, `; page 2 has no text (a scan or a drawing) is not in this result`},
	} {
		res, err := eng.Transform(context.Background(), engine.Call{Server: "docs", Tool: "get", View: tc.view}, in)
		if err != nil || len(res.Artifacts) != 1 {
			t.Fatalf("transform: %v %+v", err, res)
		}
		sum := gjson.GetBytes(res.Raw, "pdf.summary").String()
		look := `ask artifacts_query for page 2 with view "image" to look at it, artifacts_search for words`
		if !strings.Contains(sum, tc.want) || strings.Contains(sum, look) != tc.view.Images {
			t.Errorf("images %v: summary %q", tc.view.Images, sum)
		}
	}
}

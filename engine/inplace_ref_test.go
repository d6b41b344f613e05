package engine_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

// A value replaced in place inside JSON (structuredContent, a
// JSON-in-text block) showed the model the whole ArtifactRef (sha256,
// source server/tool/path/layer, ...). The model reads what names the
// artifact and what it is; hosts find the full ref in
// _meta["mcpx/artifacts"], once per value even when the payload is in two
// carriers.
func TestInPlaceRefIsCompactAndFullRefInMeta(t *testing.T) {
	t.Parallel()
	payload := `{"file":{"name":"report.pdf","data":"` + b64(pdf) + `"}}`
	in := `{"content":[{"type":"text","text":` + jsonString(payload) + `}],"structuredContent":` + payload + `}`
	eng := newEngine(t, memstore.New(memstore.Config{}), fixed{
		{Path: "file.data", Action: layer.ActionArtifact, Encoding: layer.EncodingBase64},
	}, nil)
	res, err := eng.Transform(context.Background(), engine.Call{Server: "srv", Tool: "get_file"}, []byte(in))
	if err != nil || len(res.Failures) > 0 {
		t.Fatalf("transform: %v %v", err, res.Failures)
	}
	if len(res.Artifacts) != 1 {
		t.Fatalf("%d artifacts, want 1: %s", len(res.Artifacts), res.Raw)
	}
	id := res.Artifacts[0].ID
	inText := gjson.Get(gjson.GetBytes(res.Raw, "content.0.text").String(), "file.data")
	for where, v := range map[string]gjson.Result{"structuredContent": gjson.GetBytes(res.Raw, "structuredContent.file.data"), "text": inText} {
		var keys []string
		v.Get("artifact").ForEach(func(k, _ gjson.Result) bool { keys = append(keys, k.String()); return true })
		if want := []string{"id", "uri", "mime_type", "size_bytes"}; !slices.Equal(keys, want) {
			t.Errorf("%s: the model reads ref members %v, want %v: %s", where, keys, want, v.Raw)
		}
		if v.Get("artifact.id").String() != id || v.Get("artifact.uri").String() != engine.URIScheme+id || v.Get("summary").String() == "" {
			t.Errorf("%s: in-place ref lost its id, uri or summary: %s", where, v.Raw)
		}
		t.Logf("%s: in-place object %d bytes, ~%d tokens", where, len(v.Raw), engine.EstimateTokens([]byte(v.Raw)))
	}
	meta := gjson.GetBytes(res.Raw, `_meta.mcpx/artifacts`).Array()
	if len(meta) != 1 {
		t.Fatalf("_meta lists %d refs, want 1 (one value in two carriers): %s", len(meta), res.Raw)
	}
	m := meta[0]
	if m.Get("path").String() != "structuredContent.file.data" {
		t.Errorf("_meta ref path %q, want structuredContent.file.data", m.Get("path"))
	}
	var full engine.ArtifactRef
	if err := json.Unmarshal([]byte(m.Get("artifact").Raw), &full); err != nil {
		t.Fatal(err)
	}
	if full.ID != id || full.SHA256 == "" || full.Source.Tool != "get_file" || full.Source.Path != "file.data" || full.Filename == "" {
		t.Errorf("_meta ref is not the full ref: %s", m.Raw)
	}
}

// A JSON-in-text block that holds another payload than structuredContent
// names its refs by the block and the path inside its JSON.
func TestInPlaceRefInTextBlockNamedInMeta(t *testing.T) {
	t.Parallel()
	payload := `{"file":{"name":"a.pdf","data":"` + b64(pdf) + `"}}`
	in := `{"content":[{"type":"text","text":"hello"},{"type":"text","text":` + jsonString(payload) + `}]}`
	eng := newEngine(t, memstore.New(memstore.Config{}), fixed{
		{Path: "file.data", Action: layer.ActionArtifact, Encoding: layer.EncodingBase64},
	}, nil)
	res, err := eng.Transform(context.Background(), engine.Call{Server: "srv", Tool: "get_file"}, []byte(in))
	if err != nil || len(res.Failures) > 0 || len(res.Artifacts) != 1 {
		t.Fatalf("transform: %v %v %s", err, res.Failures, res.Raw)
	}
	m := gjson.GetBytes(res.Raw, `_meta.mcpx/artifacts.0`)
	if m.Get("path").String() != "content.1.text" || m.Get("json_path").String() != "file.data" || m.Get("artifact.sha256").String() == "" {
		t.Errorf("_meta ref of a text block's value: %s", m.Raw)
	}
}

package engine_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

// Every base64 original an artifact rewrite decodes is reproducible byte-
// exact from the store and the ref: plain base64 re-encodes to
// itself, other shapes through the ref's Encoding, and an original no shape
// rebuilds is stored as the string itself.
func TestBase64OriginalRecoverable(t *testing.T) {
	t.Parallel()
	hello := []byte("Hello, world! Some bytes: \x00\x01\x02\xfe\xff and more of them.")
	std := base64.StdEncoding.EncodeToString(hello)
	for _, tc := range []struct {
		name, lit string // lit is the JSON string literal's body
		decoded   bool   // the stored bytes are the decoded ones
		shape     string // the ref's encoding as JSON, "" for none
	}{
		{"plain", std, true, ""},
		{"escaped slash", `SGV\/bG8=`, true, ""},
		{"unicode escape", `SGV\u002FbG8=`, true, ""},
		{"wrapped", `SGVs\nbG8=`, true, `{"line_width":4,"line_end":"\n"}`},
		{"wrapped crlf final", `SGVs\r\nbG8=\r\n`, true, `{"line_width":4,"line_end":"\r\n","final_line_end":true}`},
		{"data uri", `data:text/plain;base64,SGVsbG8=`, true, `{"prefix":"data:text/plain;base64,"}`},
		{"data uri escaped", `data:text\/plain;base64,SGVsbG8=`, true, `{"prefix":"data:text/plain;base64,"}`},
		{"url safe unpadded", base64.RawURLEncoding.EncodeToString(hello), true, `{"alphabet":"url","unpadded":true}`},
		{"unpadded std", `SGVsbG8`, true, `{"unpadded":true}`},
		{"non-canonical tail", `TOKabc==`, false, ""},
		{"non-canonical tail 2", `TOKabQ==`, true, ""},
		{"ragged lines", `SGVsbG8g\nd29y\nbGQ=`, false, ""},
		{"stray space", `SGVs bG8=`, false, ""},
		{"leading newline", `\nSGVsbG8=`, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := memstore.New(memstore.Config{})
			eng := newEngine(t, st, fixed{{Path: "v", Action: layer.ActionArtifact, Encoding: layer.EncodingBase64}}, nil)
			in := []byte(`{"content":[],"structuredContent":{"v":"` + tc.lit + `"}}`)
			orig := gjson.GetBytes(in, "structuredContent.v").String()
			res, err := eng.Transform(context.Background(), engine.Call{Server: "s", Tool: "t"}, in)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Artifacts) != 1 {
				t.Fatalf("artifacts %v, failures %v", res.Artifacts, res.Failures)
			}
			ref := res.Artifacts[0]
			b := readAll(t, st, ref.ID)
			var got string
			switch {
			case ref.Encoding != nil:
				got = ref.Encoding.Encode(b)
			case tc.decoded:
				got = base64.StdEncoding.EncodeToString(b)
			default:
				got = string(b)
			}
			if got != orig {
				t.Fatalf("original %q, rebuilt %q", orig, got)
			}
			var shape []byte
			if ref.Encoding != nil {
				shape, _ = json.Marshal(ref.Encoding)
			}
			if string(shape) != tc.shape {
				t.Fatalf("encoding %s, want %s", shape, tc.shape)
			}
			// The full ref in the result's _meta carries the same
			// encoding; the model's compact ref does not.
			if enc := gjson.GetBytes(res.Raw, `_meta.mcpx/artifacts.0.artifact.encoding`).Raw; enc != tc.shape {
				t.Fatalf("result's encoding %s, want %s", enc, tc.shape)
			}
			if gjson.GetBytes(res.Raw, "structuredContent.v.artifact.encoding").Exists() {
				t.Fatalf("the model reads the encoding: %s", res.Raw)
			}
		})
	}
}

// Two shapes of the same bytes share an artifact, each ref carrying the
// shape that gives its own original back, where one ref for all of them
// gave back only one of the originals.
func TestBase64ShapesOfOneArtifact(t *testing.T) {
	t.Parallel()
	st := memstore.New(memstore.Config{})
	eng := newEngine(t, st, fixed{{Path: "#", Action: layer.ActionArtifact, Encoding: layer.EncodingBase64}}, nil)
	in := []byte(`["SGVs\nbG8=","data:text/plain;base64,SGVsbG8=","SGVsbG8="]`)
	res, err := eng.Transform(context.Background(), engine.Call{Server: "s", Tool: "t"}, in)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Artifacts) != 3 {
		t.Fatalf("artifacts %v", res.Artifacts)
	}
	for i, ref := range res.Artifacts {
		if ref.ID != res.Artifacts[0].ID {
			t.Fatalf("ref %d: id %s, want the shared %s", i, ref.ID, res.Artifacts[0].ID)
		}
		b := readAll(t, st, ref.ID)
		got := base64.StdEncoding.EncodeToString(b)
		if ref.Encoding != nil {
			got = ref.Encoding.Encode(b)
		}
		// Artifacts come in document order; Source is the store's first
		// sighting of the bytes, shared by all three.
		if want := gjson.ParseBytes(in).Array()[i].String(); got != want {
			t.Fatalf("ref %d: rebuilt %q, want %q", i, got, want)
		}
	}
}

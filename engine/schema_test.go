package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

// realValidator validates with google/jsonschema-go, as the gateway does.
type realValidator struct{ calls atomic.Int32 }

func (v *realValidator) Validate(schema, instance json.RawMessage) error {
	v.calls.Add(1)
	var s jsonschema.Schema
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil
	}
	var inst any
	if err := json.Unmarshal(instance, &inst); err != nil {
		return err
	}
	return rs.Validate(inst)
}

func schemaEngine(t *testing.T, rws []layer.Rewrite, v engine.SchemaValidator, fallback string) *engine.Engine {
	t.Helper()
	reg := layer.NewRegistry()
	reg.Register(layer.Info{Name: "test", New: func(json.RawMessage, layer.Resources) (layer.Layer, error) { return fixed(rws), nil }})
	eng, err := engine.New(engine.Options{Store: memstore.New(memstore.Config{}), Registry: reg, SchemaValidator: v,
		Config: engine.Config{Chain: []string{"test"}, SchemaFallback: fallback}})
	if err != nil {
		t.Fatal(err)
	}
	return eng
}

// The shapes of the MCP filesystem server (server-filesystem):
// read_media_file puts base64 in
// structuredContent.content[].data and read_text_file the text in
// structuredContent.content, both typed as strings by outputSchema.
const (
	mediaSchema = `{"type":"object","properties":{"content":{"type":"array","items":{"type":"object","properties":{"type":{"type":"string","enum":["image","audio","blob"]},"data":{"type":"string"},"mimeType":{"type":"string"}},"required":["type","data","mimeType"],"additionalProperties":false}}},"required":["content"],"additionalProperties":false,"$schema":"http://json-schema.org/draft-07/schema#"}`
	textSchema  = `{"type":"object","properties":{"content":{"type":"string"}},"required":["content"],"additionalProperties":false}`
)

func TestSchemaKeepsStringTypes(t *testing.T) {
	t.Parallel()
	png := pngBytes(3000)
	for _, tc := range []struct {
		name, schema, result string
		rws                  []layer.Rewrite
		path                 string
	}{
		{
			name:   "read_media_file",
			schema: mediaSchema,
			result: fmt.Sprintf(`{"content":[{"type":"image","data":%q,"mimeType":"image/png"}],"structuredContent":{"content":[{"type":"image","data":%q,"mimeType":"image/png"}]}}`, b64(png), b64(png)),
			rws:    []layer.Rewrite{{Path: "content.0.data", Action: layer.ActionArtifact, Encoding: layer.EncodingBase64}},
			path:   "structuredContent.content.0.data",
		},
		{
			name:   "read_text_file",
			schema: textSchema,
			result: fmt.Sprintf(`{"content":[{"type":"text","text":"x"}],"structuredContent":{"content":%q}}`, strings.Repeat("log line\n", 3000)),
			rws:    []layer.Rewrite{{Path: "content", Action: layer.ActionArtifact, Keep: 20}},
			path:   "structuredContent.content",
		},
		{
			name:   "ref and anyOf",
			schema: `{"type":"object","$defs":{"blob":{"anyOf":[{"type":"string"},{"type":"null"}]}},"properties":{"b":{"$ref":"#/$defs/blob"}}}`,
			result: fmt.Sprintf(`{"content":[],"structuredContent":{"b":%q}}`, b64(png)),
			rws:    []layer.Rewrite{{Path: "b", Action: layer.ActionArtifact, Encoding: layer.EncodingBase64}},
			path:   "structuredContent.b",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := &realValidator{}
			eng := schemaEngine(t, tc.rws, v, "")
			res, err := eng.Transform(context.Background(), engine.Call{Server: "fs", Tool: tc.name, OutputSchema: json.RawMessage(tc.schema)}, []byte(tc.result))
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Failures) > 0 {
				t.Fatalf("failures: %v", res.Failures)
			}
			got := gjson.GetBytes(res.Raw, tc.path)
			if got.Type != gjson.String || !strings.Contains(got.String(), engine.URIScheme+res.Artifacts[0].ID) {
				t.Fatalf("%s = %s, want a string naming the artifact", tc.path, got.Raw)
			}
			if n := v.calls.Load(); n != 1 {
				t.Fatalf("validator called %d times, want 1", n)
			}
			if err := v.Validate(json.RawMessage(tc.schema), json.RawMessage(gjson.GetBytes(res.Raw, "structuredContent").Raw)); err != nil {
				t.Fatalf("result fails its schema: %v\n%s", err, res.Raw)
			}
		})
	}
}

func TestSchemaObjectsKeepRequiredMembers(t *testing.T) {
	t.Parallel()
	png := pngBytes(3000)
	schema := `{"type":"object","properties":{"file":{"type":"object","properties":{"name":{"type":"string"},"size":{"type":"integer"},"bytes":{"type":"string"}},"required":["name","size","bytes"]}}}`
	result := fmt.Sprintf(`{"content":[],"structuredContent":{"file":{"name":"a.png","size":3000,"bytes":%q}}}`, b64(png))
	eng := schemaEngine(t, []layer.Rewrite{{Path: "file", Action: layer.ActionArtifact, Encoding: layer.EncodingJSON}}, &realValidator{}, "")
	res, err := eng.Transform(context.Background(), engine.Call{Server: "s", Tool: "t", OutputSchema: json.RawMessage(schema)}, []byte(result))
	if err != nil {
		t.Fatal(err)
	}
	f := gjson.GetBytes(res.Raw, "structuredContent.file")
	if f.Get("name").String() != "a.png" || f.Get("size").Int() != 3000 || !strings.Contains(f.Get("bytes").String(), engine.URIScheme) || !f.Get("artifact.uri").Exists() {
		t.Fatalf("file = %s: want the replacement plus name and size from the original and bytes as the summary", f.Raw)
	}
	if len(res.Failures) > 0 {
		t.Fatalf("failures: %v", res.Failures)
	}
}

func TestSchemaFallback(t *testing.T) {
	t.Parallel()
	png := pngBytes(3000)
	// The schema types the blob's place as a number: no rewrite fits.
	schema := `{"type":"object","properties":{"n":{"type":"integer","minimum":7}},"required":["n"]}`
	result := fmt.Sprintf(`{"content":[{"type":"text","text":"hi"}],"structuredContent":{"n":%q}}`, b64(png))
	rws := []layer.Rewrite{{Path: "n", Action: layer.ActionArtifact, Encoding: layer.EncodingBase64}}
	call := engine.Call{Server: "s", Tool: "t", OutputSchema: json.RawMessage(schema)}

	t.Run("placeholder", func(t *testing.T) {
		res, err := schemaEngine(t, rws, &realValidator{}, "").Transform(context.Background(), call, []byte(result))
		if err != nil {
			t.Fatal(err)
		}
		if got := gjson.GetBytes(res.Raw, "structuredContent.n").Raw; got != "7" {
			t.Fatalf("n = %s, want the placeholder 7", got)
		}
		uri := engine.URIScheme + res.Artifacts[0].ID
		if txt := gjson.GetBytes(res.Raw, "content.1.text").String(); !strings.Contains(txt, "structuredContent.n") || !strings.Contains(txt, uri) {
			t.Fatalf("content.1 = %q, want the reference", txt)
		}
		m := gjson.GetBytes(res.Raw, `_meta.mcpx/artifacts.0`)
		if m.Get("path").String() != "structuredContent.n" || m.Get("artifact.uri").String() != uri {
			t.Fatalf("_meta = %s", m.Raw)
		}
		var rerr *engine.RewriteError
		if len(res.Failures) != 1 || !errors.As(res.Failures[0], &rerr) || rerr.Step != "schema" || !errors.Is(res.Failures[0], engine.ErrSchemaMismatch) {
			t.Fatalf("failures = %v, want one schema mismatch", res.Failures)
		}
	})
	t.Run("keep", func(t *testing.T) {
		res, err := schemaEngine(t, rws, &realValidator{}, "keep").Transform(context.Background(), call, []byte(result))
		if err != nil {
			t.Fatal(err)
		}
		if got := gjson.GetBytes(res.Raw, "structuredContent.n").String(); got != b64(png) {
			t.Fatalf("n = %.80s, want the original value", got)
		}
		if gjson.GetBytes(res.Raw, `_meta`).Exists() {
			t.Fatalf("keep added _meta: %s", res.Raw)
		}
	})
	t.Run("validator rejects the fitted value", func(t *testing.T) {
		// A string that must be short: the summary fits the type, not the
		// schema, so the validator catches it and the fallback applies.
		schema := `{"type":"object","properties":{"s":{"type":"string","maxLength":8}}}`
		result := fmt.Sprintf(`{"content":[],"structuredContent":{"s":%q}}`, b64(png))
		rws := []layer.Rewrite{{Path: "s", Action: layer.ActionArtifact, Encoding: layer.EncodingBase64}}
		res, err := schemaEngine(t, rws, &realValidator{}, "").Transform(context.Background(), engine.Call{Server: "s", Tool: "t", OutputSchema: json.RawMessage(schema)}, []byte(result))
		if err != nil {
			t.Fatal(err)
		}
		if got := gjson.GetBytes(res.Raw, "structuredContent.s").Raw; got != `""` {
			t.Fatalf("s = %.80s, want the placeholter \"\"", got)
		}
		if !gjson.GetBytes(res.Raw, `_meta.mcpx/artifacts.0.artifact.id`).Exists() {
			t.Fatalf("no reference in _meta: %s", res.Raw)
		}
	})
	t.Run("bad option", func(t *testing.T) {
		_, err := engine.New(engine.Options{Store: memstore.New(memstore.Config{}), Config: engine.Config{SchemaFallback: "drop"}})
		if err == nil || !strings.Contains(err.Error(), "schema_fallback") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestSchemaUntouchedWithoutRewrites(t *testing.T) {
	t.Parallel()
	v := &realValidator{}
	eng := schemaEngine(t, nil, v, "")
	in := []byte(`{"content":[],"structuredContent":{"content":"short"}}`)
	res, err := eng.Transform(context.Background(), engine.Call{Server: "s", Tool: "t", OutputSchema: json.RawMessage(textSchema)}, in)
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Raw) != string(in) || v.calls.Load() != 0 {
		t.Fatalf("raw %s, %d validations: a result the chain left alone is not revalidated", res.Raw, v.calls.Load())
	}
}

func TestFilenameFromArguments(t *testing.T) {
	t.Parallel()
	png := pngBytes(3000)
	for _, tc := range []struct{ args, want string }{
		{`{"path":"/home/u/pics/photo.png"}`, "photo.png"},
		{`{"url":"https://example.com/a/b/chart.png?x=1#f"}`, "chart.png"},
		{`{"uri":"file:///tmp/My%20Photo.png"}`, "My Photo.png"},
		{`{"filename":"shot","path":"/x/y.png"}`, "shot.png"},
		{`{"path":"/x/report.pdf"}`, "report.png"},
		{`{"path":"C:\\Users\\u\\pic.png"}`, "pic.png"},
		{`{"path":"/"}`, "read_media_file-data.png"},
		{`{"name":"../../etc/passwd"}`, "passwd.png"},
		{`{}`, "read_media_file-data.png"},
	} {
		eng := schemaEngine(t, []layer.Rewrite{{Path: "data", Action: layer.ActionArtifact, Encoding: layer.EncodingBase64}}, nil, "")
		res, err := eng.Transform(context.Background(), engine.Call{Server: "fs", Tool: "read_media_file", Arguments: json.RawMessage(tc.args)}, []byte(fmt.Sprintf(`{"data":%q}`, b64(png))))
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Artifacts) != 1 || res.Artifacts[0].Filename != tc.want {
			t.Errorf("args %s: filename %v, want %q", tc.args, res.Artifacts, tc.want)
		}
	}
}

// pngBytes is a PNG signature followed by n bytes.
func pngBytes(n int) []byte {
	b := []byte("\x89PNG\r\n\x1a\n")
	for i := 0; len(b) < n; i++ {
		b = append(b, byte(i*7))
	}
	return b
}

// notChecked is a SchemaValidator past its limits: it never checks.
type notChecked struct{ calls atomic.Int32 }

func (v *notChecked) Validate(schema, instance json.RawMessage) error {
	v.calls.Add(1)
	return fmt.Errorf("%w: over the test's budget", engine.ErrSchemaNotChecked)
}

// A schema the validator will not check (a loop, a fan-out, a
// result past its budget) takes the schema fallback at once: the
// placeholder with the reference in content and _meta, or with "keep"
// the original value; the validator is asked once.
func TestSchemaNotCheckedFallsBack(t *testing.T) {
	t.Parallel()
	png := pngBytes(3000)
	schema := `{"type":"object","properties":{"s":{"type":"string"}}}`
	result := fmt.Sprintf(`{"content":[{"type":"text","text":"hi"}],"structuredContent":{"s":%q}}`, b64(png))
	rws := []layer.Rewrite{{Path: "s", Action: layer.ActionArtifact, Encoding: layer.EncodingBase64}}
	call := engine.Call{Server: "s", Tool: "t", OutputSchema: json.RawMessage(schema)}
	v := &notChecked{}
	res, err := schemaEngine(t, rws, v, "").Transform(context.Background(), call, []byte(result))
	if err != nil {
		t.Fatal(err)
	}
	if got := gjson.GetBytes(res.Raw, "structuredContent.s").Raw; got != `""` {
		t.Fatalf("s = %.80s, want the placeholder \"\"", got)
	}
	uri := engine.URIScheme + res.Artifacts[0].ID
	if !strings.Contains(gjson.GetBytes(res.Raw, "content.1.text").String(), uri) || gjson.GetBytes(res.Raw, `_meta.mcpx/artifacts.0.artifact.uri`).String() != uri {
		t.Fatalf("no reference to %s in content and _meta: %s", uri, res.Raw)
	}
	if len(res.Failures) != 1 || !errors.Is(res.Failures[0], engine.ErrSchemaNotChecked) || !errors.Is(res.Failures[0], engine.ErrSchemaMismatch) {
		t.Fatalf("failures = %v, want one ErrSchemaMismatch wrapping ErrSchemaNotChecked", res.Failures)
	}
	if n := v.calls.Load(); n != 1 {
		t.Fatalf("validator asked %d times, want once", n)
	}
	res, err = schemaEngine(t, rws, &notChecked{}, "keep").Transform(context.Background(), call, []byte(result))
	if err != nil {
		t.Fatal(err)
	}
	if got := gjson.GetBytes(res.Raw, "structuredContent.s").String(); got != b64(png) {
		t.Fatalf("keep: s = %.80s, want the original", got)
	}
}

// fanOut is $defs a0…a(levels-1), each anyOf of branches $refs to the
// next, the last {"type":"object"}.
func fanOut(levels, branches int) string {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{"b":{"$ref":"#/$defs/a0"}},"$defs":{`)
	for i := range levels {
		fmt.Fprintf(&b, `"a%d":{"anyOf":[`, i)
		for j := range branches {
			if j > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"$ref":"#/$defs/a%d"}`, i+1)
		}
		b.WriteString(`]},`)
	}
	fmt.Fprintf(&b, `"a%d":{"type":"object","required":["id"],"properties":{"id":{"type":"integer"}}}}}`, levels)
	return b.String()
}

// The type-keeping pass reads hostile schemas in bounded time: loops,
// anyOf fan-outs (each subschema is gathered once) and required members
// that nest without end (the placeholder is capped).
func TestSchemaKeeperBoundedOnHostileSchemas(t *testing.T) {
	png := pngBytes(3000)
	for name, schema := range map[string]string{
		"self ref":         `{"type":"object","properties":{"b":{"$ref":"#/$defs/a"}},"$defs":{"a":{"anyOf":[{"$ref":"#/$defs/a"},{"$ref":"#/$defs/a"},{"$ref":"#/$defs/a"},{"type":"integer"}]}}}`,
		"fan out":          fanOut(16, 6),
		"required forever": `{"type":"object","properties":{"b":{"$ref":"#/$defs/n"}},"$defs":{"n":{"type":"object","required":["l","r"],"properties":{"l":{"$ref":"#/$defs/n"},"r":{"$ref":"#/$defs/n"}}}}}`,
		"integer forever":  `{"type":"object","properties":{"b":{"$ref":"#/$defs/n"}},"$defs":{"n":{"type":"integer","allOf":[{"$ref":"#/$defs/m"},{"$ref":"#/$defs/m"}]},"m":{"anyOf":[{"$ref":"#/$defs/n"},{"$ref":"#/$defs/n"}]}}}`,
	} {
		for _, v := range []engine.SchemaValidator{nil, &notChecked{}} {
			result := fmt.Sprintf(`{"content":[],"structuredContent":{"b":%q}}`, b64(png))
			eng := schemaEngine(t, []layer.Rewrite{{Path: "b", Action: layer.ActionArtifact, Encoding: layer.EncodingBase64}}, v, "")
			start := time.Now()
			res, err := eng.Transform(context.Background(), engine.Call{Server: "s", Tool: "t", OutputSchema: json.RawMessage(schema)}, []byte(result))
			if err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("%s (validator %T): %v", name, v, d)
			}
			if len(res.Raw) > 64<<10 || len(res.Artifacts) != 1 || strings.Contains(string(res.Raw), b64(png)[:64]) {
				t.Errorf("%s (validator %T): %d bytes, %d artifacts: %.300s", name, v, len(res.Raw), len(res.Artifacts), res.Raw)
			}
		}
	}
}

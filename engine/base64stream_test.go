package engine_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/engine/layer"
	b64dec "github.com/mcpx-dev/mcpx/internal/b64"
	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/memstore"
)

// A value that passes the cheap checks for plain standard base64 (no data:
// prefix, whole quanta, a canonical tail) streams into the store, decoded
// once, without a validating pass first. What the stream meets
// past the first chunk must still end as it did with that pass: invalid
// base64 fails the rewrite with Parse's own error and stores nothing, and an
// escape or the URL-safe alphabet deep in the value stores it with its
// shape, once.
func TestBase64StreamMeetsTheUnexpected(t *testing.T) {
	t.Parallel()
	data := append([]byte("%PDF-1.7\n"), make([]byte, 1<<20)...)
	rng := rand.New(rand.NewPCG(8, 8))
	for i := 9; i < len(data); i++ {
		data[i] = byte(rng.Uint32())
	}
	std := base64.StdEncoding.EncodeToString(data)
	deep := len(std) * 2 / 3 / 4 * 4
	corrupt := func(at int) string { return std[:at] + "*" + std[at+1:] }
	for _, tc := range []struct {
		name, lit string // lit is the JSON string literal's body
		wantErr   bool
		shape     string // the stored ref's encoding as JSON, "" for none
	}{
		{"plain", std, false, ""},
		{"corrupt deep", corrupt(deep), true, ""},
		{"corrupt in the head", corrupt(4), true, ""},
		{"corrupt last quantum", corrupt(len(std) - 5), true, ""},
		{"escaped newlines deep", std[:deep] + `\n\n` + std[deep:], false, ""}, // ragged: stored as the string
		{"escaped slash deep", escapeSlashes(std, deep, 4), false, ""},         // "\/" is '/': no shape needed
		{"url-safe", base64.URLEncoding.EncodeToString(data), false, `{"alphabet":"url"}`},
		{"wrapped", wrapLines(std, 76), false, `{"line_width":76,"line_end":"\n"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.lit)%4 != 0 || strings.HasPrefix(tc.lit, "data:") || tc.name != "plain" && tc.lit == std {
				t.Fatalf("case %q does not pass the cheap checks (length %d)", tc.name, len(tc.lit))
			}
			st := memstore.New(memstore.Config{})
			eng := newEngine(t, st, fixed{{Path: "v", Action: layer.ActionArtifact, Encoding: layer.EncodingBase64}}, nil)
			in := []byte(`{"v":"` + tc.lit + `"}`)
			res, err := eng.Transform(context.Background(), engine.Call{Server: "s", Tool: "t"}, in)
			if err != nil {
				t.Fatal(err)
			}
			refs, _, err := st.List(context.Background(), store.Scope{}, "")
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantErr {
				_, perr := b64dec.Parse([]byte(tc.lit))
				if perr == nil {
					t.Fatal("the case's value is valid base64")
				}
				if len(res.Failures) != 1 || !strings.Contains(res.Failures[0].Error(), perr.Error()) {
					t.Fatalf("failures %v, want one with Parse's error %q", res.Failures, perr)
				}
				if !bytes.Equal(res.Raw, in) || len(res.Artifacts) != 0 || len(refs) != 0 {
					t.Fatalf("a failed rewrite changed the result or stored something: %d artifacts, %d stored", len(res.Artifacts), len(refs))
				}
				return
			}
			if len(res.Failures) != 0 || len(res.Artifacts) != 1 || len(refs) != 1 {
				t.Fatalf("failures %v, artifacts %v, stored %d: want one artifact stored once", res.Failures, res.Artifacts, len(refs))
			}
			ref := res.Artifacts[0]
			var shape []byte
			if ref.Encoding != nil {
				shape, _ = json.Marshal(ref.Encoding)
			}
			if string(shape) != tc.shape {
				t.Fatalf("encoding %s, want %s", shape, tc.shape)
			}
			got := readAll(t, st, ref.ID)
			orig := gjson.GetBytes(in, "v").String()
			switch {
			case ref.Encoding != nil:
				if ref.Encoding.Encode(got) != orig {
					t.Fatal("the shape does not rebuild the original")
				}
			case bytes.Equal(got, data):
				if base64.StdEncoding.EncodeToString(got) != orig {
					t.Fatal("stored the decoded bytes of a value that is not plain base64, without a shape")
				}
			case string(got) != orig:
				t.Fatalf("stored %d bytes, neither the data nor the original string", len(got))
			}
		})
	}
}

// escapeSlashes escapes the first n slashes at or after from as "\/".
func escapeSlashes(s string, from, n int) string {
	var b strings.Builder
	b.WriteString(s[:from])
	for i := from; i < len(s); i++ {
		if s[i] == '/' && n > 0 {
			b.WriteString(`\/`)
			n--
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// wrapLines breaks s into lines of width characters with "\n" escapes, trimming
// the last line to keep the length a multiple of four.
func wrapLines(s string, width int) string {
	var lines []string
	for len(s) > width {
		lines = append(lines, s[:width])
		s = s[width:]
	}
	lines = append(lines, s)
	if len(lines)%2 == 0 { // an odd number of 2-byte breaks would break the quanta
		lines = lines[:len(lines)-1]
	}
	return strings.Join(lines, `\n`)
}

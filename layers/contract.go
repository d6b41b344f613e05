package layers

import (
	"context"
	"mime"
	"path"
	"strconv"

	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/internal/jsonwalk"
)

func init() {
	layer.Register(layer.NewInfo("contract",
		"tool output contracts v1 (returned_file_contents) and v2 (artifacts[].b64, display, canvas)",
		defaultContract, func(o ContractOptions, _ layer.Resources) (layer.Layer, error) { return &contract{o: o}, nil }))
}

// ContractOptions tune the contract layer.
type ContractOptions struct {
	// V1 stores returned_file_contents (strings, or {name, b64} objects)
	// under the names of returned_file_names. Defaults to true.
	V1 bool `json:"v1"`
	// V2 stores artifacts[].b64 with their name and mime. Defaults to true.
	V2 bool `json:"v2"`
	// KeepHints copies the v2 display and canvas hints into the result's
	// _meta (as "mcpx/display" and "mcpx/canvas") for the host. Defaults
	// to true.
	KeepHints bool `json:"keep_hints"`
	// Summary is the summary template. Defaults to "": the engine's
	// default summary, which names the file.
	Summary string `json:"summary,omitempty"`
}

func defaultContract() ContractOptions {
	return ContractOptions{V1: true, V2: true, KeepHints: true}
}

type contract struct{ o ContractOptions }

// Plan finds contract file fields in every payload; structuredContent is
// read first (FastMCP's preference), and rewrites by path reach every
// carrier.
func (l *contract) Plan(ctx context.Context, d *layer.Doc) ([]layer.Rewrite, error) {
	var out rewriteSet
	carriers := d.Carriers()
	for ci := range carriers {
		c := &carriers[ci]
		if duplicateCarrier(carriers, ci) {
			continue
		}
		if l.o.V2 {
			l.planV2(c, &out)
		}
		if l.o.V1 {
			l.planV1(c, &out)
		}
		if l.o.KeepHints && d.IsMCP() {
			planHints(d, c, &out)
		}
	}
	return out, nil
}

// rewriteSet is the rewrites of a plan, at most one per target and path:
// carriers that hold the same payload ask for the same rewrites.
type rewriteSet []layer.Rewrite

func (s *rewriteSet) add(rw layer.Rewrite) {
	for _, o := range *s {
		if o.Target == rw.Target && o.Path == rw.Path {
			return
		}
	}
	*s = append(*s, rw)
}

// planV2 stores artifacts[].b64 under their name and mime.
func (l *contract) planV2(c *layer.Carrier, out *rewriteSet) {
	p := c.Payload
	eachElement(c, "artifacts", func(i, elem int) {
		if sp, ok := jsonwalk.Member(p, elem, "b64"); !ok || sp.Kind != jsonwalk.KindString {
			return
		}
		name := str(p, elem, "name")
		out.add(layer.Rewrite{
			Path: "artifacts." + strconv.Itoa(i) + ".b64", Action: layer.ActionArtifact,
			Encoding: layer.EncodingBase64, MIME: nonEmptyStr(str(p, elem, "mime"), mimeByName(name)),
			Filename: name, Summary: l.o.Summary,
		})
	})
}

// planV1 stores returned_file_contents (strings, or {name, b64} objects)
// under the names of returned_file_names.
func (l *contract) planV1(c *layer.Carrier, out *rewriteSet) {
	p := c.Payload
	var names []string
	eachElement(c, "returned_file_names", func(i, elem int) {
		for len(names) < i {
			names = append(names, "")
		}
		o, e, kind, _ := memberAt(p, elem)
		if kind == jsonwalk.KindString {
			s, _ := jsonwalk.UnescapeString(p[o+1 : e-1])
			names = append(names, s)
		} else {
			names = append(names, "")
		}
	})
	eachElement(c, "returned_file_contents", func(i, elem int) {
		name := ""
		if i < len(names) {
			name = names[i]
		}
		rw := layer.Rewrite{Action: layer.ActionArtifact, Encoding: layer.EncodingBase64, Summary: l.o.Summary}
		switch p[elem] {
		case '"':
			rw.Path = "returned_file_contents." + strconv.Itoa(i)
		case '{':
			if sp, ok := jsonwalk.Member(p, elem, "b64"); !ok || sp.Kind != jsonwalk.KindString {
				return
			}
			rw.Path = "returned_file_contents." + strconv.Itoa(i) + ".b64"
			name = nonEmptyStr(str(p, elem, "name"), name)
			rw.MIME = str(p, elem, "mime")
		default:
			return
		}
		rw.Filename = name
		rw.MIME = nonEmptyStr(rw.MIME, mimeByName(name))
		out.add(rw)
	})
}

// planHints copies the payload's display and canvas hints into the
// result's _meta, unless the upstream put them there.
func planHints(d *layer.Doc, c *layer.Carrier, out *rewriteSet) {
	for _, hint := range []string{"display", "canvas"} {
		if sp, ok := c.Member(hint); ok && sp.Kind == jsonwalk.KindObject {
			if metaHas(d.Raw, "mcpx/"+hint) {
				continue // never overwrite what the upstream put there
			}
			out.add(layer.Rewrite{Path: "_meta.mcpx/" + hint, Target: layer.TargetResult, Action: layer.ActionReplace, Value: append([]byte(nil), c.Payload[sp.Off:sp.End]...)})
		}
	}
}

// metaHas reports whether the result's _meta already has key.
func metaHas(raw []byte, key string) bool {
	meta, ok := jsonwalk.Member(raw, firstNonSpace(raw), "_meta")
	if !ok || meta.Kind != jsonwalk.KindObject {
		return false
	}
	_, ok = jsonwalk.Member(raw, meta.Off, key)
	return ok
}

// eachElement calls fn with the index and offset of each element of the
// array under the payload's top-level key.
func eachElement(c *layer.Carrier, key string, fn func(i, elem int)) {
	sp, ok := c.Member(key)
	if !ok || sp.Kind != jsonwalk.KindArray {
		return
	}
	p, o := c.Payload, sp.Off
	_ = jsonwalk.Walk(p[o:], func(v *jsonwalk.Visit) jsonwalk.Step {
		if len(v.Path) == 0 {
			if v.Leave {
				return jsonwalk.Stop
			}
			return jsonwalk.Descend
		}
		if !v.Leave && len(v.Path) == 1 {
			fn(v.Path[0].Index, o+v.Off)
		}
		return jsonwalk.SkipValue
	})
}

// memberAt returns the span and kind of the value starting at p[off].
func memberAt(p []byte, off int) (o, e int, kind jsonwalk.Kind, ok bool) {
	err := jsonwalk.Walk(p[off:], func(v *jsonwalk.Visit) jsonwalk.Step {
		if len(v.Path) == 0 {
			o, kind, ok = off, v.Kind, true
			if v.End >= 0 {
				e = off + v.End
				return jsonwalk.Stop
			}
			if v.Leave {
				e = off + v.End
				return jsonwalk.Stop
			}
			return jsonwalk.SkipValue
		}
		return jsonwalk.SkipValue
	})
	_ = err
	return o, e, kind, ok
}

func firstNonSpace(p []byte) int {
	for i, c := range p {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return i
	}
	return -1
}

func nonEmptyStr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// mimeByName guesses a media type from a file name's extension.
func mimeByName(name string) string {
	if ext := path.Ext(name); ext != "" {
		return mime.TypeByExtension(ext)
	}
	return ""
}

var _ layer.Layer = (*contract)(nil)

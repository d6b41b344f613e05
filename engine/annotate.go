package engine

// What the engine adds to a result besides the layers' rewrites: the
// references to originals that replace and drop stored, the note about
// values left inline past MaxArtifactsPerResult, and the stand-in for a
// result too deep to transform.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mcpx-dev/mcpx/internal/humanize"
	"github.com/mcpx-dev/mcpx/internal/jsonstr"
	"github.com/mcpx-dev/mcpx/internal/jsonwalk"
	"github.com/mcpx-dev/mcpx/store"
)

// maxStoredListed bounds the references listed; the rest are counted.
const maxStoredListed = 50

// annotate returns d's bytes with the references to stored originals and
// the cap note added. A non-MCP document that is not an object has no
// place for them: its refs are in Result.Artifacts only.
func (e *Engine) annotate(d *Doc, stored []storedOriginal, capped int) []byte {
	if len(stored) == 0 && capped == 0 {
		return d.Raw
	}
	raw := d.Raw
	root := skipWS(raw, 0)
	if root >= len(raw) || raw[root] != '{' {
		e.log.Warn("result is not an object: references to stored originals are in the artifact list only", "server", d.Call.Server, "tool", d.Call.Tool, "stored", len(stored))
		return raw
	}
	var list []byte
	if len(stored) > 0 {
		shown := stored
		if len(shown) > maxStoredListed {
			shown = shown[:maxStoredListed]
		}
		list, _ = json.Marshal(shown)
		if more := len(stored) - len(shown); more > 0 {
			list = fmt.Appendf(list[:len(list)-1], `,{"more":%d}]`, more)
		}
	}
	note := ""
	if capped > 0 {
		note = fmt.Sprintf("[mcpx: this result reached its limit of %d artifacts; %d more values were left in place (the size guardrail may have cut them, storing what it cut)]", e.cfg.MaxArtifactsPerResult, capped)
	}
	var eds []jsonwalk.Edit
	if !d.IsMCP() {
		v := []byte(`{`)
		if list != nil {
			v = append(v, `"stored":`...)
			v = append(append(v, list...), ',')
		}
		if note != "" {
			v = append(v, `"note":`...)
			v = append(jsonstr.AppendString(v, note), ',')
		}
		v[len(v)-1] = '}'
		if next, err := createPath(raw, jsonwalk.KeyPath(freeKey(raw, root, "_mcpx")), v); err == nil {
			return next
		}
		return raw
	}
	if list != nil {
		if meta, ok := jsonwalk.Member(raw, root, "_meta"); ok && meta.Kind == jsonwalk.KindObject {
			mo := meta.Off
			key := freeKey(raw, mo, MetaStoredKey)
			ins := jsonstr.AppendString(nil, key)
			ins = append(append(ins, ':'), list...)
			if len(children(raw, mo)) > 0 {
				ins = append(ins, ',')
			}
			eds = append(eds, jsonwalk.Edit{Off: mo + 1, With: ins})
		} else if !ok {
			ins := []byte(`,"_meta":{`)
			ins = jsonstr.AppendString(ins, MetaStoredKey)
			ins = append(append(append(ins, ':'), list...), '}')
			eds = append(eds, e.rootInsert(raw, root, ins)...)
		}
	}
	if note != "" {
		block := jsonstr.AppendString([]byte(`{"type":"text","text":`), note)
		block = append(block, '}')
		if content, ok := jsonwalk.Member(raw, root, "content"); ok && content.Kind == jsonwalk.KindArray {
			co, closeAt := content.Off, content.End-1
			with := block
			if len(children(raw, co)) > 0 {
				with = append([]byte{','}, block...)
			}
			eds = append(eds, jsonwalk.Edit{Off: closeAt, With: with})
		}
	}
	out, err := jsonwalk.Splice(raw, eds)
	if err != nil {
		e.log.Warn("cannot annotate the result", "error", err)
		return raw
	}
	return out
}

// rootInsert inserts a ",member" (ins starts with a comma) before the root
// object's closing brace.
func (e *Engine) rootInsert(raw []byte, root int, ins []byte) []jsonwalk.Edit {
	kids := children(raw, root)
	if len(kids) == 0 {
		ins = ins[1:]
		return []jsonwalk.Edit{{Off: skipWS(raw, root+1), With: ins}}
	}
	return []jsonwalk.Edit{{Off: kids[len(kids)-1].end, With: ins}}
}

// freeKey returns key, or key with a suffix when the object at raw[obj]
// already has it: never overwrite what the upstream sent.
func freeKey(raw []byte, obj int, key string) string {
	k := key
	for n := 2; ; n++ {
		if _, ok := jsonwalk.Member(raw, obj, k); !ok {
			return k
		}
		k = fmt.Sprintf("%s.%d", key, n)
	}
}

// tooDeep stores a result nested past MaxDepth whole and returns a result
// that names it: no layer can walk it in linear time, and passing it on
// would flood the model. When the store fails the result passes through.
func (e *Engine) tooDeep(ctx context.Context, c Call, raw []byte, cause error) (*Result, error) {
	res := &Result{Raw: raw}
	fail := func(err error) {
		res.Failures = append(res.Failures, &LayerError{Step: "engine", Err: err})
		e.log.Warn("result not transformed", "server", c.Server, "tool", c.Tool, "error", err)
		e.emit(Event{Type: EventLayerFailed, Server: c.Server, Tool: c.Tool, Scope: c.Scope, Layer: "engine", Error: err.Error()})
	}
	opts := store.PutOptions{
		Namespace: c.Server, MIMEType: "application/json",
		Filename: defaultFilename(c.Tool, "result", ".json"), Scope: c.Scope,
		Source:   store.Source{Server: c.Server, Tool: c.Tool, Layer: "engine"},
		MaxBytes: e.cfg.MaxArtifactBytes,
	}
	sref, err := e.store.Put(ctx, strings.NewReader(string(raw)), opts)
	if err != nil {
		fail(fmt.Errorf("%w; storing it failed, passed through: %w", cause, err))
		return res, nil
	}
	fail(cause)
	ref := RefFromStore(asPut(sref, opts))
	ref.Content, _ = e.inspectStored(ctx, sref)
	if e.linker != nil && !ref.Truncated {
		ref.URL = e.linker.ArtifactURL(ref)
	}
	res.Artifacts = []ArtifactRef{ref}
	e.emit(Event{Type: EventArtifactStored, Server: c.Server, Tool: c.Tool, Scope: c.Scope, Layer: "engine", Artifact: &ref})
	rep := replacement{Artifact: ref, Summary: fmt.Sprintf("The result nests deeper than %d levels, past what mcpx transforms: the whole result (%s) is stored as artifact %s at %s", e.cfg.MaxDepth, humanize.Bytes(ref.SizeBytes), ref.ID, ref.URI)}
	mcp, isError := topLevelMCP(raw)
	if !mcp {
		res.Raw = rep.marshal()
		return res, nil
	}
	out := jsonstr.AppendString([]byte(`{"content":[{"type":"text","text":`), string(rep.marshal()))
	out = append(out, `},{"type":"resource_link","uri":`...)
	out = jsonstr.AppendString(out, ref.URI)
	out = append(out, `,"name":`...)
	out = jsonstr.AppendString(out, nonEmpty(ref.Filename, ref.ID))
	out = append(out, `,"mimeType":"application/json"}]`...)
	if isError {
		out = append(out, `,"isError":true`...)
	}
	res.Raw = append(out, '}')
	return res, nil
}

// topLevelMCP reads the top-level members of raw without descending (a
// linear scan at any depth): an MCP result has content or
// structuredContent; isError is copied.
func topLevelMCP(raw []byte) (mcp, isError bool) {
	_ = jsonwalk.WalkValidated(raw, func(v *jsonwalk.Visit) jsonwalk.Step {
		switch {
		case len(v.Path) == 0:
			if v.Kind != jsonwalk.KindObject || v.Leave {
				return jsonwalk.Stop
			}
			return jsonwalk.Descend
		case v.Leave:
			return jsonwalk.Descend
		case v.Path[0].KeyIs("content") || v.Path[0].KeyIs("structuredContent"):
			mcp = true
		case v.Path[0].KeyIs("isError"):
			isError = v.Kind == jsonwalk.KindLiteral && raw[v.Off] == 't'
		}
		return jsonwalk.SkipValue
	})
	return mcp, isError
}

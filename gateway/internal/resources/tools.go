package resources

// The generated resource tools: resources offered to models that cannot
// call resources/read (mcpServers.NAME.mcpx.resource_tools).

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway/internal/artifacts"
	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
	"github.com/mcpx-dev/mcpx/gateway/internal/router"
	"github.com/mcpx-dev/mcpx/store"
)

// Tool runs generated resource tool r for rd's model; scope is the
// call's.
func (rs *Resources) Tool(ctx context.Context, rd artifacts.Reader, r *router.Route, args json.RawMessage, scope store.Scope) (json.RawMessage, error) {
	u := r.Up
	call := engine.Call{Server: u.Name, Tool: r.Generated, Arguments: args, Scope: scope}
	switch r.Generated {
	case router.GenList, router.GenTemplates:
		method := "resources/list"
		if r.Generated == router.GenTemplates {
			method = "resources/templates/list"
		}
		p := json.RawMessage(nil)
		if c := gjson.GetBytes(args, "cursor").String(); c != "" {
			p, _ = json.Marshal(map[string]string{"cursor": c})
		}
		res, err := u.Call(ctx, method, p)
		if err != nil {
			return artifacts.ToolError(fmt.Sprintf("%s failed: %v", method, err)), nil
		}
		if method == "resources/list" {
			gjson.GetBytes(res, "resources").ForEach(func(_, v gjson.Result) bool {
				rs.uris.Claim(u, v.Get("uri").String())
				return true
			})
		}
		out := []byte(`{"content":[{"type":"text","text":""}]}`)
		out, _ = sjson.SetBytes(out, "content.0.text", string(res))
		out, _ = sjson.SetRawBytes(out, "structuredContent", res)
		tres, err := rs.art.Transform(ctx, rd, call, out)
		if err != nil {
			return nil, err
		}
		return tres.Raw, nil
	case router.GenRead:
		uri := gjson.GetBytes(args, "uri").String()
		if uri == "" {
			return artifacts.ToolError(`"uri" is required`), nil
		}
		if id, ok := artifacts.ID(uri); ok {
			return rs.art.Summary(ctx, rd, uri, id)
		}
		if nu, orig, ok := rs.uris.Resolve(uri); ok {
			if nu != u {
				return artifacts.ToolError(fmt.Sprintf("%s is not a resource of the %s server", uri, u.Name)), nil
			}
			uri = orig
		}
		k := cacheKey{session: rd.Session, uri: uri, kind: "tool"}
		if raw, ok := rs.cache.get(ctx, k); ok {
			return raw, nil
		}
		params, _ := json.Marshal(map[string]string{"uri": uri})
		res, err := u.Call(ctx, "resources/read", params)
		if err != nil {
			return artifacts.ToolError(fmt.Sprintf("resources/read %s failed: %v", uri, err)), nil
		}
		rs.uris.Claim(u, uri)
		out := []byte(`{"content":[]}`)
		gjson.GetBytes(res, "contents").ForEach(func(_, c gjson.Result) bool {
			blk := []byte(`{"type":"resource"}`)
			blk, _ = sjson.SetRawBytes(blk, "resource", []byte(c.Raw))
			out, _ = sjson.SetRawBytes(out, "content.-1", blk)
			return true
		})
		tres, err := rs.eng.Transform(ctx, call, out)
		if err != nil {
			return nil, fmt.Errorf("transform resource %s: %w", uri, err)
		}
		ids := make([]string, 0, len(tres.Artifacts))
		for _, a := range tres.Artifacts {
			ids = append(ids, a.ID)
			rd.Shown.Add(a.ID)
		}
		rs.cache.put(k, tres.Raw, ids)
		return tres.Raw, nil
	}
	return nil, fmt.Errorf("%w: generated tool %q", jsonrpc.ErrUnknownTool, r.Generated)
}

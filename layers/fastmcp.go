package layers

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/hashicorp/go-hclog"
	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/internal/jsonstr"
	"github.com/mcpx-dev/mcpx/internal/jsonwalk"
)

func init() {
	layer.Register(layer.NewInfo("fastmcp",
		"maps a FastMCP CallToolResult dump (structured_content, data, content, is_error) to the {results, meta_data} contract",
		nil, func(_ FastMCPOptions, r layer.Resources) (layer.Layer, error) {
			log := r.Log
			if log == nil {
				log = hclog.NewNullLogger()
			}
			return &fastMCP{log: log}, nil
		}))
}

// FastMCPOptions configure the fastmcp layer, which runs before contract
// (003, "FastMCP Integration Notes"). It acts only on results that are not
// MCP CallToolResults but a FastMCP object serialized with its Python field
// names; switch it off with {"enabled": false}.
type FastMCPOptions struct{}

type fastMCP struct{ log hclog.Logger }

// Plan rewrites the whole document to the contract: structured_content is
// preferred, then data, then the first text block parsed as JSON; is_error
// maps to {"results": {"error": msg}, "meta_data": {"is_error": true}}; a
// payload that already has "results" is forwarded as it is.
func (l *fastMCP) Plan(ctx context.Context, d *layer.Doc) ([]layer.Rewrite, error) {
	if d.IsMCP() {
		return nil, nil
	}
	c := d.Carriers()[0]
	_, hasSC := c.Member("structured_content")
	_, hasErr := c.Member("is_error")
	if !hasSC && !hasErr {
		return nil, nil
	}
	root := gjson.ParseBytes(d.Raw)
	sc, isErr := root.Get("structured_content"), root.Get("is_error")
	if !root.IsObject() || (!sc.Exists() && !isErr.Exists()) {
		return nil, nil
	}
	data := root.Get("data")
	firstText := root.Get(`content.#(type=="text").text`)
	var out []byte
	switch {
	case isErr.Bool():
		msg := firstText.String()
		if msg == "" {
			msg = sc.Get("error").String()
		}
		out = append(out, `{"results":{"error":`...)
		out = jsonstr.AppendString(out, msg)
		out = append(out, `},"meta_data":{"is_error":true}}`...)
	default:
		payload := ""
		switch {
		case sc.Exists() && sc.Type != gjson.Null:
			payload = sc.Raw
			if data.Exists() && data.Type != gjson.Null && !bytes.Equal(compact(sc.Raw), compact(data.Raw)) {
				l.log.Warn("structured_content and data differ; using structured_content")
			}
		case data.Exists() && data.Type != gjson.Null:
			payload = data.Raw
		case firstText.Exists():
			// gjson's validator recurses per level: a text nested past the
			// chain's depth is not taken as JSON (and is not validated).
			if t := firstText.String(); jsonwalk.StringDepthWithin(t, layer.DefaultMaxDepth) && gjson.Valid(t) {
				payload = t
			} else {
				payload = firstText.Raw
			}
		}
		switch {
		case payload == "":
			out = []byte(`{"results":null}`)
		case gjson.Get(payload, "results").Exists():
			out = []byte(payload)
		default:
			out = append([]byte(`{"results":`), payload...)
			out = append(out, '}')
		}
	}
	return []layer.Rewrite{{Path: "", Action: layer.ActionReplace, Value: out}}, nil
}

func compact(s string) []byte {
	var b bytes.Buffer
	if json.Compact(&b, []byte(s)) != nil {
		return []byte(s)
	}
	return b.Bytes()
}

var _ layer.Layer = (*fastMCP)(nil)

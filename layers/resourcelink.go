package layers

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/internal/humanize"
	"github.com/mcpx-dev/mcpx/internal/jsonstr"
)

func init() {
	layer.Register(layer.NewInfo("resourcelink",
		"resource_link blocks stay lazy links with a hint; small ones are read when policy allows",
		defaultResourceLink, func(o ResourceLinkOptions, r layer.Resources) (layer.Layer, error) { return newResourceLink(o, r) }))
}

// ResourceLinkOptions tune the resourcelink layer (docs/design.md,
// "The chain").
type ResourceLinkOptions struct {
	// AutoReadIfSizeUnderBytes reads a link whose declared size is below
	// this through the gateway and embeds it (typedcontent then stores a
	// blob). Defaults to 0: never read, links stay lazy.
	AutoReadIfSizeUnderBytes int64 `json:"auto_read_if_size_under_bytes"`
	// Hint adds a text block after each link telling the model how to read
	// it. Defaults to true.
	Hint bool `json:"hint"`
	// ReadTool names the tool the hint points to; {server} is replaced.
	// Defaults to "{server}_resources_read".
	ReadTool string `json:"read_tool"`
}

func defaultResourceLink() ResourceLinkOptions {
	return ResourceLinkOptions{Hint: true, ReadTool: "{server}_resources_read"}
}

type resourceLink struct {
	o      ResourceLinkOptions
	reader engine.ResourceReader
	server string
	log    hclog.Logger
}

func newResourceLink(o ResourceLinkOptions, r layer.Resources) (*resourceLink, error) {
	if o.AutoReadIfSizeUnderBytes < 0 {
		return nil, fmt.Errorf("auto_read_if_size_under_bytes must not be negative")
	}
	log := r.Log
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return &resourceLink{o: o, reader: r.Reader, server: r.Server, log: log}, nil
}

// Plan keeps links lazy, adding a hint, or reads small ones.
func (l *resourceLink) Plan(ctx context.Context, d *layer.Doc) ([]layer.Rewrite, error) {
	if !d.IsMCP() {
		return nil, nil
	}
	var out []layer.Rewrite
	for _, b := range d.Blocks() {
		if b.Type != "resource_link" {
			continue
		}
		uri := str(d.Raw, b.Off, "uri")
		if uri == "" || strings.HasPrefix(uri, engine.URIScheme) {
			continue
		}
		path := "content." + strconv.Itoa(b.Index)
		block := d.Raw[b.Off:b.End]
		size := gjson.GetBytes(block, "size")
		readErr := ""
		if l.reader != nil && l.o.AutoReadIfSizeUnderBytes > 0 && size.Exists() && size.Int() < l.o.AutoReadIfSizeUnderBytes {
			res, err := l.reader.ReadResource(ctx, d.Call.Server, uri)
			first := gjson.GetBytes(res, "contents.0")
			if err == nil && first.IsObject() {
				v := []byte(`{"type":"resource","resource":`)
				v = append(v, first.Raw...)
				v = append(v, '}')
				out = append(out, layer.Rewrite{Path: path, Target: layer.TargetResult, Action: layer.ActionReplace, Value: v})
				continue
			}
			if err == nil {
				err = fmt.Errorf("resources/read returned no contents")
			}
			readErr = err.Error()
			l.log.Warn("auto-read of resource link failed; keeping the link", "uri", uri, "error", err)
		}
		if !l.o.Hint {
			continue
		}
		var hint strings.Builder
		fmt.Fprintf(&hint, "Resource %s", uri)
		if m := str(d.Raw, b.Off, "mimeType"); m != "" {
			fmt.Fprintf(&hint, " (%s", m)
			if size.Exists() {
				fmt.Fprintf(&hint, ", %s", humanize.Bytes(size.Int()))
			}
			hint.WriteString(")")
		} else if size.Exists() {
			fmt.Fprintf(&hint, " (%s)", humanize.Bytes(size.Int()))
		}
		fmt.Fprintf(&hint, " was not read. To fetch it, call %s with {\"uri\": %q}.", strings.ReplaceAll(l.o.ReadTool, "{server}", d.Call.Server), uri)
		if readErr != "" {
			fmt.Fprintf(&hint, " (Reading it automatically failed: %s)", readErr)
		}
		v := append([]byte{'['}, block...)
		v = append(v, `,{"type":"text","text":`...)
		v = jsonstr.AppendString(v, hint.String())
		v = append(v, "}]"...)
		out = append(out, layer.Rewrite{Path: path, Target: layer.TargetResult, Action: layer.ActionReplace, Value: v, Splat: true})
	}
	return out, nil
}

var _ layer.Layer = (*resourceLink)(nil)

package router

import (
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/gateway/internal/schema"
	"github.com/mcpx-dev/mcpx/gateway/internal/upstream"
)

// OwnServer names the gateway's own tools (artifacts_query, …) in
// observations and spans.
const OwnServer = "mcpx"

// Generated tool kinds: the resource tools made for an upstream that
// offers resources (mcpServers.NAME.mcpx.resource_tools).
const (
	GenList      = "resources_list"
	GenRead      = "resources_read"
	GenTemplates = "resources_templates_list"
)

// Route says where an exposed tool goes.
type Route struct {
	Up        *upstream.Upstream // nil: one of the gateway's own tools
	Tool      string             // the upstream's name, or the generated kind
	Generated string             // "", a Gen* kind, or an own tool's kind
	Def       json.RawMessage    // the exposed definition
	Output    json.RawMessage    // the tool's outputSchema, nil when it has none
	Username  bool               // the input schema declares "username"
	Args      config.ArgumentOptions
	// Slow counts the small results that kept an upstream's reader busy
	// (the session's started calls decide by it where to transform).
	Slow atomic.Int32
}

// Server names the route's upstream, or OwnServer.
func (r *Route) Server() string {
	if r.Up == nil {
		return OwnServer
	}
	return r.Up.Name
}

// Own is one of the gateway's own tools: offered under Name, served by
// kind.
type Own struct {
	Name, Kind string
	Def        json.RawMessage
}

// Tools is the table of exposed tools: every upstream's, the generated
// resource tools, then the gateway's own. It is rebuilt whenever an
// upstream is ready or its tools change.
type Tools struct {
	ups *Upstreams
	own []Own
	log hclog.Logger

	// rebuildMu makes Rebuild one at a time: two upstreams ready at once
	// each rebuilt, and the rebuild that had seen only the first could
	// store its list last, leaving the second's tools unlisted until some
	// later change (the reliability suite's two-replica test waited two
	// minutes for them, in about one start of six).
	rebuildMu sync.Mutex

	mu     sync.RWMutex
	routes map[string]*Route // exposed tool name → route
	list   []json.RawMessage // exposed definitions, in order
}

// NewTools returns the table of ups' tools and own, with what is known
// of them now.
func NewTools(ups *Upstreams, own []Own, log hclog.Logger) *Tools {
	t := &Tools{ups: ups, own: own, log: log, routes: map[string]*Route{}}
	t.Rebuild()
	return t
}

// Route returns where the exposed tool name goes.
func (t *Tools) Route(name string) (*Route, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	r, ok := t.routes[name]
	return r, ok
}

// List is the tools/list result.
func (t *Tools) List() json.RawMessage {
	t.mu.RLock()
	list := t.list
	t.mu.RUnlock()
	b := []byte(`{"tools":[`)
	for i, d := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, d...)
	}
	return append(b, "]}"...)
}

// Rebuild recomputes the exposed tool names: with one upstream the names
// are kept; with several each becomes "{server}_{tool}", made unique
// with a numeric suffix if two would collide.
func (t *Tools) Rebuild() {
	t.rebuildMu.Lock()
	defer t.rebuildMu.Unlock()
	routes := map[string]*Route{}
	var list []json.RawMessage
	add := func(name string, r *Route) {
		base := name
		for i := 2; routes[name] != nil; i++ {
			name = base + "_" + strconv.Itoa(i)
		}
		def, err := sjson.SetBytes(append([]byte(nil), r.Def...), "name", name)
		if err != nil {
			t.log.Warn("tool definition is not an object; skipped", "route", name, "tool", r.Tool)
			return
		}
		r.Def = def
		routes[name] = r
		list = append(list, def)
	}
	single := t.ups.Single()
	for _, u := range t.ups.All() {
		for _, def := range u.ToolDefs() {
			tool := gjson.GetBytes(def, "name").String()
			if tool == "" {
				continue
			}
			exposed := tool
			if !single {
				exposed = u.Name + "_" + tool
			}
			add(exposed, &Route{
				Up:       u,
				Tool:     tool,
				Def:      def,
				Username: gjson.GetBytes(def, "inputSchema.properties.username").Exists(),
				Output:   schema.Output(def),
				Args:     toolArgs(u.Config, tool),
			})
		}
		if u.Config.ResourceToolsOn() && u.Capability("resources") {
			for _, kind := range []string{GenList, GenRead, GenTemplates} {
				add(u.Name+"_"+kind, &Route{Up: u, Tool: kind, Generated: kind, Def: generatedTool(u.Name, kind)})
			}
		}
	}
	// after the upstreams' tools: an upstream's tool of the same name keeps it
	for _, o := range t.own {
		add(o.Name, &Route{Tool: o.Kind, Generated: o.Kind, Def: o.Def})
	}
	t.mu.Lock()
	t.routes, t.list = routes, list
	t.mu.Unlock()
}

// toolArgs returns the argument options of tool: the exact name wins over
// globs.
func toolArgs(cfg config.ServerConfig, tool string) config.ArgumentOptions {
	var a config.ArgumentOptions
	for _, k := range slices.Sorted(maps.Keys(cfg.Mcpx.Tools)) {
		if k != tool {
			if ok, _ := path.Match(k, tool); ok {
				a = cfg.Mcpx.Tools[k].Arguments
			}
		}
	}
	if t, ok := cfg.Mcpx.Tools[tool]; ok {
		a = t.Arguments
	}
	return a.WithDefaults()
}

func generatedTool(server, kind string) json.RawMessage {
	var desc, schema string
	switch kind {
	case GenList:
		desc = fmt.Sprintf("List the resources of the %s server (paginated). Returns URIs, names, MIME types and sizes; read one with %s_resources_read.", server, server)
		schema = `{"type":"object","properties":{"cursor":{"type":"string","description":"nextCursor from a previous page"}}}`
	case GenRead:
		desc = fmt.Sprintf("Read a resource of the %s server by URI. Small text comes back inline; binary and large content is stored as an artifact and you get its reference and a summary.", server)
		schema = `{"type":"object","properties":{"uri":{"type":"string","description":"the resource URI"}},"required":["uri"]}`
	case GenTemplates:
		desc = fmt.Sprintf("List the resource URI templates of the %s server (paginated).", server)
		schema = `{"type":"object","properties":{"cursor":{"type":"string","description":"nextCursor from a previous page"}}}`
	}
	b := []byte(`{"name":""}`)
	b, _ = sjson.SetBytes(b, "description", desc)
	b, _ = sjson.SetRawBytes(b, "inputSchema", []byte(schema))
	b, _ = sjson.SetRawBytes(b, "annotations", []byte(`{"readOnlyHint":true,"openWorldHint":false}`))
	return b
}

package router

// Prompts and completion: routed to the upstream that offers the prompt.

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
	"github.com/mcpx-dev/mcpx/gateway/internal/upstream"
)

// Prompts map exposed prompt names to upstreams, rebuilt on every
// prompts/list.
type Prompts struct {
	ups  *Upstreams
	uris *URIs // completion of a resource reference goes to its server
	log  hclog.Logger

	mu sync.RWMutex
	m  map[string]promptRoute
}

type promptRoute struct {
	up   *upstream.Upstream
	name string
}

// NewPrompts returns the prompt routes of ups, none listed yet.
func NewPrompts(ups *Upstreams, uris *URIs, log hclog.Logger) *Prompts {
	return &Prompts{ups: ups, uris: uris, log: log}
}

// List merges every upstream's prompts (all pages) into one list,
// namespaced like tools when there are several upstreams.
func (t *Prompts) List(ctx context.Context) (json.RawMessage, error) {
	table := map[string]promptRoute{}
	out := []byte(`{"prompts":[]}`)
	single := t.ups.Single()
	for _, u := range t.ups.All() {
		if !u.Capability("prompts") {
			continue
		}
		cursor := ""
		for range upstream.MaxPages {
			p := json.RawMessage(nil)
			if cursor != "" {
				p, _ = json.Marshal(map[string]string{"cursor": cursor})
			}
			res, err := u.Call(ctx, "prompts/list", p)
			if err != nil {
				t.log.Warn("prompts/list failed; skipping the server", "server", u.Name, "error", err)
				break
			}
			gjson.GetBytes(res, "prompts").ForEach(func(_, v gjson.Result) bool {
				pn := v.Get("name").String()
				exposed := pn
				if !single {
					exposed = u.Name + "_" + pn
				}
				table[exposed] = promptRoute{up: u, name: pn}
				def, _ := sjson.SetBytes([]byte(v.Raw), "name", exposed)
				out, _ = sjson.SetRawBytes(out, "prompts.-1", def)
				return true
			})
			if cursor = gjson.GetBytes(res, "nextCursor").String(); cursor == "" {
				break
			}
		}
	}
	t.mu.Lock()
	t.m = table
	t.mu.Unlock()
	return out, nil
}

func (t *Prompts) route(ctx context.Context, name string) (promptRoute, bool) {
	t.mu.RLock()
	r, ok := t.m[name]
	t.mu.RUnlock()
	if ok {
		return r, true
	}
	if u := t.ups.Only(); u != nil {
		return promptRoute{up: u, name: name}, true
	}
	if _, err := t.List(ctx); err != nil {
		return promptRoute{}, false
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	r, ok = t.m[name]
	return r, ok
}

// Get serves prompts/get.
func (t *Prompts) Get(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	name := gjson.GetBytes(params, "name").String()
	r, ok := t.route(ctx, name)
	if !ok {
		return nil, fmt.Errorf("prompts/get %q: %w: unknown prompt", name, jsonrpc.ErrBadParams)
	}
	p, _ := sjson.SetBytes(append([]byte(nil), params...), "name", r.name)
	return r.up.Call(ctx, "prompts/get", p)
}

// Complete serves completion/complete: a prompt's argument goes to the
// prompt's server, a resource template's to the server of the URI.
func (t *Prompts) Complete(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	ref := gjson.GetBytes(params, "ref")
	switch ref.Get("type").String() {
	case "ref/prompt":
		r, ok := t.route(ctx, ref.Get("name").String())
		if !ok {
			return nil, fmt.Errorf("completion/complete: %w: unknown prompt", jsonrpc.ErrBadParams)
		}
		p, _ := sjson.SetBytes(append([]byte(nil), params...), "ref.name", r.name)
		return r.up.Call(ctx, "completion/complete", p)
	case "ref/resource":
		uri := ref.Get("uri").String()
		if _, orig, ok := t.uris.Resolve(uri); ok {
			params, _ = sjson.SetBytes(append([]byte(nil), params...), "ref.uri", orig)
		}
		for _, u := range t.uris.Candidates(uri) {
			if u.Capability("completions") {
				return u.Call(ctx, "completion/complete", params)
			}
		}
	}
	return json.RawMessage(`{"completion":{"values":[]}}`), nil
}

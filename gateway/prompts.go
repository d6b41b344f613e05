package gateway

// Prompts and completion: routed to the upstream that offers the prompt.

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
	"github.com/mcpx-dev/mcpx/gateway/internal/upstream"
)

// promptRoutes maps exposed prompt names to upstreams, rebuilt on every
// prompts/list.
type promptRoutes struct {
	mu sync.RWMutex
	m  map[string]promptRoute
}

type promptRoute struct {
	up   *upstream.Upstream
	name string
}

// listPrompts merges every upstream's prompts (all pages) into one list,
// namespaced like tools when there are several upstreams.
func (s *session) listPrompts(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
	g := s.g
	table := map[string]promptRoute{}
	out := []byte(`{"prompts":[]}`)
	for _, name := range g.order {
		u := g.ups[name]
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
				g.log.Warn("prompts/list failed; skipping the server", "server", name, "error", err)
				break
			}
			gjson.GetBytes(res, "prompts").ForEach(func(_, v gjson.Result) bool {
				pn := v.Get("name").String()
				exposed := pn
				if !g.single {
					exposed = name + "_" + pn
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
	t := &g.prompts
	t.mu.Lock()
	t.m = table
	t.mu.Unlock()
	return out, nil
}

func (g *Gateway) promptRoute(ctx context.Context, s *session, name string) (promptRoute, bool) {
	t := &g.prompts
	t.mu.RLock()
	r, ok := t.m[name]
	t.mu.RUnlock()
	if ok {
		return r, true
	}
	if g.single {
		return promptRoute{up: g.ups[g.order[0]], name: name}, true
	}
	if _, err := s.listPrompts(ctx, nil); err != nil {
		return promptRoute{}, false
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	r, ok = t.m[name]
	return r, ok
}

func (s *session) getPrompt(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	name := gjson.GetBytes(params, "name").String()
	r, ok := s.g.promptRoute(ctx, s, name)
	if !ok {
		return nil, fmt.Errorf("prompts/get %q: %w: unknown prompt", name, jsonrpc.ErrBadParams)
	}
	p, _ := sjson.SetBytes(append([]byte(nil), params...), "name", r.name)
	return r.up.Call(ctx, "prompts/get", p)
}

func (s *session) complete(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	ref := gjson.GetBytes(params, "ref")
	switch ref.Get("type").String() {
	case "ref/prompt":
		r, ok := s.g.promptRoute(ctx, s, ref.Get("name").String())
		if !ok {
			return nil, fmt.Errorf("completion/complete: %w: unknown prompt", jsonrpc.ErrBadParams)
		}
		p, _ := sjson.SetBytes(append([]byte(nil), params...), "ref.name", r.name)
		return r.up.Call(ctx, "completion/complete", p)
	case "ref/resource":
		uri := ref.Get("uri").String()
		if _, orig, ok := s.g.resolveURI(uri); ok {
			params, _ = sjson.SetBytes(append([]byte(nil), params...), "ref.uri", orig)
		}
		for _, u := range s.g.candidates(uri) {
			if u.Capability("completions") {
				return u.Call(ctx, "completion/complete", params)
			}
		}
	}
	return json.RawMessage(`{"completion":{"values":[]}}`), nil
}

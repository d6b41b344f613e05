package session

// Client profiles: what a client's host does with a tool result (where it
// cuts, whether its model looks at images), keyed by the clientInfo.name
// it sends in initialize or, in a 2026-07-28 stateless request, in _meta.
// The gateway passes the matching profile to the engine with each call
// (engine.View).

import (
	"fmt"
	"sort"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
)

// charsPerToken converts a token cap to characters (engine.EstimateTokens
// counts 2 tokens per 7 characters of text).
const charsPerToken = 3.5

// builtinProfiles are the profiles of the clients mcpx knows, by the
// prefix of clientInfo.name they match:
//
//	claude-code  25,000 tokens (Claude Code's cap on a tool result; it
//	             reads image blocks natively and ignores resource_link)
//	claude-ai    images (Claude Desktop and claude.ai)
//	copilot      10,000 characters (GitHub Copilot CLI cuts at ~10 KB)
//	github-copilot  the same
//	goose        200,000 characters (Goose's cut; the guardrail's 50,000
//	             default stays the ceiling)
//
// Budgets only lower the guardrail's configured budget, never raise it.
var builtinProfiles = map[string]config.Profile{
	"claude-code":    {MaxTokens: 25000, Images: true},
	"claude-ai":      {Images: true},
	"copilot":        {MaxChars: 10000},
	"github-copilot": {MaxChars: 10000},
	"goose":          {MaxChars: 200000},
}

// defaultProfileName is the key of the profile that applies to a client no
// other profile matches (and to one that sent no name).
const defaultProfileName = "default"

// Profiles match client names to profiles.
type Profiles struct {
	names []string // longest first
	byKey map[string]config.Profile
}

// NewProfiles merges the built-in profiles with the configured ones.
func NewProfiles(cfg map[string]config.Profile) (*Profiles, error) {
	p := &Profiles{byKey: map[string]config.Profile{}}
	for k, v := range builtinProfiles {
		p.byKey[k] = v
	}
	for k, v := range cfg {
		if k == "" || v.MaxChars < 0 || v.MaxTokens < 0 {
			return nil, fmt.Errorf("profiles: %q: the name must not be empty and budgets not negative", k)
		}
		if err := v.ImageView.Validate(); err != nil {
			return nil, fmt.Errorf("profiles: %q: %w", k, err)
		}
		p.byKey[strings.ToLower(k)] = v
	}
	for k := range p.byKey {
		p.names = append(p.names, k)
	}
	sort.Slice(p.names, func(i, j int) bool {
		if len(p.names[i]) != len(p.names[j]) {
			return len(p.names[i]) > len(p.names[j])
		}
		return p.names[i] < p.names[j]
	})
	return p, nil
}

// view returns the engine view of the client named client.
func (p *Profiles) view(client string) engine.View {
	if p == nil {
		return engine.View{}
	}
	c := strings.ToLower(strings.TrimSpace(client))
	name := defaultProfileName
	if c != "" {
		for _, n := range p.names {
			if n != defaultProfileName && strings.HasPrefix(c, n) {
				name = n
				break
			}
		}
	}
	pr, ok := p.byKey[name]
	if !ok {
		return engine.View{}
	}
	chars := pr.MaxChars
	if t := int(float64(pr.MaxTokens) * charsPerToken); pr.MaxTokens > 0 && (chars == 0 || t < chars) {
		chars = t
	}
	return engine.View{Profile: name, MaxObservationChars: chars, Images: pr.Images, ImageView: pr.ImageView}
}

// pathMetaClientName is where a stateless request names its client.
var pathMetaClientName = jsonrpc.MetaPath(mcp.MetaKeyClientInfo) + ".name"

// clientName is the name the session's client gave: in initialize, or in
// this request's _meta (a stateless request, which has no initialize).
func (s *Session) clientName(params []byte) string {
	if n := gjson.GetBytes(params, pathMetaClientName); n.Type == gjson.String {
		return n.String()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.client
}

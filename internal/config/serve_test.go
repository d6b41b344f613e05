package config

import (
	"strings"
	"testing"
)

func TestMCPServers(t *testing.T) {
	t.Setenv("MCPX_TEST_TOKEN", "s3cret")
	f, err := Decode([]byte(`{"mcpServers": {
		"gh": {"url": "https://example.test/mcp", "headers": {"Authorization": "Bearer ${MCPX_TEST_TOKEN}"}, "timeout": "5s"},
		"fs": {"command": "fs-mcp", "args": ["${MCPX_TEST_UNSET:-/srv}"], "disabled": true}
	}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.MCPServers["gh"].Headers["Authorization"]; got != "Bearer s3cret" {
		t.Errorf("header: %q", got)
	}
	if got := f.MCPServers["fs"].Args[0]; got != "/srv" {
		t.Errorf("default: %q", got)
	}
	if k := f.MCPServers["gh"].Kind(); k != "streamable-http" {
		t.Errorf("kind: %q", k)
	}
	for _, tc := range []struct{ in, want string }{
		{`{"mcpServers": {"x": {"command": "a", "env": {"K": "${MCPX_TEST_NOPE}"}}}}`, "MCPX_TEST_NOPE is not set"},
		{`{"mcpServers": {"x": {}}}`, `stdio needs "command"`},
		{`{"mcpServers": {"x": {"type": "sse"}}}`, `needs "url"`},
		{`{"mcpServers": {"x": {"command": "a", "comand": "b"}}}`, "mcpServers.x.comand"},
		{`{"mcpServers": {"x": {"command": "a", "timeout": "soon"}}}`, "duration"},
		{`{"mcpServers": {"x y": {"command": "a"}}}`, "names may hold"},
		{`{"serve": {"base_url": "nope"}}`, "serve.base_url"},
	} {
		if _, err := Decode([]byte(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.in, err, tc.want)
		}
	}
}

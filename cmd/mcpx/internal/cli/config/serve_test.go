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

// Values that came from ${VAR} are secrets, masked wherever they
// are printed, config errors included.
func TestSecretsRecordedAndMasked(t *testing.T) {
	t.Setenv("MCPX_TEST_KEY", "sk-live-0123456789")
	f, err := Decode([]byte(`{"mcpServers": {
		"remote": {"url": "https://example.test/mcp?key=${MCPX_TEST_KEY}"},
		"fs": {"command": "fs-mcp", "args": ["${MCPX_TEST_UNSET:-/srv}"]}
	}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Secrets(); len(got) != 1 || got["MCPX_TEST_KEY"] != "sk-live-0123456789" {
		t.Errorf("secrets: %v", got)
	}
	_, err = Decode([]byte(`{"mcpServers": {"remote": {"url": "ftp://example.test/mcp?key=${MCPX_TEST_KEY}"}}}`))
	if err == nil || strings.Contains(err.Error(), "sk-live") || !strings.Contains(err.Error(), "${MCPX_TEST_KEY:masked}") {
		t.Errorf("invalid url: error %v", err)
	}
}

func TestServeLimits(t *testing.T) {
	f, err := Decode([]byte(`{"serve": {"limits": {"max_message_bytes": 1048576, "session_idle_timeout": "5m", "max_sessions": 10}}}`))
	if err != nil {
		t.Fatal(err)
	}
	l := f.Serve.Limits.WithDefaults()
	if l.MaxMessageBytes != 1<<20 || l.MaxSessions != 10 || l.SessionIdleTimeout.String() != "5m0s" || l.ReadHeaderTimeout == 0 {
		t.Errorf("limits: %+v", l)
	}
	for _, in := range []string{`{"serve": {"limits": {"max_sessions": -1}}}`, `{"serve": {"limits": {"max_mesage_bytes": 1}}}`} {
		if _, err := Decode([]byte(in)); err == nil {
			t.Errorf("%s: no error", in)
		}
	}
}

// TestExpandEmptyVariable pins the rule Expand documents: a variable set to "" counts as unset, for the default and for the
// error alike, and is not recorded as a secret.
func TestExpandEmptyVariable(t *testing.T) {
	env := map[string]string{"EMPTY": "", "SET": "v"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for _, tc := range []struct{ in, want, err string }{
		{"${EMPTY:-d}", "d", ""},
		{"${UNSET:-d}", "d", ""},
		{"${SET:-d}", "v", ""},
		{"${EMPTY:-}", "", ""},
		{"a${EMPTY}b", "", "EMPTY is not set or is empty"},
		{"${UNSET}", "", "UNSET is not set or is empty"},
		{"$${SET}", "${SET}", ""},
	} {
		got, err := Expand(tc.in, lookup)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("Expand(%q): error %v, want %q", tc.in, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("Expand(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	t.Setenv("MCPX_TEST_EMPTY", "")
	f, err := Decode([]byte(`{"mcpServers": {"x": {"command": "a", "args": ["${MCPX_TEST_EMPTY:-fallback}"]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.MCPServers["x"].Args[0]; got != "fallback" || len(f.Secrets()) != 0 {
		t.Errorf("args %q, secrets %v", got, f.Secrets())
	}
}

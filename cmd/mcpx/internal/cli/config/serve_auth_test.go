package config

import (
	"strings"
	"testing"
	"time"
)

func TestServeAuthAndAPI(t *testing.T) {
	t.Setenv("MCPX_TEST_ALICE", "tok-alice")
	f, err := Decode([]byte(`{"serve": {
		"tokens": {"tok-old": "olduser"},
		"auth": {"tokens": {"${MCPX_TEST_ALICE}": {"tenant": "acme", "user": "alice"}},
		         "limits": {"requests_per_second": 5, "tool_call_burst": 2}},
		"api": {"event_buffer": 64, "max_transform_bytes": 1048576},
		"url_key_rotation": "720h", "url_key_file": "/var/lib/mcpx/keys.json"}}`))
	if err != nil {
		t.Fatal(err)
	}
	c := f.Serve.AuthConfig()
	if c.Tokens["tok-alice"].Tenant != "acme" || c.Tokens["tok-old"].User != "olduser" || c.Limits.RequestsPerSecond != 5 {
		t.Errorf("auth: %+v", c)
	}
	if f.Serve.API.EventBuffer != 64 || f.Serve.API.WithDefaults().MaxEventStreams == 0 || time.Duration(f.Serve.URLKeyRotation) != 720*time.Hour {
		t.Errorf("api: %+v", f.Serve)
	}
	for _, bad := range []string{
		`{"serve": {"auth": {"tokens": {"t": {"tenant": "x"}}}}}`,
		`{"serve": {"auth": {"jwt": {"jwks_url": "https://idp/jwks"}}}}`,
		`{"serve": {"auth": {"jwt": {"jwks_url": "https://idp/jwks", "issuer": "i", "audience": "a", "algorithms": ["HS256"]}}}}`,
		`{"serve": {"url_key_rotation": "-1h"}}`,
	} {
		if _, err := Decode([]byte(bad)); err == nil || !strings.Contains(err.Error(), "serve.") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

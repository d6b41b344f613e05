package upstream

import (
	"slices"
	"testing"

	"github.com/mcpx-dev/mcpx/gateway/config"
)

func TestUpstreamEnvRules(t *testing.T) {
	environ := []string{"PATH=/bin", "HOME=/h", "AWS_SECRET_ACCESS_KEY=x", "LC_ALL=C", "TERM=() { :; }; echo pwned", "OWN=parent", "=weird"}
	got := upstreamEnv(config.ServerConfig{Env: map[string]string{"OWN": "config"}}, environ)
	want := []string{"PATH=/bin", "HOME=/h", "LC_ALL=C", "OWN=config"}
	if !slices.Equal(got, want) {
		t.Errorf("allowlisted env: got %v, want %v", got, want)
	}
	got = upstreamEnv(config.ServerConfig{InheritEnv: true, Env: map[string]string{"OWN": "config"}}, environ)
	want = []string{"PATH=/bin", "HOME=/h", "AWS_SECRET_ACCESS_KEY=x", "LC_ALL=C", "TERM=() { :; }; echo pwned", "OWN=config"}
	if !slices.Equal(got, want) {
		t.Errorf("inherit_env: got %v, want %v", got, want)
	}
}

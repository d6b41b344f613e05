package web

import (
	"strings"
	"testing"

	"github.com/mcpx-dev/mcpx/auth"
)

// A server that declares no resources lists none, with a note and a
// 200; an unknown one is a 404; an API without a resource browser (or
// one that cannot list servers) answers GET /resources with no servers
// rather than a 404 the UI would log on every load.
func TestAPIResourcesOfAServerWithoutThem(t *testing.T) {
	t.Parallel()
	f := newAPIFixture(t, testTokens, auth.Limits{})
	none := newAPIFixtureWith(t, testTokens, auth.Limits{}, func(o *APIOptions) { o.Resources = nil })
	for _, c := range []struct {
		f          *apiFixture
		path, want string
		code       int
	}{
		{f, "/resources/tools-only", `{"resources":[],"note":"server \"tools-only\" offers no resources (it does not declare MCP's resources capability)"}`, 200},
		{f, "/resources/tools-only/read?uri=file:///x", "web: the server offers no resources", 404},
		{f, "/resources/nothing", "web: unknown server", 404},
		{none, "/resources", `{"servers":[]}`, 200},
		{none, "/resources/docs", "web: unknown server: this service browses no upstream resources", 404},
	} {
		code, b, _ := c.f.do("GET", c.path, "tok-alice", nil)
		if code != c.code || strings.TrimSpace(string(b)) != c.want {
			t.Errorf("GET %s: %d %s, want %d %s", c.path, code, b, c.code, c.want)
		}
	}
}

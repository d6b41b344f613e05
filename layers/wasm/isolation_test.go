package wasm_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/layers/wasm"
)

// TestInstancesIsolatePrincipals: one .wasm
// configured for two servers (or serving two tenants) shared pooled
// instances, and a guest that keeps the last request returned server
// alpha's api_key argument in server beta's result. Now an instance serves
// one server, tenant and user only; the same principal still reuses its
// instance (the guest does see its own previous call, which shows the
// guest keeps state and the test can fail).
func TestInstancesIsolatePrincipals(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "keep.wasm")
	must(t, os.WriteFile(file, watGuest(t, "keep.wat", nil), 0o644))
	h := newHost(t, nil)
	opts := rawJSON(t, wasm.CustomOptions{Plugins: []wasm.PluginFile{{File: file}}})
	eng := newEngineWithHost(t, h, engine.Config{Chain: []string{"custom"}, Servers: map[string]engine.ServerConfig{
		"alpha": {Layers: map[string]json.RawMessage{"custom": opts}},
		"beta":  {Layers: map[string]json.RawMessage{"custom": opts}},
	}}, nil)
	in := []byte(`{"content":[{"type":"text","text":"{\"ok\":true}"}]}`)
	call := func(server, tenant, user, key string) string {
		t.Helper()
		c := engine.Call{Server: server, Tool: "get", Arguments: json.RawMessage(`{"api_key":"` + key + `"}`)}
		c.Scope.TenantID, c.Scope.UserID = tenant, user
		res, err := eng.Transform(context.Background(), c, in)
		if err != nil || len(res.Failures) > 0 {
			t.Fatalf("Transform: %v %v", err, res.Failures)
		}
		return string(res.Raw)
	}
	call("alpha", "", "", "ALPHA-SECRET")
	if out := call("beta", "", "", "BETA-SECRET"); strings.Contains(out, "ALPHA-SECRET") {
		t.Fatalf("server beta's result holds server alpha's api_key: %s", out)
	}
	if out := call("alpha", "", "", "ALPHA-2"); !strings.Contains(out, "ALPHA-SECRET") {
		t.Fatalf("alpha's second call does not see alpha's first (the guest keeps no state?): %s", out)
	}
	// Tenants and users of one server.
	call("alpha", "acme", "ann", "ACME-ANN")
	if out := call("alpha", "globex", "ann", "GLOBEX-ANN"); strings.Contains(out, "ACME-ANN") {
		t.Fatalf("tenant globex sees tenant acme's api_key: %s", out)
	}
	if out := call("alpha", "acme", "bob", "ACME-BOB"); strings.Contains(out, "ACME-ANN") {
		t.Fatalf("user bob sees user ann's api_key: %s", out)
	}
	if out := call("alpha", "acme", "ann", "ACME-ANN-2"); !strings.Contains(out, "ACME-ANN") {
		t.Fatalf("ann's second call does not reuse ann's instance: %s", out)
	}
}

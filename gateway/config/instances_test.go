package config

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/store"
)

// TestInstancesValidate: mcpx.instances takes shared, per_user,
// per_session or pool on a stdio server only, and pool_size 1 to
// MaxPoolSize with DefaultPoolSize unset.
func TestInstancesValidate(t *testing.T) {
	stdio := func(o ServerOptions) ServerConfig { return ServerConfig{Command: "srv", Mcpx: o} }
	for _, tc := range []struct {
		cfg  ServerConfig
		want string // "" for valid
	}{
		{stdio(ServerOptions{}), ""},
		{stdio(ServerOptions{Instances: InstancesShared}), ""},
		{stdio(ServerOptions{Instances: InstancesPerSession}), ""},
		{stdio(ServerOptions{Instances: InstancesPerUser}), ""},
		{ServerConfig{URL: "http://127.0.0.1:1/mcp", Mcpx: ServerOptions{Instances: InstancesPerUser}}, "applies to stdio servers"},
		{stdio(ServerOptions{Instances: InstancesPool, PoolSize: 8}), ""},
		{stdio(ServerOptions{Instances: "each"}), `mcpx.instances "each": want "shared", "per_user", "per_session" or "pool"`},
		{stdio(ServerOptions{Instances: InstancesPool, PoolSize: MaxPoolSize + 1}), "mcpx.pool_size 65: want 1 to 64"},
		{stdio(ServerOptions{Instances: InstancesPool, PoolSize: -1}), "mcpx.pool_size -1"},
		{ServerConfig{URL: "http://127.0.0.1:1/mcp", Mcpx: ServerOptions{Instances: InstancesPool}}, "applies to stdio servers"},
	} {
		err := tc.cfg.Validate("x")
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.cfg.Mcpx, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: %v, want %q", tc.cfg.Mcpx, err, tc.want)
		}
	}
	if n := stdio(ServerOptions{Instances: InstancesPool}).PoolSize(); n != DefaultPoolSize {
		t.Errorf("default pool size %d, want %d", n, DefaultPoolSize)
	}
	if n := stdio(ServerOptions{Instances: InstancesPerSession, PoolSize: 9}).PoolSize(); n != 1 {
		t.Errorf("pool size outside pool %d, want 1", n)
	}
	l := (Limits{}).WithDefaults()
	if l.MaxSessionProcesses != DefaultMaxSessionProcesses || l.MaxUserProcesses != DefaultMaxUserProcesses || l.UserProcessIdleTimeout != store.Duration(DefaultUserProcessIdleTimeout) {
		t.Errorf("defaults: max_session_processes %d, max_user_processes %d, user_process_idle_timeout %s", l.MaxSessionProcesses, l.MaxUserProcesses, time.Duration(l.UserProcessIdleTimeout))
	}
	for _, bad := range []Limits{{MaxUserProcesses: -1}, {UserProcessIdleTimeout: -1}} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

// TestInstanceModeFor: a stdio server without mcpx.instances runs
// per_user when more than one principal may call the gateway (distinct
// token identities, or JWTs), shared otherwise; an explicit mode is
// kept, and a remote server is shared.
func TestInstanceModeFor(t *testing.T) {
	stdio := ServerConfig{Command: "srv"}
	shared := ServerConfig{Command: "srv", Mcpx: ServerOptions{Instances: InstancesShared}}
	remote := ServerConfig{URL: "http://127.0.0.1:1/mcp"}
	for _, tc := range []struct {
		cfg               ServerConfig
		users             Users
		wantMode, wantWhy string
	}{
		{stdio, Users{}, InstancesShared, "default: one user"},
		{stdio, Users{Identities: 1}, InstancesShared, "default: one principal is configured"},
		{stdio, Users{Identities: 2}, InstancesPerUser, "default: 2 principals are configured"},
		{stdio, Users{JWT: true}, InstancesPerUser, "default: JWTs admit any number of users"},
		{shared, Users{JWT: true}, InstancesShared, "explicit"},
		{remote, Users{Identities: 5}, InstancesShared, "a remote server"},
	} {
		if mode, why := tc.cfg.InstanceModeFor(tc.users); mode != tc.wantMode || why != tc.wantWhy {
			t.Errorf("%+v for %+v: %s (%s), want %s (%s)", tc.cfg, tc.users, mode, why, tc.wantMode, tc.wantWhy)
		}
	}
}

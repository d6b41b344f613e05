package wasm_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/layers/wasm"
)

func TestLimitsApply(t *testing.T) {
	t.Parallel()
	c, err := wasm.Limits{Timeout: "250ms", MemoryMiB: 32, MaxOutputBytes: 1000, PoolSize: 2, MaxValueBytes: -1}.Apply(wasm.SandboxConfig{LongString: 512})
	if err != nil {
		t.Fatal(err)
	}
	want := wasm.SandboxConfig{Timeout: 250 * time.Millisecond, MemoryLimitPages: 512, MaxOutputBytes: 1000, PoolSize: 2, MaxValueBytes: wasm.NoValueReads, LongString: 512}
	if c != want {
		t.Fatalf("applied: %+v, want %+v", c, want)
	}
	if c, err := (wasm.Limits{}).Apply(want); err != nil || c != want {
		t.Fatalf("empty limits changed the base: %+v, %v", c, err)
	}
	for _, bad := range []wasm.Limits{{Timeout: "soon"}, {Timeout: "-1s"}, {MemoryMiB: -1}, {MemoryMiB: 5000}, {LongString: 3}} {
		if _, err := bad.Apply(wasm.SandboxConfig{}); err == nil {
			t.Errorf("%+v: want an error", bad)
		}
	}
}

func TestSandboxConfigValidated(t *testing.T) {
	t.Parallel()
	h := newHost(t, nil)
	for _, bad := range []wasm.SandboxConfig{
		{Timeout: -time.Second}, {MemoryLimitPages: 65537}, {MaxOutputBytes: -1}, {MaxOutputBytes: 2 << 30}, {LongString: 7}, {PoolSize: -1},
	} {
		// The limits are checked before the module is looked at.
		if _, err := h.Compile(context.Background(), "empty", []byte("\x00asm\x01\x00\x00\x00"), bad, nil); err == nil || strings.Contains(err.Error(), "missing export") {
			t.Errorf("%+v: compiled, want a validation error", bad)
		}
		if _, err := wasm.NewHost(context.Background(), wasm.HostOptions{CacheDir: "-", Sandbox: bad}); err == nil {
			t.Errorf("NewHost with %+v: want a validation error", bad)
		}
	}
}

func TestDefaultCacheDir(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", "")
	home := t.TempDir()
	t.Setenv("HOME", home)
	if got, want := wasm.DefaultCacheDir(), filepath.Join(home, ".cache", "mcpx", "wasm"); got != want {
		t.Errorf("DefaultCacheDir = %s, want %s", got, want)
	}
	t.Setenv("HOME", "")
	if got := wasm.DefaultCacheDir(); !strings.HasPrefix(got, os.TempDir()) || !strings.HasSuffix(got, "wasm") {
		t.Errorf("without HOME: %s, want a folder under %s", got, os.TempDir())
	}
}

package wasm_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/layers/wasm"
)

func TestSandboxConfigDefaults(t *testing.T) {
	c := wasm.NewSandboxConfig()
	if c.Timeout() != 2*time.Second || c.MemoryLimitPages() != 2048 || c.MaxOutputBytes() != 16<<20 || c.MaxValueBytes() != 4<<20 || c.LongString() != 256 {
		t.Fatalf("defaults: %v %v %v %v %v", c.Timeout(), c.MemoryLimitPages(), c.MaxOutputBytes(), c.MaxValueBytes(), c.LongString())
	}
	d := c.WithTimeout(time.Second)
	if c.Timeout() != 2*time.Second || d.Timeout() != time.Second {
		t.Fatal("With must copy, not mutate")
	}
	if c.WithMaxValueBytes(0).MaxValueBytes() != 0 {
		t.Fatal("WithMaxValueBytes(0) disables get_value")
	}
}

func TestLimitsApply(t *testing.T) {
	c, err := wasm.Limits{Timeout: "250ms", MemoryMiB: 32, MaxOutputBytes: 1000, PoolSize: 2}.Apply(wasm.NewSandboxConfig())
	if err != nil {
		t.Fatal(err)
	}
	if c.Timeout() != 250*time.Millisecond || c.MemoryLimitPages() != 512 || c.MaxOutputBytes() != 1000 || c.PoolSize() != 2 {
		t.Fatalf("applied: %+v", c)
	}
	for _, bad := range []wasm.Limits{{Timeout: "soon"}, {Timeout: "-1s"}, {MemoryMiB: -1}, {MemoryMiB: 5000}, {LongString: 3}} {
		if _, err := bad.Apply(wasm.NewSandboxConfig()); err == nil {
			t.Errorf("%+v: want an error", bad)
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

package wasm

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Defaults of SandboxConfig.
const (
	// DefaultTimeout bounds one call into a plugin.
	DefaultTimeout = 2 * time.Second
	// DefaultMemoryLimitPages caps a plugin instance's memory: 2048 pages
	// of 64 KiB, 128 MiB.
	DefaultMemoryLimitPages = 2048
	// DefaultMaxOutputBytes caps a plugin's response.
	DefaultMaxOutputBytes = 16 << 20
	// DefaultMaxValueBytes bounds what host.get_value hands a guest in one
	// call, all reads together.
	DefaultMaxValueBytes = 4 << 20
	// DefaultLongString is the shortest string literal (quotes included)
	// that the request skeleton replaces by a stub.
	DefaultLongString = 256
)

// maxPages is the most pages a 32-bit WebAssembly memory can have.
const maxPages = 65536

// SandboxConfig bounds what a plugin may use. The zero value means the
// defaults; each With method returns a copy, never an error, and the values
// are validated once, by Host.Compile.
type SandboxConfig struct {
	timeout       time.Duration
	memoryPages   uint32
	maxOutput     int
	maxValue      int
	longString    int
	poolSize      int
	hasMaxValue   bool
	hasLongString bool
}

// NewSandboxConfig returns the default limits.
func NewSandboxConfig() SandboxConfig { return SandboxConfig{} }

// WithTimeout sets the deadline of one call. Defaults to 2 s.
//
//	cfg = cfg.WithTimeout(500 * time.Millisecond)
func (c SandboxConfig) WithTimeout(d time.Duration) SandboxConfig { c.timeout = d; return c }

// WithMemoryLimitPages caps an instance's memory in 64 KiB pages. Defaults
// to 2048 (128 MiB).
//
//	cfg = cfg.WithMemoryLimitPages(512) // 32 MiB
func (c SandboxConfig) WithMemoryLimitPages(n uint32) SandboxConfig { c.memoryPages = n; return c }

// WithMaxOutputBytes caps a response. Defaults to 16 MiB.
//
//	cfg = cfg.WithMaxOutputBytes(1 << 20)
func (c SandboxConfig) WithMaxOutputBytes(n int) SandboxConfig { c.maxOutput = n; return c }

// WithMaxValueBytes bounds the bytes host.get_value returns in one call, all
// reads together; 0 disables get_value. Defaults to 4 MiB.
//
//	cfg = cfg.WithMaxValueBytes(0)
func (c SandboxConfig) WithMaxValueBytes(n int) SandboxConfig {
	c.maxValue, c.hasMaxValue = n, true
	return c
}

// WithLongString sets the shortest string literal, quotes included, that
// the request skeleton replaces by {"$mcpx":"long_string",...} and lists
// among the candidates. Defaults to 256.
//
//	cfg = cfg.WithLongString(1024)
func (c SandboxConfig) WithLongString(n int) SandboxConfig {
	c.longString, c.hasLongString = n, true
	return c
}

// WithPoolSize sets how many idle instances a plugin keeps for the next
// calls. Defaults to 4.
//
//	cfg = cfg.WithPoolSize(16)
func (c SandboxConfig) WithPoolSize(n int) SandboxConfig { c.poolSize = n; return c }

// Timeout is the per-call deadline in effect.
func (c SandboxConfig) Timeout() time.Duration {
	if c.timeout == 0 {
		return DefaultTimeout
	}
	return c.timeout
}

// MemoryLimitPages is the memory cap in effect, in 64 KiB pages.
func (c SandboxConfig) MemoryLimitPages() uint32 {
	if c.memoryPages == 0 {
		return DefaultMemoryLimitPages
	}
	return c.memoryPages
}

// MaxOutputBytes is the response cap in effect.
func (c SandboxConfig) MaxOutputBytes() int {
	if c.maxOutput == 0 {
		return DefaultMaxOutputBytes
	}
	return c.maxOutput
}

// MaxValueBytes is the get_value budget per call in effect.
func (c SandboxConfig) MaxValueBytes() int {
	if !c.hasMaxValue {
		return DefaultMaxValueBytes
	}
	return c.maxValue
}

// LongString is the skeleton's threshold in effect.
func (c SandboxConfig) LongString() int {
	if !c.hasLongString {
		return DefaultLongString
	}
	return c.longString
}

// PoolSize is the number of idle instances kept.
func (c SandboxConfig) PoolSize() int {
	if c.poolSize == 0 {
		return 4
	}
	return c.poolSize
}

func (c SandboxConfig) validate() error {
	switch {
	case c.Timeout() < 0:
		return fmt.Errorf("timeout %v: must be positive", c.timeout)
	case c.MemoryLimitPages() > maxPages:
		return fmt.Errorf("memory limit %d pages: at most %d", c.memoryPages, maxPages)
	case c.MaxOutputBytes() < 0 || c.MaxOutputBytes() > 1<<30:
		return fmt.Errorf("max output %d bytes: want 1 B to 1 GiB", c.maxOutput)
	case c.MaxValueBytes() < 0:
		return fmt.Errorf("max value %d bytes: must not be negative", c.maxValue)
	case c.LongString() < 8:
		return fmt.Errorf("long string %d: at least 8", c.longString)
	case c.PoolSize() < 0:
		return fmt.Errorf("pool size %d: must not be negative", c.poolSize)
	}
	return nil
}

// Limits is the JSON form of a SandboxConfig in layer options and plugin
// sidecar files; zero fields keep the defaults.
type Limits struct {
	// Timeout of one call, a Go duration ("500ms"). Defaults to "2s".
	Timeout string `json:"timeout,omitempty"`
	// MemoryMiB caps guest memory. Defaults to 128.
	MemoryMiB int `json:"memory_mib,omitempty"`
	// MaxOutputBytes caps a response. Defaults to 16 MiB.
	MaxOutputBytes int `json:"max_output_bytes,omitempty"`
	// MaxValueBytes is the get_value budget per call. Defaults to 4 MiB.
	MaxValueBytes int `json:"max_value_bytes,omitempty"`
	// LongString is the skeleton threshold. Defaults to 256.
	LongString int `json:"long_string,omitempty"`
	// PoolSize is the number of idle instances kept. Defaults to 4.
	PoolSize int `json:"pool_size,omitempty"`
}

// Apply returns base with the limits set in l.
func (l Limits) Apply(base SandboxConfig) (SandboxConfig, error) {
	c := base
	if l.Timeout != "" {
		d, err := time.ParseDuration(l.Timeout)
		if err != nil || d <= 0 {
			return c, fmt.Errorf("limits.timeout %q: want a positive duration such as \"2s\"", l.Timeout)
		}
		c = c.WithTimeout(d)
	}
	if l.MemoryMiB < 0 || l.MemoryMiB > 4096 {
		return c, fmt.Errorf("limits.memory_mib %d: want 1 to 4096", l.MemoryMiB)
	}
	if l.MemoryMiB > 0 {
		c = c.WithMemoryLimitPages(uint32(l.MemoryMiB) * 16)
	}
	if l.MaxOutputBytes > 0 {
		c = c.WithMaxOutputBytes(l.MaxOutputBytes)
	}
	if l.MaxValueBytes > 0 {
		c = c.WithMaxValueBytes(l.MaxValueBytes)
	}
	if l.LongString > 0 {
		c = c.WithLongString(l.LongString)
	}
	if l.PoolSize > 0 {
		c = c.WithPoolSize(l.PoolSize)
	}
	return c, c.validate()
}

// DefaultCacheDir is where wazero's compilation cache lives:
// os.UserCacheDir()/mcpx/wasm, else $TMPDIR/mcpx-<uid>/wasm when there is no
// home (a service account without HOME).
func DefaultCacheDir() string {
	if d, err := os.UserCacheDir(); err == nil && d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "mcpx", "wasm")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("mcpx-%d", os.Getuid()), "wasm")
}

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
	// DefaultPoolSize is how many idle instances a plugin keeps.
	DefaultPoolSize = 4
)

// maxPages is the most pages a 32-bit WebAssembly memory can have.
const maxPages = 65536

// SandboxConfig bounds what a plugin may use. Each zero field means its
// default, so the zero value is the default limits; Host.Compile and
// NewHost validate the values.
//
//	cfg := wasm.SandboxConfig{Timeout: 500 * time.Millisecond, MaxValueBytes: wasm.NoValueReads}
type SandboxConfig struct {
	// Timeout is the deadline of one call. 0 means DefaultTimeout (2 s).
	Timeout time.Duration
	// MemoryLimitPages caps an instance's memory in 64 KiB pages, at most
	// 65536. 0 means DefaultMemoryLimitPages (2048, 128 MiB).
	MemoryLimitPages uint32
	// MaxOutputBytes caps a response, at most 1 GiB. 0 means
	// DefaultMaxOutputBytes (16 MiB).
	MaxOutputBytes int
	// MaxValueBytes bounds the bytes host.get_value returns in one call,
	// all reads together. 0 means DefaultMaxValueBytes (4 MiB); a negative
	// value (NoValueReads) disables get_value.
	MaxValueBytes int
	// LongString is the shortest string literal, quotes included, that the
	// request skeleton replaces by {"$mcpx":"long_string",...} and lists
	// among the candidates; at least 8. 0 means DefaultLongString (256).
	LongString int
	// PoolSize is how many idle instances a plugin keeps for the next
	// calls. 0 means DefaultPoolSize (4).
	PoolSize int
}

// NoValueReads disables host.get_value when it is
// SandboxConfig.MaxValueBytes: the guest sees only the request's skeleton.
const NoValueReads = -1

// withDefaults returns c with every zero field set to its default, and a
// negative MaxValueBytes as NoValueReads: the limits in effect, and one key
// for limits that are the same.
func (c SandboxConfig) withDefaults() SandboxConfig {
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MemoryLimitPages == 0 {
		c.MemoryLimitPages = DefaultMemoryLimitPages
	}
	if c.MaxOutputBytes == 0 {
		c.MaxOutputBytes = DefaultMaxOutputBytes
	}
	switch {
	case c.MaxValueBytes == 0:
		c.MaxValueBytes = DefaultMaxValueBytes
	case c.MaxValueBytes < 0:
		c.MaxValueBytes = NoValueReads
	}
	if c.LongString == 0 {
		c.LongString = DefaultLongString
	}
	if c.PoolSize == 0 {
		c.PoolSize = DefaultPoolSize
	}
	return c
}

// valueBudget is the get_value budget of one call: 0 when disabled.
func (c SandboxConfig) valueBudget() int { return max(c.withDefaults().MaxValueBytes, 0) }

func (c SandboxConfig) validate() error {
	switch {
	case c.Timeout < 0:
		return fmt.Errorf("timeout %v: must be positive", c.Timeout)
	case c.MemoryLimitPages > maxPages:
		return fmt.Errorf("memory limit %d pages: at most %d", c.MemoryLimitPages, maxPages)
	case c.MaxOutputBytes < 0 || c.MaxOutputBytes > 1<<30:
		return fmt.Errorf("max output %d bytes: want 1 B to 1 GiB", c.MaxOutputBytes)
	case c.LongString != 0 && c.LongString < 8:
		return fmt.Errorf("long string %d: at least 8", c.LongString)
	case c.PoolSize < 0:
		return fmt.Errorf("pool size %d: must not be negative", c.PoolSize)
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
	// MaxValueBytes is the get_value budget per call. Defaults to 4 MiB;
	// a negative value (-1) disables get_value.
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
		c.Timeout = d
	}
	if l.MemoryMiB < 0 || l.MemoryMiB > 4096 {
		return c, fmt.Errorf("limits.memory_mib %d: want 1 to 4096", l.MemoryMiB)
	}
	if l.MemoryMiB > 0 {
		c.MemoryLimitPages = uint32(l.MemoryMiB) * 16
	}
	if l.MaxOutputBytes > 0 {
		c.MaxOutputBytes = l.MaxOutputBytes
	}
	if l.MaxValueBytes != 0 {
		c.MaxValueBytes = l.MaxValueBytes
	}
	if l.LongString > 0 {
		c.LongString = l.LongString
	}
	if l.PoolSize > 0 {
		c.PoolSize = l.PoolSize
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

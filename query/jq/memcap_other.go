//go:build !linux

package jq

import (
	"os"
	"runtime/debug"
	"syscall"
)

// selfPath is the binary the child runs: this process's own executable.
func selfPath() string {
	p, err := os.Executable()
	if err != nil {
		return os.Args[0]
	}
	return p
}

// childAttr: no parent-death signal outside Linux; Run kills the child at
// its deadline.
func childAttr() *syscall.SysProcAttr { return nil }

// capMemory sets the Go memory limit and stack limit only: outside Linux
// neither /proc/self/statm nor a resource limit that counts a Go heap's
// mappings is there (RLIMIT_DATA leaves mmap out), so the cap is the
// collector's, which a live heap can pass.
func capMemory(limit int64) error {
	debug.SetMemoryLimit(limit)
	debug.SetMaxStack(int(min(limit/2, 1<<30)))
	return nil
}

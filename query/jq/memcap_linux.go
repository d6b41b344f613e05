package jq

import (
	"bufio"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
)

// selfPath is the binary the child runs: this process's own executable,
// even when the file it was started from has since been replaced.
func selfPath() string { return "/proc/self/exe" }

// childAttr kills the child when the process that started it dies.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// addressSlack is the address space a child may reserve beyond its
// limit: the runtime reserves heap in 64 MB arenas and a thread's stack
// in 8 MB, ahead of use, so a limit on address space alone left a 10 MB
// JSON query (a 107 MB heap) short of room one time in three at 256 MiB.
const addressSlack = 128 << 20

// capMemory caps this process's memory at limit bytes more than it has
// mapped at start. Its heap's growth is capped by address space
// (RLIMIT_AS, limit plus addressSlack): the runtime's first mapping past
// it fails and the process ends at once with "runtime: out of memory",
// before the machine is short. What is mapped at start (about 1.2 GB,
// 1.7 GB in mcpx-server) is address space the runtime reserves and
// barely touches, hence the cap on top of it. The Go memory limit (limit)
// makes the collector keep the heap under limit while the program's live
// data fits; measured, a child's peak RSS stayed under limit at 256 MiB
// under every allocation bomb tried. RLIMIT_DATA is no cap for a Go heap:
// the runtime reserves address space and then maps it writable in place
// (mmap MAP_FIXED over its own PROT_NONE reservation), which the kernel
// counts as no growth, so a 1 GB string got through a 256 MiB
// RLIMIT_DATA. The stack limit stops deep recursion first, with its own
// message.
func capMemory(limit int64) error {
	base, err := mappedBytes()
	if err != nil {
		return err
	}
	debug.SetMemoryLimit(limit)
	debug.SetMaxStack(int(min(limit/2, 1<<30)))
	cap := uint64(base + limit + addressSlack)
	return syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: cap, Max: cap})
}

// mappedBytes is what RLIMIT_AS counts of this process now: VmSize.
func mappedBytes() (int64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmSize:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("VmSize %q: %w", rest, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("no VmSize in /proc/self/status: %v", sc.Err())
}

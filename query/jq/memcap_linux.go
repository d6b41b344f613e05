package jq

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"runtime"
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

// addressSlack is the address space a child may map past its heap's:
// its threads' stacks (8 MB each where cgo starts them; 64 MB was short
// now and then under load) and the runtime's tables. The heap may grow
// into it too, so the hard cap is limit plus addressSlack.
const addressSlack = 128 << 20

// capMemory caps this process's memory at about limit bytes, before it
// reads any input. It reserves the heap's address space up front (one
// allocation of limit bytes, never touched, then collected: the runtime
// keeps the range for later allocations) and then lets the address space
// grow by no more than addressSlack (RLIMIT_AS): the runtime's first
// mapping past that fails and the process ends at once with "runtime:
// out of memory". Measured at 256 MiB: a child's peak RSS stayed under
// 256 MiB under every allocation bomb tried, a 250 MB string still fits,
// and 160 runs of a 10 MB JSON query (a 107 MB heap) all passed. The Go memory limit,
// three quarters of limit, makes the collector keep the heap under that
// line while the live data fits; the stack limit stops deep recursion
// with its own message.
//
// A limit on the address space with no reservation first is no fixed
// cap: the runtime reserves 64 MB arenas as the heap grows, in more or
// fewer pieces from run to run, so the same 10 MB query grew it by 67 to
// 267 MB and failed once in a hundred under 256 MiB plus 128 MiB.
// RLIMIT_DATA is none at all: the runtime maps its reservations writable
// in place (mmap MAP_FIXED over its own PROT_NONE range), which the
// kernel counts as no growth, so a 1 GB string passed a 256 MiB
// RLIMIT_DATA.
func capMemory(limit int64) error {
	debug.SetMemoryLimit(limit * 3 / 4)
	debug.SetMaxStack(int(min(limit/2, 1<<30)))
	runtime.KeepAlive(make([]byte, limit))
	runtime.GC()
	base, err := mappedBytes()
	if err != nil {
		return err
	}
	as := uint64(base + addressSlack)
	return syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: as, Max: as})
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
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("no VmSize in /proc/self/status: %w", err)
	}
	return 0, errors.New("no VmSize in /proc/self/status")
}

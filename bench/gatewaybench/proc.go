package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// procCost is what one process has spent, its children not counted:
// CPU time (user and system) and context switches (voluntary and not),
// summed over its threads from /proc. On a loaded machine these move
// much less than latency does, and they tell where a proxy's time goes
// (a relay's thread wake-ups against the gateway's).
type procCost struct {
	cpu      time.Duration
	switches int
	ok       bool
}

// clockTicks is the kernel's USER_HZ, the unit of /proc's CPU times
// (100 on Linux for all architectures Go supports).
const clockTicks = 100

func readProcCost(pid int) procCost {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
	if err != nil || len(tasks) == 0 {
		return procCost{}
	}
	var c procCost
	for _, t := range tasks {
		stat, err := os.ReadFile(filepath.Join(t, "stat"))
		if err != nil {
			continue // a thread that ended meanwhile
		}
		// the fields after the command, which is in parentheses
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) < 13 {
			continue
		}
		utime, _ := strconv.Atoi(f[11])
		stime, _ := strconv.Atoi(f[12])
		c.cpu += time.Duration(utime+stime) * time.Second / clockTicks
		status, _ := os.ReadFile(filepath.Join(t, "status"))
		for _, line := range strings.Split(string(status), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.HasSuffix(k, "ctxt_switches") {
				n, _ := strconv.Atoi(strings.TrimSpace(v))
				c.switches += n
			}
		}
	}
	c.ok = true
	return c
}

// costPerCall is b-a over n calls.
type costPerCall struct {
	cpuUs, switches float64
}

func perCall(a, b procCost, n int) (costPerCall, bool) {
	if !a.ok || !b.ok || n == 0 {
		return costPerCall{}, false
	}
	return costPerCall{cpuUs: float64(b.cpu-a.cpu) / float64(time.Microsecond) / float64(n), switches: float64(b.switches-a.switches) / float64(n)}, true
}

// reportCosts prints the median cost per call of each target's process.
func reportCosts(names []string, costs [][]costPerCall) {
	for i, cs := range costs {
		if len(cs) == 0 {
			continue
		}
		cpu := make([]float64, len(cs))
		sw := make([]float64, len(cs))
		for j, c := range cs {
			cpu[j], sw[j] = c.cpuUs, c.switches
		}
		slices.Sort(cpu)
		slices.Sort(sw)
		fmt.Printf("median %-7s process: %6.1f µs CPU/call  %5.2f context switches/call (its own, not its server's; CPU in 10 ms ticks)\n", names[i], cpu[len(cpu)/2], sw[len(sw)/2])
	}
}

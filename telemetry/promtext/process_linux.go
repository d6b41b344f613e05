package promtext

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// userHZ is the kernel's clock tick for /proc times (sysconf(_SC_CLK_TCK)),
// 100 on every Linux architecture Go supports.
const userHZ = 100

// writeProcess writes the process collector's metrics from /proc and
// the resource limits; one the system does not tell is left out.
func writeProcess(w *Writer) {
	if st, ok := readStat(); ok {
		w.Family("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", TypeCounter)
		w.Sample("process_cpu_seconds_total", float64(st.utime+st.stime)/userHZ)
		w.Family("process_resident_memory_bytes", "Resident memory size in bytes.", TypeGauge)
		w.Sample("process_resident_memory_bytes", float64(st.rss*uint64(os.Getpagesize())))
		if boot, ok := bootTime(); ok {
			w.Family("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", TypeGauge)
			w.Sample("process_start_time_seconds", float64(boot)+float64(st.start)/userHZ)
		}
		w.Family("process_virtual_memory_bytes", "Virtual memory size in bytes.", TypeGauge)
		w.Sample("process_virtual_memory_bytes", float64(st.vsize))
	}
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil {
		w.Family("process_max_fds", "Maximum number of open file descriptors.", TypeGauge)
		w.Sample("process_max_fds", float64(lim.Cur))
	}
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		w.Family("process_open_fds", "Number of open file descriptors.", TypeGauge)
		w.Sample("process_open_fds", float64(len(fds)))
	}
	if syscall.Getrlimit(syscall.RLIMIT_AS, &lim) == nil {
		w.Family("process_virtual_memory_max_bytes", "Maximum amount of virtual memory available in bytes.", TypeGauge)
		w.Sample("process_virtual_memory_max_bytes", float64(lim.Cur))
	}
	if rx, tx, ok := netBytes(); ok {
		w.Family("process_network_receive_bytes_total", "Number of bytes received by the process over the network.", TypeCounter)
		w.Sample("process_network_receive_bytes_total", float64(rx))
		w.Family("process_network_transmit_bytes_total", "Number of bytes sent by the process over the network.", TypeCounter)
		w.Sample("process_network_transmit_bytes_total", float64(tx))
	}
}

type procStat struct{ utime, stime, start, vsize, rss uint64 }

// readStat reads /proc/self/stat (proc(5)): the fields after the
// command's closing parenthesis, which the command itself may contain.
func readStat() (procStat, bool) {
	b, err := os.ReadFile("/proc/self/stat")
	i := bytes.LastIndexByte(b, ')')
	if err != nil || i < 0 {
		return procStat{}, false
	}
	f := bytes.Fields(b[i+1:]) // f[0] is field 3, state
	if len(f) < 22 {
		return procStat{}, false
	}
	var st procStat
	ok := true
	for _, p := range []struct {
		dst *uint64
		i   int
	}{{&st.utime, 11}, {&st.stime, 12}, {&st.start, 19}, {&st.vsize, 20}, {&st.rss, 21}} {
		v, err := strconv.ParseUint(string(f[p.i]), 10, 64)
		*p.dst, ok = v, ok && err == nil
	}
	return st, ok
}

// bootTime is /proc/stat's btime, seconds since the epoch.
func bootTime() (uint64, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(line, []byte("btime ")); ok {
			n, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// netBytes sums the received and sent bytes of every interface in
// /proc/self/net/dev (the process's network namespace).
func netBytes() (rx, tx uint64, ok bool) {
	b, err := os.ReadFile("/proc/self/net/dev")
	if err != nil {
		return 0, 0, false
	}
	for line := range bytes.Lines(b) {
		_, counts, found := bytes.Cut(line, []byte(":"))
		f := bytes.Fields(counts)
		if !found || len(f) < 16 {
			continue // the two header lines
		}
		r, err1 := strconv.ParseUint(string(f[0]), 10, 64)
		t, err2 := strconv.ParseUint(string(f[8]), 10, 64)
		if err1 != nil || err2 != nil {
			return 0, 0, false
		}
		rx, tx, ok = rx+r, tx+t, true
	}
	return rx, tx, ok
}

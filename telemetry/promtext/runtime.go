package promtext

import (
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"time"
)

// WriteRuntime writes the Go runtime's metrics and the process's (CPU,
// memory, file descriptors, start time, network bytes where the system
// tells them), with the names, help and types of the Prometheus client
// library's Go and process collectors. Pass it to Registry.Collect.
func WriteRuntime(w *Writer) {
	writeGo(w)
	writeProcess(w)
}

// goSourced are the gauges the Go collector sources from runtime/metrics
// by default, in the order written. They are read without that package:
// its init builds its table of every metric's description, about 0.1 ms
// of every mcpx process's start (BENCHMARKS.md, "Start-up"), for three
// numbers the runtime also gives directly.
var goSourced = [...]struct {
	name, help string
	v          func() float64
}{
	{"go_gc_gogc_percent", "Heap size target percentage configured by the user, otherwise 100. This value is set by the GOGC environment variable, and the runtime/debug.SetGCPercent function. Sourced from /gc/gogc:percent.", gogcPercent},
	{"go_gc_gomemlimit_bytes", "Go runtime memory limit configured by the user, otherwise math.MaxInt64. This value is set by the GOMEMLIMIT environment variable, and the runtime/debug.SetMemoryLimit function. Sourced from /gc/gomemlimit:bytes.", func() float64 { return float64(debug.SetMemoryLimit(-1)) }},
	{"go_sched_gomaxprocs_threads", "The current runtime.GOMAXPROCS setting, or the number of operating system threads that can execute user-level Go code simultaneously. Sourced from /sched/gomaxprocs:threads.", func() float64 { return float64(runtime.GOMAXPROCS(0)) }},
}

// gogcPercent is GOGC as the runtime reads it at start ("off" is -1,
// what does not parse is 100). The runtime offers no getter but
// runtime/metrics, and debug.SetGCPercent's round trip would change the
// setting for a moment; a process that serves metrics never calls
// SetGCPercent (only the short "mcpx transform" does), so the
// environment is the setting.
func gogcPercent() float64 {
	v := os.Getenv("GOGC")
	if v == "off" {
		return -1
	}
	if n, err := strconv.ParseInt(v, 10, 32); err == nil {
		return float64(n)
	}
	return 100
}

// memStats are the go_memstats_ gauges and counters, from
// runtime.MemStats.
var memStats = [...]struct {
	name, help string
	typ        Type
	v          func(*runtime.MemStats) float64
}{
	{"go_memstats_alloc_bytes", "Number of bytes allocated in heap and currently in use. Equals to /memory/classes/heap/objects:bytes.", TypeGauge, func(m *runtime.MemStats) float64 { return float64(m.Alloc) }},
	{"go_memstats_alloc_bytes_total", "Total number of bytes allocated in heap until now, even if released already. Equals to /gc/heap/allocs:bytes.", TypeCounter, func(m *runtime.MemStats) float64 { return float64(m.TotalAlloc) }},
	{"go_memstats_buck_hash_sys_bytes", "Number of bytes used by the profiling bucket hash table. Equals to /memory/classes/profiling/buckets:bytes.", TypeGauge, func(m *runtime.MemStats) float64 { return float64(m.BuckHashSys) }},
	{"go_memstats_frees_total", "Total number of heap objects frees. Equals to /gc/heap/frees:objects + /gc/heap/tiny/allocs:objects.", TypeCounter, func(m *runtime.MemStats) float64 { return float64(m.Frees) }},
	{"go_memstats_gc_sys_bytes", "Number of bytes used for garbage collection system metadata. Equals to /memory/classes/metadata/other:bytes.", TypeGauge, func(m *runtime.MemStats) float64 { return float64(m.GCSys) }},
	{"go_memstats_heap_alloc_bytes", "Number of heap bytes allocated and currently in use, same as go_memstats_alloc_bytes. Equals to /memory/classes/heap/objects:bytes.", TypeGauge, func(m *runtime.MemStats) float64 { return float64(m.HeapAlloc) }},
	{"go_memstats_heap_idle_bytes", "Number of heap bytes waiting to be used. Equals to /memory/classes/heap/released:bytes + /memory/classes/heap/free:bytes.", TypeGauge, func(m *runtime.MemStats) float64 { return float64(m.HeapIdle) }},
	{"go_memstats_heap_inuse_bytes", "Number of heap bytes that are in use. Equals to /memory/classes/heap/objects:bytes + /memory/classes/heap/unused:bytes", TypeGauge, func(m *runtime.MemStats) float64 { return float64(m.HeapInuse) }},
	{"go_memstats_heap_objects", "Number of currently allocated objects. Equals to /gc/heap/objects:objects.", TypeGauge, func(m *runtime.MemStats) float64 { return float64(m.HeapObjects) }},
	{"go_memstats_heap_released_bytes", "Number of heap bytes released to OS. Equals to /memory/classes/heap/released:bytes.", TypeGauge, func(m *runtime.MemStats) float64 { return float64(m.HeapReleased) }},
	{"go_memstats_heap_sys_bytes", "Number of heap bytes obtained from system. Equals to /memory/classes/heap/objects:bytes + /memory/classes/heap/unused:bytes + /memory/classes/heap/released:bytes + /memory/classes/heap/free:bytes.", TypeGauge, func(m *runtime.MemStats) float64 { return float64(m.HeapSys) }},
	{"go_memstats_last_gc_time_seconds", "Number of seconds since 1970 of last garbage collection.", TypeGauge, func(m *runtime.MemStats) float64 { return float64(m.LastGC) / 1e9 }},
	{"go_memstats_mallocs_total", "Total number of heap objects allocated, both live and gc-ed. Semantically a counter version for go_memstats_heap_objects gauge. Equals to /gc/heap/allocs:objects + /gc/heap/tiny/allocs:objects.", TypeCounter, func(m *runtime.MemStats) float64 { return float64(m.Mallocs) }},
	{"go_memstats_mcache_inuse_bytes", "Number of bytes in use by mcache structures. Equals to /memory/classes/metadata/mcache/inuse:bytes.", TypeGauge, func(m *runtime.MemStats) float64 { return float64(m.MCacheInuse) }},
	{"go_memstats_mcache_sys_bytes", "Number of bytes used for mcache structures obtained from system. Equals to /memory/classes/metadata/mcache/inuse:bytes + /memory/classes/metadata/mcache/free:bytes.", TypeGauge, func(m *runtime.MemStats) float64 { return float64(m.MCacheSys) }},
	{"go_memstats_mspan_inuse_bytes", "Number of bytes in use by mspan structures. Equals to /memory/classes/metadata/mspan/inuse:bytes.", TypeGauge, func(m *runtime.MemStats) float64 { return float64(m.MSpanInuse) }},
	{"go_memstats_mspan_sys_bytes", "Number of bytes used for mspan structures obtained from system. Equals to /memory/classes/metadata/mspan/inuse:bytes + /memory/classes/metadata/mspan/free:bytes.", TypeGauge, func(m *runtime.MemStats) float64 { return float64(m.MSpanSys) }},
	{"go_memstats_next_gc_bytes", "Number of heap bytes when next garbage collection will take place. Equals to /gc/heap/goal:bytes.", TypeGauge, func(m *runtime.MemStats) float64 { return float64(m.NextGC) }},
	{"go_memstats_other_sys_bytes", "Number of bytes used for other system allocations. Equals to /memory/classes/other:bytes.", TypeGauge, func(m *runtime.MemStats) float64 { return float64(m.OtherSys) }},
	{"go_memstats_stack_inuse_bytes", "Number of bytes obtained from system for stack allocator in non-CGO environments. Equals to /memory/classes/heap/stacks:bytes.", TypeGauge, func(m *runtime.MemStats) float64 { return float64(m.StackInuse) }},
	{"go_memstats_stack_sys_bytes", "Number of bytes obtained from system for stack allocator. Equals to /memory/classes/heap/stacks:bytes + /memory/classes/os-stacks:bytes.", TypeGauge, func(m *runtime.MemStats) float64 { return float64(m.StackSys) }},
	{"go_memstats_sys_bytes", "Number of bytes obtained from system. Equals to /memory/classes/total:byte.", TypeGauge, func(m *runtime.MemStats) float64 { return float64(m.Sys) }},
}

func writeGo(w *Writer) {
	var gc debug.GCStats
	gc.PauseQuantiles = make([]time.Duration, 5)
	debug.ReadGCStats(&gc)
	w.Family("go_gc_duration_seconds", "A summary of the wall-time pause (stop-the-world) duration in garbage collection cycles.", TypeSummary)
	for i, q := range [...]string{"0", "0.25", "0.5", "0.75", "1"} {
		w.b = appendSeries(w.b, "go_gc_duration_seconds", nil, "quantile", q)
		w.b = append(w.b, ' ')
		w.b = appendFloat(w.b, gc.PauseQuantiles[i].Seconds())
		w.b = append(w.b, '\n')
	}
	w.Sample("go_gc_duration_seconds_sum", gc.PauseTotal.Seconds())
	w.Sample("go_gc_duration_seconds_count", float64(gc.NumGC))

	for _, s := range goSourced {
		w.Family(s.name, s.help, TypeGauge)
		w.Sample(s.name, s.v())
	}
	w.Family("go_goroutines", "Number of goroutines that currently exist.", TypeGauge)
	w.Sample("go_goroutines", float64(runtime.NumGoroutine()))
	w.Family("go_info", "Information about the Go environment.", TypeGauge)
	w.Sample("go_info", 1, "version", runtime.Version())

	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	for _, m := range memStats {
		w.Family(m.name, m.help, m.typ)
		w.Sample(m.name, m.v(&ms))
	}
	threads, _ := runtime.ThreadCreateProfile(nil)
	w.Family("go_threads", "Number of OS threads created.", TypeGauge)
	w.Sample("go_threads", float64(threads))
}

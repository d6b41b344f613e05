//go:build !linux

package inspect

import "time"

// processCPU is not measured here: the benchmarks report 0 CPU time.
func processCPU() time.Duration { return 0 }

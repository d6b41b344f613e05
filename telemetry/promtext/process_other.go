//go:build !linux

package promtext

// writeProcess writes nothing where the process's metrics are not read
// (they come from /proc).
func writeProcess(*Writer) {}

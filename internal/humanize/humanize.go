// Package humanize renders quantities the way people read them.
package humanize

import "fmt"

// Bytes renders a byte count in SI units: 512 B, 2.3 MB. Summaries and
// markers the model reads, and golden files, depend on this exact form.
func Bytes(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "kMGTPE"[exp])
}

// Package humanize renders quantities the way people read them.
package humanize

import (
	"fmt"
	"strconv"
)

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

// Count renders n with thousands separators: 12,034. Limits in errors
// and counts in summaries read this way.
func Count(n int64) string {
	if n < 0 {
		return "-" + Count(-n)
	}
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// Package human renders figures for people to read: the guard's tables,
// reports and refusal messages all use it, so a figure reads the same
// everywhere.
package human

import "fmt"

// Bytes renders a byte count in binary units with two decimals
// ("512 B", "1.56 GiB", "-2.00 KiB").
func Bytes(n int64) string {
	const unit = 1024
	if n < unit && n > -unit {
		return fmt.Sprintf("%d B", n)
	}
	v := float64(n)
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB", "PiB"} {
		v /= unit
		if v < unit && v > -unit {
			return fmt.Sprintf("%.2f %s", v, u)
		}
	}
	return fmt.Sprintf("%.2f EiB", v/unit)
}

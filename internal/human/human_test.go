package human

import (
	"math"
	"testing"
)

func TestBytes(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{
		{0, "0 B"},
		{1023, "1023 B"},
		{-1023, "-1023 B"},
		{1024, "1.00 KiB"},
		{1536, "1.50 KiB"},
		{-2048, "-2.00 KiB"},
		{1 << 20, "1.00 MiB"},
		{1<<30 + 600<<20, "1.59 GiB"},
		{1 << 40, "1.00 TiB"},
		{1 << 50, "1.00 PiB"},
		{math.MaxInt64, "8.00 EiB"},
	} {
		if got := Bytes(c.n); got != c.want {
			t.Errorf("Bytes(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}

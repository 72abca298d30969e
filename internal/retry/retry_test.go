package retry

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestBackoffDelay(t *testing.T) {
	for _, tc := range []struct {
		b        Backoff
		failures int
		want     time.Duration
	}{
		{Backoff{time.Second, 30 * time.Second}, 1, time.Second},
		{Backoff{time.Second, 30 * time.Second}, 2, 2 * time.Second},
		{Backoff{time.Second, 30 * time.Second}, 5, 16 * time.Second},
		{Backoff{time.Second, 30 * time.Second}, 6, 30 * time.Second},
		{Backoff{time.Second, 30 * time.Second}, 1000, 30 * time.Second}, // no overflow
		{Backoff{time.Second, time.Hour}, 63, time.Hour},
		{Backoff{5 * time.Second, time.Second}, 1, time.Second}, // the cap holds from the first
		{Backoff{0, time.Second}, 3, 0},
	} {
		if got := tc.b.Delay(tc.failures); got != tc.want {
			t.Errorf("%+v.Delay(%d) = %s, want %s", tc.b, tc.failures, got, tc.want)
		}
	}
}

func TestStreak(t *testing.T) {
	var s Streak
	var logged []int
	for range 25 {
		if n, log := s.Fail(); log {
			logged = append(logged, n)
		}
	}
	if want := []int{1, 10, 20}; !slices.Equal(logged, want) {
		t.Errorf("logged failures %v, want %v", logged, want)
	}
	if n := s.Succeed(); n != 25 {
		t.Errorf("Succeed = %d, want 25", n)
	}
	if n, log := s.Fail(); n != 1 || !log {
		t.Errorf("after a success: Fail = %d, %v; want 1, true", n, log)
	}
}

func TestLoopRetriesThenRecovers(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	calls := 0
	call := func(context.Context) error {
		calls++
		switch {
		case calls <= 3:
			return errors.New("down")
		case calls == 5:
			cancel()
		}
		return nil
	}
	l := Loop{Interval: time.Millisecond, Backoff: Backoff{time.Millisecond, 2 * time.Millisecond}, Logger: logger, Failed: "thing failed", Recovered: "thing recovered"}
	if err := l.Run(ctx, call); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	if strings.Count(out, "thing failed") != 1 || !strings.Contains(out, "failures=1") {
		t.Errorf("want one failure line (the first):\n%s", out)
	}
	if strings.Count(out, "thing recovered") != 1 || !strings.Contains(out, `msg="thing recovered" failures=3`) {
		t.Errorf("want one recovery line after 3 failures:\n%s", out)
	}
}

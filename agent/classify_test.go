package agent

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// seg is a compact segment description for the tables: base offset, .log
// bytes, and age of the largest timestamp.
type seg struct {
	base  int64
	bytes int64
	age   time.Duration
}

func mkPartition(lso, hw, leo int64, segs ...seg) Partition {
	p := Partition{Topic: "t", Kind: KindLive, LogStartOffset: lso, HighWatermark: hw, LogEndOffset: leo}
	for _, s := range segs {
		p.Segments = append(p.Segments, Segment{BaseOffset: s.base, LogBytes: s.bytes, LargestTimestampMs: testNow.Add(-s.age).UnixMilli(), TimestampSource: TimestampFromTimeIndex})
	}
	return p
}

func cfg(retMs int64, retBytes int64, policy string) TopicConfig {
	c := DefaultTopicConfig()
	c.RetentionMs, c.RetentionBytes = retMs, retBytes
	switch policy {
	case "compact":
		c.CleanupPolicy = CleanupPolicy{Compact: true}
	case "compact,delete":
		c.CleanupPolicy = CleanupPolicy{Compact: true, Delete: true}
	case "":
		c.CleanupPolicy = CleanupPolicy{}
	}
	return c
}

const hour = int64(time.Hour / time.Millisecond)

// want renders a classification as "state/reason" per segment.
func render(p Partition) []string {
	out := make([]string, len(p.Segments))
	for i, s := range p.Segments {
		out[i] = s.State.String()
		if s.Reason != ReasonNone {
			out[i] += "/" + s.Reason.String()
		}
	}
	return out
}

func TestClassifyRules(t *testing.T) {
	const (
		O  = "open"
		C  = "closed"
		ET = "eligible/retention_time"
		ES = "eligible/retention_size"
		EL = "eligible/log_start_offset"
		EA = "eligible/all_expired_active"
	)
	h := time.Hour
	// Four closed segments of 100 bytes at offsets 0..300, active at 400
	// with 50 bytes, log end offset 450.
	four := func(a0, a1, a2, a3, aa time.Duration) []seg {
		return []seg{{0, 100, a0}, {100, 100, a1}, {200, 100, a2}, {300, 100, a3}, {400, 50, aa}}
	}
	tests := []struct {
		name string
		p    Partition
		cfg  TopicConfig
		want []string
	}{
		{"R1.2/states: lone active segment is open", mkPartition(-1, 10, 10, seg{0, 100, h}), cfg(24*hour, -1, "delete"), []string{O}},
		{"R1.2/states: unexpired older segments are closed", mkPartition(-1, 450, 450, four(5*h, 4*h, 3*h, 2*h, h)...), cfg(24*hour, -1, "delete"), []string{C, C, C, C, O}},
		{"R1.3/time: oldest expired run is eligible", mkPartition(-1, 450, 450, four(50*h, 40*h, 30*h, 2*h, h)...), cfg(24*hour, -1, "delete"), []string{ET, ET, ET, C, O}},
		{"R1.3/time: strictly older than retention.ms", mkPartition(-1, 450, 450, four(24*h, 24*h-time.Millisecond, 2*h, 2*h, h)...), cfg(24*hour, -1, "delete"), []string{C, C, C, C, O}},
		{"R1.3/time: one millisecond past retention.ms", mkPartition(-1, 450, 450, four(24*h+time.Millisecond, 2*h, 2*h, 2*h, h)...), cfg(24*hour, -1, "delete"), []string{ET, C, C, C, O}},
		{"R1.3/unbroken run: expired segment behind an unexpired one stays", mkPartition(-1, 450, 450, four(2*h, 50*h, 50*h, 2*h, h)...), cfg(24*hour, -1, "delete"), []string{C, C, C, C, O}},
		{"R1.3/unbroken run: future timestamp blocks time retention", mkPartition(-1, 450, 450, four(50*h, -h, 50*h, 2*h, h)...), cfg(24*hour, -1, "delete"), []string{ET, C, C, C, O}},
		{"R1.3/time: retention.ms -1 disables", mkPartition(-1, 450, 450, four(5000*h, 5000*h, 5000*h, 5000*h, 5000*h)...), cfg(-1, -1, "delete"), []string{C, C, C, C, O}},
		{"R1.3/all-expired active: rolled and deleted", mkPartition(-1, 450, 450, four(50*h, 40*h, 30*h, 30*h, 25*h)...), cfg(24*hour, -1, "delete"), []string{ET, ET, ET, ET, EA}},
		{"R1.3/all-expired active: lone expired active segment", mkPartition(-1, 10, 10, seg{0, 100, 48 * h}), cfg(24*hour, -1, "delete"), []string{EA}},
		{"R1.3/all-expired active: empty active segment is never deleted", mkPartition(-1, 400, 400, seg{0, 100, 50 * h}, seg{100, 100, 50 * h}, seg{400, 0, 50 * h}), cfg(24*hour, -1, "delete"), []string{ET, ET, O}},
		{"R1.3/high watermark: active not deletable below log end offset", mkPartition(-1, 449, 450, four(50*h, 40*h, 30*h, 30*h, 25*h)...), cfg(24*hour, -1, "delete"), []string{ET, ET, ET, ET, O}},
		{"R1.3/high watermark: segment must end at or below it", mkPartition(-1, 200, 450, four(50*h, 40*h, 30*h, 30*h, 25*h)...), cfg(24*hour, -1, "delete"), []string{ET, ET, C, C, O}},
		{"R1.3/high watermark: one below the next base offset blocks", mkPartition(-1, 199, 450, four(50*h, 40*h, 30*h, 30*h, 25*h)...), cfg(24*hour, -1, "delete"), []string{ET, C, C, C, O}},
		{"R1.7/high watermark: unknown high watermark allows nothing", mkPartition(-1, -1, 450, four(50*h, 40*h, 30*h, 30*h, 25*h)...), cfg(24*hour, -1, "delete"), []string{C, C, C, C, O}},
		{"R1.7/high watermark: unknown high watermark keeps even log start offset segments", mkPartition(300, -1, 450, four(h, h, h, h, h)...), cfg(-1, -1, "delete"), []string{C, C, C, C, O}},
		{"R1.3/high watermark: unknown log end offset keeps the active segment", mkPartition(-1, 450, -1, four(50*h, 40*h, 30*h, 30*h, 25*h)...), cfg(24*hour, -1, "delete"), []string{ET, ET, ET, ET, O}},
		{"R1.3/size: diff - segment size >= 0", mkPartition(-1, 450, 450, four(h, h, h, h, h)...), cfg(-1, 200, "delete"), []string{ES, ES, C, C, O}}, // 450-200=250: 150, 50, stop
		{"R1.3/size: exact fit deletes", mkPartition(-1, 450, 450, four(h, h, h, h, h)...), cfg(-1, 250, "delete"), []string{ES, ES, C, C, O}},        // 200: 100, 0
		{"R1.3/size: just under does not", mkPartition(-1, 450, 450, four(h, h, h, h, h)...), cfg(-1, 351, "delete"), []string{C, C, C, C, O}},        // 99
		{"R1.3/size: under retention.bytes", mkPartition(-1, 450, 450, four(h, h, h, h, h)...), cfg(-1, 1000, "delete"), []string{C, C, C, C, O}},
		{"R1.3/size: retention.bytes -1 disables", mkPartition(-1, 450, 450, four(h, h, h, h, h)...), cfg(-1, -1, "delete"), []string{C, C, C, C, O}},
		{"R1.3/size: retention.bytes 0 takes the active segment too", mkPartition(-1, 450, 450, four(h, h, h, h, h)...), cfg(-1, 0, "delete"), []string{ES, ES, ES, ES, ES}},
		{"R1.3/size: high watermark stops the run", mkPartition(-1, 100, 450, four(h, h, h, h, h)...), cfg(-1, 0, "delete"), []string{ES, C, C, C, O}},
		{"R1.3/log start offset: next base offset <= log start offset", mkPartition(200, 450, 450, four(h, h, h, h, h)...), cfg(-1, -1, "delete"), []string{EL, EL, C, C, O}},
		{"R1.3/log start offset: inside a segment keeps it", mkPartition(150, 450, 450, four(h, h, h, h, h)...), cfg(-1, -1, "delete"), []string{EL, C, C, C, O}},
		{"R1.3/log start offset: never the active segment", mkPartition(450, 450, 450, four(h, h, h, h, h)...), cfg(-1, -1, "delete"), []string{EL, EL, EL, EL, O}},
		{"R1.3/log start offset: unknown (not in the checkpoint)", mkPartition(-1, 450, 450, four(h, h, h, h, h)...), cfg(-1, -1, "delete"), []string{C, C, C, C, O}},
		{"R1.3/compact: never by time or size", mkPartition(-1, 450, 450, four(50*h, 40*h, 30*h, 30*h, 25*h)...), cfg(24*hour, 0, "compact"), []string{C, C, C, C, O}},
		{"R1.3/compact: log start offset still applies", mkPartition(200, 450, 450, four(50*h, 40*h, 30*h, 30*h, 25*h)...), cfg(24*hour, 0, "compact"), []string{EL, EL, C, C, O}},
		{"R1.3/compact,delete: time applies", mkPartition(-1, 450, 450, four(50*h, 40*h, 2*h, h, h)...), cfg(24*hour, -1, "compact,delete"), []string{ET, ET, C, C, O}},
		{"R1.3/compact,delete: size applies", mkPartition(-1, 450, 450, four(h, h, h, h, h)...), cfg(-1, 250, "compact,delete"), []string{ES, ES, C, C, O}},
		{"R1.3/order: log start offset, then size, then time", mkPartition(100, 450, 450, four(50*h, 50*h, 50*h, 2*h, h)...), cfg(24*hour, 250, "delete"), []string{EL, ES, ET, C, O}},
		{"R1.3/order: size counts only what the log start offset pass left", mkPartition(100, 450, 450, four(h, h, h, h, h)...), cfg(-1, 350, "delete"), []string{EL, C, C, C, O}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.p
			before := slices.Clone(in.Segments)
			got := Classify(in, tc.cfg, testNow)
			if r := render(got); !slices.Equal(r, tc.want) {
				t.Errorf("got  %v\nwant %v", r, tc.want)
			}
			if !slices.Equal(in.Segments, before) {
				t.Errorf("Classify modified its input")
			}
			for i, s := range got.Segments {
				if s.State == StateEligible && s.ExpiredBytes != s.LogBytes {
					t.Errorf("R1.6: eligible segment %d expired bytes %d, want %d", i, s.ExpiredBytes, s.LogBytes)
				}
				if s.State == StateClosed && s.ExpiredBytes != 0 {
					t.Errorf("segment %d closed with expired bytes %d", i, s.ExpiredBytes)
				}
			}
		})
	}
}

func TestClassifyNonLiveDirs(t *testing.T) {
	for _, kind := range []PartitionKind{KindStray, KindMetadata} {
		t.Run("R1.4/"+string(kind), func(t *testing.T) {
			p := mkPartition(400, 450, 450, seg{0, 100, 500 * time.Hour}, seg{400, 50, 500 * time.Hour})
			p.Kind = kind
			got := render(Classify(p, cfg(hour, 0, "delete"), testNow))
			if !slices.Equal(got, []string{"closed", "open"}) {
				t.Errorf("got %v", got)
			}
		})
	}
}

func TestClassifyOpenSegmentExpiredBytes(t *testing.T) {
	h := time.Hour
	pts := []ExpiryPoint{
		{TimestampMs: testNow.Add(-3 * h).UnixMilli(), Position: 1000},
		{TimestampMs: testNow.Add(-2 * h).UnixMilli(), Position: 2000},
		{TimestampMs: testNow.Add(-30 * time.Minute).UnixMilli(), Position: 3000},
	}
	tests := []struct {
		name string
		p    func() Partition
		cfg  TopicConfig
		want int64
	}{
		{"R1.6/open_segment: up to the last expired index point", func() Partition {
			p := mkPartition(-1, 10, 10, seg{0, 4000, 10 * time.Minute})
			p.OpenExpiry = pts
			return p
		}, cfg(hour, -1, "delete"), 2000},
		{"R1.6/open_segment: nothing expired", func() Partition {
			p := mkPartition(-1, 10, 10, seg{0, 4000, 10 * time.Minute})
			p.OpenExpiry = pts
			return p
		}, cfg(4*hour, -1, "delete"), 0},
		{"R1.6/open_segment: whole segment expired but held by the high watermark", func() Partition {
			p := mkPartition(-1, 5, 10, seg{0, 4000, 10 * h})
			p.OpenExpiry = pts
			return p
		}, cfg(hour, -1, "delete"), 4000},
		{"R1.6/open_segment: compact topics expire nothing", func() Partition {
			p := mkPartition(-1, 10, 10, seg{0, 4000, 10 * time.Minute})
			p.OpenExpiry = pts
			return p
		}, cfg(hour, -1, "compact"), 0},
		{"R1.6/open_segment: retention.ms -1", func() Partition {
			p := mkPartition(-1, 10, 10, seg{0, 4000, 10 * time.Minute})
			p.OpenExpiry = pts
			return p
		}, cfg(-1, -1, "delete"), 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Classify(tc.p(), tc.cfg, testNow)
			s := got.Segments[len(got.Segments)-1]
			if s.State != StateOpen || s.ExpiredBytes != tc.want {
				t.Errorf("state %s expired %d, want open %d", s.State, s.ExpiredBytes, tc.want)
			}
		})
	}
}

func TestClassifyCopyOnWrite(t *testing.T) {
	p := mkPartition(-1, 450, 450, seg{0, 100, 50 * time.Hour}, seg{100, 100, time.Hour}, seg{200, 10, time.Minute})
	c := cfg(24*hour, -1, "delete")
	a := Classify(p, c, testNow)
	if &a.Segments[0] == &p.Segments[0] {
		t.Fatal("first classification must copy")
	}
	b := Classify(a, c, testNow)
	if &b.Segments[0] != &a.Segments[0] {
		t.Error("unchanged classification must share the segment slice")
	}
	later := Classify(a, c, testNow.Add(24*time.Hour))
	if &later.Segments[0] == &a.Segments[0] || later.Segments[1].State != StateEligible {
		t.Errorf("later classification: %v", render(later))
	}
	if a.Segments[1].State != StateClosed {
		t.Error("a published classification changed")
	}
}

func ExampleClassify() {
	now := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	p := Partition{Topic: "orders", Kind: KindLive, LogStartOffset: -1, HighWatermark: 300, LogEndOffset: 300,
		Segments: []Segment{
			{BaseOffset: 0, LogBytes: 1000, LargestTimestampMs: now.Add(-48 * time.Hour).UnixMilli()},
			{BaseOffset: 100, LogBytes: 1000, LargestTimestampMs: now.Add(-2 * time.Hour).UnixMilli()},
			{BaseOffset: 200, LogBytes: 500, LargestTimestampMs: now.Add(-time.Minute).UnixMilli()},
		}}
	cfg := DefaultTopicConfig()
	cfg.RetentionMs = 24 * time.Hour.Milliseconds()
	for _, s := range Classify(p, cfg, now).Segments {
		fmt.Printf("%d %s %q\n", s.BaseOffset, s.State, s.Reason)
	}
	// Output:
	// 0 eligible "retention_time"
	// 100 closed ""
	// 200 open ""
}

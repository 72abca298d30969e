package agent

import (
	"testing"
)

// BenchmarkPublishOneChange measures one publish of a log dir of 10,000
// partitions after one partition changed (its write rate): the bytes it
// allocates (B/op) are what a broker appending to a few partitions costs
// the agent every second, and what a collection overlapping a publish
// finds live twice.
//
//	go test -run '^$' -bench PublishOneChange -benchmem ./agent/
func BenchmarkPublishOneChange(b *testing.B) {
	l, _ := staggeredLoop(b, 1000, 10)
	d := l.dirs[0]
	l.publish()
	var ps *partState
	for _, ps = range d.parts {
		break
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		p := *ps.part
		p.WriteRateBytesPerSecond++
		l.store(d, ps, p)
		l.publish()
	}
	b.ReportMetric(float64(len(d.parts)), "partitions")
}

// TestPublishSharesUnchangedPartitions: after one partition changed, a
// publish makes a new Partitions slice whose other entries are the
// previous snapshot's own Partition values (shared, not copied), while
// the previous snapshot still shows the changed partition as it was.
func TestPublishSharesUnchangedPartitions(t *testing.T) {
	l, _ := staggeredLoop(t, 20, 2)
	d := l.dirs[0]
	l.publish()
	before := l.a.Snapshot()
	old := before.LogDirs[0].Partitions
	if len(old) != 40 {
		t.Fatalf("%d partitions, want 40", len(old))
	}
	ps := d.order[7]
	if ps.part != old[7] {
		t.Fatal("the loop's partition is not the published one")
	}
	rate := old[7].WriteRateBytesPerSecond
	p := *ps.part
	p.WriteRateBytesPerSecond = rate + 1
	l.store(d, ps, p)
	l.publish()
	now := l.a.Snapshot().LogDirs[0].Partitions
	if sameSlice(now, old) {
		t.Fatal("a changed log dir kept its Partitions slice")
	}
	for i := range now {
		if shared := now[i] == old[i]; shared != (i != 7) {
			t.Errorf("partition %d (%s): shared %v", i, now[i].Dir, shared)
		}
	}
	if now[7].WriteRateBytesPerSecond != rate+1 || old[7].WriteRateBytesPerSecond != rate {
		t.Errorf("write rate: new snapshot %v, old %v; want %v, %v", now[7].WriteRateBytesPerSecond, old[7].WriteRateBytesPerSecond, rate+1, rate)
	}
	l.publish()
	if again := l.a.Snapshot().LogDirs[0].Partitions; !sameSlice(again, now) {
		t.Error("a publish with nothing changed copied the Partitions slice")
	}
}

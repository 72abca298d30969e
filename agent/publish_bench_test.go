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

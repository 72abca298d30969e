package forecast

import (
	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

// MinHistorySpan is the shortest stretch of record timestamps a history
// rate is taken over.
const MinHistorySpan = 60 // seconds

// HistoryRates estimates each topic's ingress per log dir from the data it
// retains, for a one-shot scan that has seen no appends: per live
// partition, the log bytes of its segments after the first, over the time
// between the first segment's largest timestamp and the last one's
// (record timestamps: CreateTime unless the topic uses LogAppendTime).
// A partition whose segments span under MinHistorySpan seconds, or with
// fewer than two timestamped segments, gives no rate; a topic none of
// whose partitions gives one is left out (Project then keeps it at its
// current size).
func HistoryRates(snap *agent.Snapshot) map[Key]float64 {
	out := map[Key]float64{}
	for i := range snap.LogDirs {
		ld := &snap.LogDirs[i]
		for p := range livePartitions(ld) {
			first, last := -1, -1
			for k, s := range p.Segments {
				if s.LargestTimestampMs == 0 {
					continue
				}
				if first < 0 {
					first = k
				}
				last = k
			}
			if first < 0 || last <= first {
				continue
			}
			span := p.Segments[last].LargestTimestamp().Sub(p.Segments[first].LargestTimestamp()).Seconds()
			if span < MinHistorySpan {
				continue
			}
			var bytes int64
			for _, s := range p.Segments[first+1 : last+1] {
				bytes += s.LogBytes
			}
			out[Key{ld.Path, p.Topic}] += float64(bytes) / span
		}
	}
	return out
}

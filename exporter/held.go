package exporter

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

// collectHeld emits, per log dir and held reason (zero included), the
// disk bytes of the partitions whose retention Kafka does not run (spec
// R1.2, agent.Partition.Held): the scan's held partitions, summed.
func (c *collector) collectHeld(ch chan<- prometheus.Metric, snap *agent.Snapshot) {
	reasons := agent.HeldReasons()
	for i := range snap.LogDirs {
		ld := &snap.LogDirs[i]
		bytes := make(map[agent.Reason]int64, len(reasons))
		for j := range ld.Partitions {
			if p := ld.Partitions[j]; p.Held != agent.ReasonNone {
				bytes[p.Held] += p.DiskBytes
			}
		}
		for _, r := range reasons {
			gauge(ch, c.d.retentionHeld, float64(bytes[r]), ld.Path, r.String())
		}
	}
}

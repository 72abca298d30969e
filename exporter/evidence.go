package exporter

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

type kindBytes struct {
	kind  string
	bytes int64
}

// nonKafkaKinds are the kinds of kafka_disk_guard_log_dir_non_kafka_bytes,
// each emitted even at 0. They sum to the filesystem's NonKafkaBytes.
func nonKafkaKinds(f agent.FilesystemBytes) []kindBytes {
	return []kindBytes{
		{"outside_log_dirs", f.Outside()},
		{"other", f.Other},
		{"pending_delete", f.PendingDelete},
		{"future", f.Future},
		{"stray", f.Stray},
		{"metadata", f.Metadata},
	}
}

// collectEvidence emits what the enforcer's evidence gates read (spec
// R7): the bytes of each filesystem that live partitions do not explain,
// and the provenance of each log dir's topic configs.
func (c *collector) collectEvidence(ch chan<- prometheus.Metric, v *view, now time.Time) {
	for _, f := range v.filesystems {
		for _, k := range nonKafkaKinds(f) {
			gauge(ch, c.d.nonKafka, float64(k.bytes), f.LogDirs[0], k.kind)
		}
	}
	for _, st := range v.configs {
		if !st.OldestFetch.IsZero() {
			gauge(ch, c.d.configMaxAge, max(0, now.Sub(st.OldestFetch).Seconds()), st.LogDir)
		}
		for _, r := range agent.ConfigMissingReasons() {
			gauge(ch, c.d.configsWithout, float64(st.Without[r]), st.LogDir, r)
		}
	}
}

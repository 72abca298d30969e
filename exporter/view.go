package exporter

import (
	"strconv"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/reserve"
)

// noPartition stands for "all partitions" when per-partition series are off.
const noPartition = agent.AllPartitions

// dirTopics are the topics (or partitions) of one log dir with their
// figures as the agent defines them (agent.Summary).
type dirTopics struct {
	logDir string
	topics []agent.TopicSummary
}

type reservedKey struct {
	topic     string
	partition int32
	basis     reserve.Basis
}

type brokerAgg struct {
	reserved float64
	storage  float64
}

// view is what a scrape emits, aggregated from one snapshot.
type view struct {
	logDirs  []agent.LogDir // shallow copies: only the scalar fields are read
	topics   []dirTopics
	reserved map[reservedKey]float64
	brokers  map[string]*brokerAgg
	// Filesystems and config provenance, as the snapshot derives them.
	filesystems []agent.FilesystemBytes
	configs     []agent.LogDirConfigs
}

// buildView aggregates a snapshot by log dir and topic (and partition when
// cfg.PerPartition) with the snapshot's own summaries, and adds up
// reserved space per topic and broker.
func buildView(snap *agent.Snapshot, cfg Config) *view {
	v := &view{
		logDirs:  snap.LogDirs,
		reserved: make(map[reservedKey]float64),
		brokers:  make(map[string]*brokerAgg),

		filesystems: snap.Filesystems(),
		configs:     snap.ConfigStatus(),
	}
	for i := range snap.LogDirs {
		ld := &snap.LogDirs[i]
		sums := ld.TopicSummaries
		if cfg.PerPartition {
			sums = ld.PartitionSummaries
		}
		v.topics = append(v.topics, dirTopics{logDir: ld.Path, topics: sums()})
		b := v.broker(ld.BrokerID)
		b.storage += float64(ld.Usage.CapacityBytes)
		for j := range ld.Partitions {
			p := &ld.Partitions[j]
			if p.Kind != agent.KindLive {
				continue
			}
			part := noPartition
			if cfg.PerPartition {
				part = p.Partition
			}
			r, basis := reserve.Replica(snap, p, cfg.CompactFlatBytes)
			v.reserved[reservedKey{p.Topic, part, basis}] += float64(r)
			b.reserved += float64(r)
		}
	}
	return v
}

func (v *view) broker(id int32) *brokerAgg {
	key := "unknown"
	if id >= 0 {
		key = strconv.FormatInt(int64(id), 10)
	}
	b, ok := v.brokers[key]
	if !ok {
		b = &brokerAgg{}
		v.brokers[key] = b
	}
	return b
}

package agent

import (
	"fmt"
	"maps"
	"time"

	"github.com/shirou/gopsutil/v4/disk"
)

// ConfigSet is the topic configs classification uses: per-topic values and
// the broker defaults for topics without an entry.
type ConfigSet struct {
	Topics   map[string]TopicConfig
	Defaults TopicConfig
	// Time is when the configs were loaded, or last fetched with at least
	// one lookup succeeding. Readers notice new configs by it.
	Time time.Time
	// Remote holds the remote tier's offsets of tiered partitions, as
	// their leaders reported them (see TieredRefresher); RemoteTime is
	// when they were fetched. A tiered partition without an entry has an
	// unknown upload boundary: nothing in it is eligible (spec R1.7).
	Remote     map[TopicPartition]RemoteOffsets
	RemoteTime time.Time
	// OfflineLogDirs holds the guard's log dirs that the broker reports
	// offline (DescribeLogDirs: KAFKA_STORAGE_ERROR), by path, with the
	// broker's error: Kafka's retention does not run there (see Holds).
	OfflineLogDirs map[string]string
	// Fetched is when each topic's entry in Topics was read from the
	// cluster. An entry without a Fetched time came from an offline file.
	// Provenance of one topic: Info.
	Fetched map[string]time.Time
	// Errors holds the topics whose last lookup failed, with why (ErrTopicUnknown
	// for a topic the cluster does not have). Their entry in Topics, if
	// any, is from an earlier lookup, with that lookup's Fetched time.
	Errors map[string]error
	// DefaultsFetched is when Defaults were read from the cluster (the
	// broker's log.* configs); zero for built-in or file defaults.
	// DefaultsErr is the last failure to read them.
	DefaultsFetched time.Time
	DefaultsErr     error
}

// For returns the config of topic. A topic without an entry gets the
// defaults, except Kafka's internal __consumer_offsets and
// __transaction_state, which Kafka always creates compacted.
func (c ConfigSet) For(topic string) TopicConfig {
	if tc, ok := c.Topics[topic]; ok {
		return tc
	}
	if topic == "__consumer_offsets" || topic == "__transaction_state" {
		d := c.Defaults
		d.CleanupPolicy = CleanupPolicy{Compact: true}
		return d
	}
	return c.Defaults
}

// Classify classifies p with its topic's config and, for a live tiered
// partition, its remote offsets (Partition.Remote is set from c.Remote).
func (c ConfigSet) Classify(p Partition, now time.Time) Partition {
	return c.classify(p, now, false)
}

// classify is Classify; owned as for classifyPartition.
func (c ConfigSet) classify(p Partition, now time.Time, owned bool) Partition {
	cfg := c.For(p.Topic)
	p.Remote = nil
	if p.Kind == KindLive && cfg.Tiered(p.Topic) {
		if r, ok := c.Remote[TopicPartition{p.Topic, p.Partition}]; ok {
			p.Remote = &r
		}
	}
	return classifyPartition(p, cfg, now, owned)
}

// PartitionsOf returns a pointer to each of ps, in order: a LogDir's
// Partitions over ps (which it then shares).
func PartitionsOf(ps ...Partition) []*Partition {
	out := make([]*Partition, len(ps))
	for i := range ps {
		out[i] = &ps[i]
	}
	return out
}

// BuildSnapshot classifies every partition of dirs with configs at now and
// returns an immutable Snapshot. dirs are not modified: the snapshot gets
// its own LogDir and Partition slices and partitions, and shares segment slices whose
// classification did not change (see Classify). health is copied.
func BuildSnapshot(now time.Time, dirs []LogDir, configs ConfigSet, health Health) Snapshot {
	snap := Snapshot{
		Time:          now,
		LogDirs:       make([]LogDir, len(dirs)),
		Configs:       maps.Clone(configs.Topics),
		Defaults:      configs.Defaults,
		ConfigsTime:   configs.Time,
		ConfigFetched: maps.Clone(configs.Fetched),
		ConfigErrors:  maps.Clone(configs.Errors),
		Health:        health,
	}
	if snap.Configs == nil {
		snap.Configs = map[string]TopicConfig{}
	}
	snap.Health.ScanErrors = maps.Clone(health.ScanErrors)
	snap.Health.Rescans = maps.Clone(health.Rescans)
	for i, d := range dirs {
		nd := d
		parts := make([]Partition, len(d.Partitions))
		for j, p := range d.Partitions {
			parts[j] = configs.Classify(*p, now)
		}
		nd.Partitions = PartitionsOf(parts...)
		snap.LogDirs[i] = nd
	}
	configs.Holds(snap.LogDirs, now)
	return snap
}

// DiskUsage computes a log dir's usage (spec R2.1). With capacity > 0 (a
// configured PVC size or quota), used is the bytes under the log dir
// (dirBytes, from a scan). Otherwise it is the filesystem's, from statfs,
// as df reports it: capacity is used + available, so blocks reserved for
// root (which a broker running as an ordinary user cannot write) are left
// out and the ratio equals df's Use%.
func DiskUsage(path string, capacity uint64, dirBytes int64) (Usage, error) {
	if capacity > 0 {
		used := uint64(max(dirBytes, 0))
		u := Usage{CapacityBytes: capacity, UsedBytes: used, Basis: CapacityConfigured}
		if used < capacity {
			u.AvailableBytes = capacity - used
		}
		return u, nil
	}
	st, err := disk.Usage(path)
	if err != nil {
		return Usage{Basis: CapacityFilesystem}, fmt.Errorf("statfs %s: %w", path, err)
	}
	return Usage{CapacityBytes: st.Used + st.Free, UsedBytes: st.Used, AvailableBytes: st.Free, Basis: CapacityFilesystem}, nil
}

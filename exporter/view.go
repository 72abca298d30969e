package exporter

import (
	"strconv"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/reserve"
)

// Indexes of the state and reason dimensions. Every topic gets a series for
// each value, zero included, so alerts and dashboards never see a series
// appear out of nothing.
const (
	stateOpen = iota
	stateClosed
	stateEligible
	numStates
)

const (
	reasonOpen = iota
	reasonAwaiting
	reasonPending
	numReasons
)

func stateLabels() [numStates]agent.State {
	return [numStates]agent.State{agent.StateOpen, agent.StateClosed, agent.StateEligible}
}

func reasonLabels() [numReasons]agent.Reason {
	return [numReasons]agent.Reason{agent.RetainedOpenSegment, agent.RetainedAwaitingDelete, agent.RetainedPendingDeletion}
}

// noPartition stands for "all partitions" when per-partition series are off.
const noPartition int32 = -1

type topicKey struct {
	logDir    string
	topic     string
	partition int32
}

type topicAgg struct {
	segments       [numStates]float64
	bytes          [numStates]float64
	expired        [numReasons]float64
	oldestEligible time.Time // zero when no segment is eligible
	appended       uint64
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
	topics   map[topicKey]*topicAgg
	reserved map[reservedKey]float64
	brokers  map[string]*brokerAgg
	// Filesystems and config provenance, as the snapshot derives them.
	filesystems []agent.FilesystemBytes
	configs     []agent.LogDirConfigs
}

func stateIndex(s agent.State) int {
	switch s {
	case agent.StateOpen:
		return stateOpen
	case agent.StateClosed:
		return stateClosed
	case agent.StateEligible:
		return stateEligible
	}
	return -1
}

// buildView aggregates a snapshot by log dir and topic (and partition when
// cfg.PerPartition): one pass over the segments.
func buildView(snap *agent.Snapshot, cfg Config) *view {
	v := &view{
		logDirs:  snap.LogDirs,
		topics:   make(map[topicKey]*topicAgg),
		reserved: make(map[reservedKey]float64),
		brokers:  make(map[string]*brokerAgg),

		filesystems: snap.Filesystems(),
		configs:     snap.ConfigStatus(),
	}
	for i := range snap.LogDirs {
		ld := &snap.LogDirs[i]
		b := v.broker(ld.BrokerID)
		b.storage += float64(ld.Usage.CapacityBytes)
		for j := range ld.Partitions {
			p := &ld.Partitions[j]
			part := noPartition
			if cfg.PerPartition {
				part = p.Partition
			}
			switch p.Kind {
			case agent.KindLive:
			case agent.KindDeleted:
				// A deleted topic's directory is all pending deletion (R1.4).
				v.topic(topicKey{ld.Path, p.Topic, part}).expired[reasonPending] += float64(p.DiskBytes)
				continue
			case agent.KindFuture, agent.KindStray:
				if p.PendingDeleteBytes > 0 {
					v.topic(topicKey{ld.Path, p.Topic, part}).expired[reasonPending] += float64(p.PendingDeleteBytes)
				}
				continue
			default: // the metadata log is not a topic
				continue
			}
			agg := v.topic(topicKey{ld.Path, p.Topic, part})
			agg.expired[reasonPending] += float64(p.PendingDeleteBytes)
			agg.appended += p.AppendedBytes
			for k := range p.Segments {
				s := &p.Segments[k]
				si := stateIndex(s.State)
				if si < 0 {
					continue
				}
				agg.segments[si]++
				agg.bytes[si] += float64(s.DiskBytes)
				switch s.State {
				case agent.StateOpen:
					agg.expired[reasonOpen] += float64(s.ExpiredBytes)
				case agent.StateEligible:
					agg.expired[reasonAwaiting] += float64(s.ExpiredBytes)
					if agg.oldestEligible.IsZero() || s.LargestTimestamp.Before(agg.oldestEligible) {
						agg.oldestEligible = s.LargestTimestamp
					}
				}
			}
			tc, ok := snap.Configs[p.Topic]
			if !ok {
				tc = snap.Defaults
			}
			r, basis := reserve.Partition(reserve.PartitionInput{
				Config:                  tc,
				WriteRateBytesPerSecond: p.WriteRateBytesPerSecond,
				CompactFlatBytes:        cfg.CompactFlatBytes,
			})
			v.reserved[reservedKey{p.Topic, part, basis}] += float64(r)
			b.reserved += float64(r)
		}
	}
	return v
}

func (v *view) topic(k topicKey) *topicAgg {
	a, ok := v.topics[k]
	if !ok {
		a = &topicAgg{}
		v.topics[k] = a
	}
	return a
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

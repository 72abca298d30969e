// Package reserve computes the disk space Kafka topics reserve (spec R5) and
// answers whether a new topic or partitions still fit.
package reserve

import (
	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

// Basis says how a partition's reserved size was found (spec R5.1, R5.2).
type Basis string

// Bases.
const (
	BasisRetentionBytes    Basis = "retention_bytes"     // the retention.bytes formula
	BasisCompactFlat       Basis = "compact_flat"        // cleanup.policy=compact: a flat size
	BasisWriteRateEstimate Basis = "write_rate_estimate" // retention.bytes=-1: write rate x retention.ms
	BasisUnbounded         Basis = "unbounded"           // retention.bytes=-1 and no rate or no retention.ms
)

// DefaultCompactFlatBytes is the flat reservation for a compact-only
// partition (1 GiB, spec R5.1).
const DefaultCompactFlatBytes = 1 << 30

// PartitionInput is what one partition replica's reservation depends on.
type PartitionInput struct {
	// Topic names the topic (internal topics are never tiered); Config is
	// its config.
	Topic  string
	Config agent.TopicConfig
	// WriteRateBytesPerSecond is the observed write rate, used only when
	// retention.bytes is -1 (spec R5.2). Zero when unknown.
	WriteRateBytesPerSecond float64
	// CompactFlatBytes overrides DefaultCompactFlatBytes when > 0.
	CompactFlatBytes int64
}

// Partition returns the bytes one partition replica reserves and the basis:
//
//	reserved = retention.bytes + segment.bytes + 2 * segment.index.bytes * n
//	n        = floor(retention.bytes / segment.bytes) + 1
//
// For compact-only topics the flat size; for retention.bytes = -1 the
// retention bytes are estimated as write rate x retention.ms. A tiered
// topic (remote.storage.enable, copying on) reserves its local footprint:
// local.retention.bytes and local.retention.ms stand for retention.bytes
// and retention.ms (-2: the latter), since older segments live in remote
// storage (spec R1.7), plus tieredAllowance: local retention alone does
// not cap a tiered topic's local disk use.
func Partition(in PartitionInput) (int64, Basis) {
	r, basis := partition(in)
	if c := in.Config; c.Tiered(in.Topic) && !c.RemoteCopyDisable && !(c.CleanupPolicy.Compact && !c.CleanupPolicy.Delete) {
		r += tieredAllowance(in)
	}
	return r, basis
}

// tieredAllowance is what a tiered partition holds locally beyond its
// local retention: Kafka deletes a local segment only once it is uploaded
// and only at its retention checks.
//
//	allowance = segment.bytes + 2 * segment.index.bytes + write rate x log.retention.check.interval.ms
//
// The upload allowance is one rolled segment (with its indexes) waiting
// for its upload: RemoteLogManager copies rolled segments in order, up to
// the last stable offset, so the newest rolled one is local only until
// its copy ends. The growth between retention checks is what the
// partition writes in one check interval (5 minutes by default; the
// broker's log.retention.check.interval.ms when read), counted only with
// an observed or given write rate. Uploads that stall (a hanging
// transaction holding the last stable offset, the copy quota, a remote
// storage outage, remote.copy.lag.*) grow local use without bound: no
// reservation covers that, write protection does (spec R4).
func tieredAllowance(in PartitionInput) int64 {
	c := in.Config
	seg := c.SegmentBytes
	if seg <= 0 {
		seg = agent.DefaultTopicConfig().SegmentBytes
	}
	check := c.RetentionCheckIntervalMs
	if check <= 0 {
		check = 300_000
	}
	return seg + 2*c.SegmentIndexBytes + int64(in.WriteRateBytesPerSecond*float64(check)/1000)
}

func partition(in PartitionInput) (int64, Basis) {
	c := in.Config
	if c.CleanupPolicy.Compact && !c.CleanupPolicy.Delete {
		if in.CompactFlatBytes > 0 {
			return in.CompactFlatBytes, BasisCompactFlat
		}
		return DefaultCompactFlatBytes, BasisCompactFlat
	}
	retentionMs, retention := c.LocalRetention(in.Topic)
	basis := BasisRetentionBytes
	if retention < 0 {
		if retentionMs < 0 || in.WriteRateBytesPerSecond <= 0 {
			return formula(0, c), BasisUnbounded
		}
		retention = int64(in.WriteRateBytesPerSecond * float64(retentionMs) / 1000)
		basis = BasisWriteRateEstimate
	}
	return formula(retention, c), basis
}

func formula(retention int64, c agent.TopicConfig) int64 {
	seg := c.SegmentBytes
	if seg <= 0 {
		seg = agent.DefaultTopicConfig().SegmentBytes
	}
	n := retention/seg + 1
	return retention + seg + 2*c.SegmentIndexBytes*n
}

// Replica returns what a partition replica in a snapshot reserves:
// Partition with the topic's config from the snapshot and the replica's
// observed write rate. The exporter and the demo's table both use it.
func Replica(snap *agent.Snapshot, p *agent.Partition, compactFlatBytes int64) (int64, Basis) {
	return Partition(PartitionInput{
		Topic:                   p.Topic,
		Config:                  snap.TopicConfig(p.Topic),
		WriteRateBytesPerSecond: p.WriteRateBytesPerSecond,
		CompactFlatBytes:        compactFlatBytes,
	})
}

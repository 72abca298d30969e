package reserve

import (
	"math"
	"testing"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

const (
	mib = int64(1) << 20
	gib = int64(1) << 30
)

func deleteConfig(retentionBytes, segmentBytes int64) agent.TopicConfig {
	c := agent.DefaultTopicConfig()
	c.RetentionBytes = retentionBytes
	c.SegmentBytes = segmentBytes
	return c
}

// TestPartitionSeedExamples reproduces seed 001's worked examples (R5.1).
// The seed states the log part ("about 1.5 GB") and says index bytes come on
// top: 2 x segment.index.bytes x n, n = floor(retention/segment) + 1.
func TestPartitionSeedExamples(t *testing.T) {
	tests := []struct {
		name           string
		retention, seg int64
		wantN          int64
		wantAboutGiB   float64 // the seed's figure, before index bytes
		want           int64   // exact bytes
	}{
		{"R5.1 example 1: 1 GB / 512 MB about 1.5 GB", 1 * gib, 512 * mib, 3, 1.5, 1*gib + 512*mib + 2*10*mib*3},
		{"R5.1 example 2: 50 GB / 512 MB about 50.5 GB", 50 * gib, 512 * mib, 101, 50.5, 50*gib + 512*mib + 2*10*mib*101},
		{"R5.1 example 3: 1 GB / 128 MB about 1.1 GB", 1 * gib, 128 * mib, 9, 1.1, 1*gib + 128*mib + 2*10*mib*9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, basis := Partition(PartitionInput{Config: deleteConfig(tt.retention, tt.seg)})
			if basis != BasisRetentionBytes {
				t.Errorf("basis = %q, want %q", basis, BasisRetentionBytes)
			}
			if got != tt.want {
				t.Errorf("reserved = %d, want %d", got, tt.want)
			}
			index := 2 * agent.DefaultTopicConfig().SegmentIndexBytes * tt.wantN
			logPart := float64(got-index) / float64(gib)
			// "about": the seed rounds to one decimal.
			if math.Abs(logPart-tt.wantAboutGiB) > 0.05 {
				t.Errorf("reserved without index bytes = %.3f GiB, seed says about %.1f GB", logPart, tt.wantAboutGiB)
			}
		})
	}
}

func TestPartitionBases(t *testing.T) {
	compact := agent.DefaultTopicConfig()
	compact.CleanupPolicy = agent.CleanupPolicy{Compact: true}
	compact.RetentionBytes = 100 * gib // ignored for compact (R5.1)
	compactDelete := deleteConfig(1*gib, 512*mib)
	compactDelete.CleanupPolicy = agent.CleanupPolicy{Compact: true, Delete: true}
	hourRetention := deleteConfig(-1, 1*gib)
	hourRetention.RetentionMs = 3600 * 1000
	noTimeLimit := deleteConfig(-1, 1*gib)
	noTimeLimit.RetentionMs = -1
	// Tiered (R1.7): 50 GiB in all, 2 GiB locally.
	tiered := deleteConfig(50*gib, 512*mib)
	tiered.RemoteStorage, tiered.LocalRetentionBytes = true, 2*gib
	tieredInherit := tiered
	tieredInherit.LocalRetentionBytes = -2
	tieredCopyOff := tiered
	tieredCopyOff.RemoteCopyDisable = true
	tieredByTime := deleteConfig(-1, 1*gib)
	tieredByTime.RemoteStorage, tieredByTime.RetentionMs, tieredByTime.LocalRetentionMs, tieredByTime.LocalRetentionBytes = true, -1, 3600*1000, -2

	tests := []struct {
		name      string
		in        PartitionInput
		want      int64
		wantBasis Basis
	}{
		{"R5.1 compact is a flat 1 GiB, retention ignored", PartitionInput{Config: compact}, 1 * gib, BasisCompactFlat},
		{"R5.1 compact flat size configurable", PartitionInput{Config: compact, CompactFlatBytes: 2 * gib}, 2 * gib, BasisCompactFlat},
		{"R5.1 compact,delete uses the formula", PartitionInput{Config: compactDelete}, 1*gib + 512*mib + 2*10*mib*3, BasisRetentionBytes},
		{
			"R5.2 retention.bytes=-1: write rate x retention.ms",
			PartitionInput{Config: hourRetention, WriteRateBytesPerSecond: float64(mib)},
			// 1 MiB/s x 3600 s = 3600 MiB; n = floor(3600/1024)+1 = 4
			3600*mib + 1*gib + 2*10*mib*4, BasisWriteRateEstimate,
		},
		{
			"R1.7 tiered: growth between the broker's retention checks",
			PartitionInput{Topic: "t", Config: func() agent.TopicConfig { c := tiered; c.RetentionCheckIntervalMs = 60_000; return c }(),
				WriteRateBytesPerSecond: float64(mib)},
			2*gib + 512*mib + 2*10*mib*5 + 512*mib + 2*10*mib + 60*mib, BasisRetentionBytes,
		},
		{
			"R5.2 retention.bytes=-1 and no observed rate: unbounded, one segment reserved",
			PartitionInput{Config: hourRetention},
			1*gib + 2*10*mib, BasisUnbounded,
		},
		{
			"R5.2 retention.bytes=-1 and retention.ms=-1: unbounded",
			PartitionInput{Config: noTimeLimit, WriteRateBytesPerSecond: float64(mib)},
			1*gib + 2*10*mib, BasisUnbounded,
		},
		{
			// The seed's introduction also says 100 MB / 512 MB needs "about
			// 1 GB"; its own formula gives 612 MiB + 20 MiB of index. The
			// formula, which the spec adopts (R5.1), wins.
			"R5.1 retention smaller than a segment",
			PartitionInput{Config: deleteConfig(100*mib, 512*mib)},
			100*mib + 512*mib + 2*10*mib*1, BasisRetentionBytes,
		},
		{"R5.1 retention.bytes=0", PartitionInput{Config: deleteConfig(0, 512*mib)}, 512*mib + 2*10*mib, BasisRetentionBytes},
		{"R1.7 tiered: the local footprint (local.retention.bytes)", PartitionInput{Topic: "t", Config: tiered},
			2*gib + 512*mib + 2*10*mib*5 + 512*mib + 2*10*mib, BasisRetentionBytes},
		{"R1.7 tiered, local.retention.bytes=-2: retention.bytes", PartitionInput{Topic: "t", Config: tieredInherit},
			50*gib + 512*mib + 2*10*mib*101 + 512*mib + 2*10*mib, BasisRetentionBytes},
		{"R1.7 tiered with copying off: retention.bytes locally", PartitionInput{Topic: "t", Config: tieredCopyOff},
			50*gib + 512*mib + 2*10*mib*101, BasisRetentionBytes},
		{"R1.7 tiered internal topic name: not tiered", PartitionInput{Topic: "__consumer_offsets", Config: tiered},
			50*gib + 512*mib + 2*10*mib*101, BasisRetentionBytes},
		{
			"R1.7+R5.2 tiered, no size limit: write rate x local.retention.ms",
			PartitionInput{Topic: "t", Config: tieredByTime, WriteRateBytesPerSecond: float64(mib)},
			// + the upload allowance (a segment and its indexes) and 5
			// minutes of writes between retention checks.
			3600*mib + 1*gib + 2*10*mib*4 + 1*gib + 2*10*mib + 300*mib, BasisWriteRateEstimate,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, basis := Partition(tt.in)
			if got != tt.want || basis != tt.wantBasis {
				t.Errorf("Partition() = %d, %q; want %d, %q", got, basis, tt.want, tt.wantBasis)
			}
		})
	}
}

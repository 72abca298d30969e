package agent

import (
	"strings"
)

// fileKind is what a file inside a partition directory is, from its name.
type fileKind uint8

// File kinds inside a partition directory (spec R1.1, R1.4).
const (
	fileUnknown   fileKind = iota
	fileLog                // <base>.log
	fileIndex              // <base>.index
	fileTimeIndex          // <base>.timeindex
	fileTxnIndex           // <base>.txnindex
	fileSnapshot           // <base>.snapshot (producer state; its offset need not be a segment's)
	fileDeleted            // <base>.<suffix>.deleted: waiting for file.delete.delay.ms
	fileCleaned            // <base>.<suffix>.cleaned: log cleaner output in progress
	fileSwap               // <base>.<suffix>.swap: log cleaner output being swapped in
	fileMeta               // leader-epoch-checkpoint, partition.metadata and other known non-segment files
)

// baseOffsetDigits is the width of Kafka's segment file names.
const baseOffsetDigits = 20

// parseSegmentFileName parses a file name inside a partition directory.
// It returns the base offset (for names starting with 20 digits) and the
// kind; ok is false for a name Kafka would not have written.
func parseSegmentFileName(name string) (base int64, kind fileKind, ok bool) {
	switch name {
	case "leader-epoch-checkpoint", "partition.metadata", "leader-epoch-checkpoint.tmp", "partition.metadata.tmp",
		"quorum-state", "quorum-state.tmp":
		return -1, fileMeta, true
	}
	if isSnapshotCheckpoint(name) {
		return -1, fileMeta, true // KRaft metadata snapshot
	}
	if len(name) <= baseOffsetDigits || name[baseOffsetDigits] != '.' {
		return -1, fileUnknown, false
	}
	var v int64
	for i := 0; i < baseOffsetDigits; i++ {
		c := name[i]
		if c < '0' || c > '9' {
			return -1, fileUnknown, false
		}
		d := int64(c - '0')
		if v > (1<<63-1-d)/10 {
			return -1, fileUnknown, false // overflows int64
		}
		v = v*10 + d
	}
	suffix := name[baseOffsetDigits:]
	switch suffix {
	case ".log":
		return v, fileLog, true
	case ".index":
		return v, fileIndex, true
	case ".timeindex":
		return v, fileTimeIndex, true
	case ".txnindex":
		return v, fileTxnIndex, true
	case ".snapshot":
		return v, fileSnapshot, true
	}
	var k fileKind
	var inner string
	switch {
	case strings.HasSuffix(suffix, ".deleted"):
		k, inner = fileDeleted, strings.TrimSuffix(suffix, ".deleted")
	case strings.HasSuffix(suffix, ".cleaned"):
		k, inner = fileCleaned, strings.TrimSuffix(suffix, ".cleaned")
	case strings.HasSuffix(suffix, ".swap"):
		k, inner = fileSwap, strings.TrimSuffix(suffix, ".swap")
	default:
		return v, fileUnknown, false
	}
	switch inner {
	case ".log", ".index", ".timeindex", ".txnindex", ".snapshot":
		return v, k, true
	}
	return v, fileUnknown, false
}

// ParsePartitionDirName parses a directory name under a log dir (spec R1.1,
// R1.4): "<topic>-<partition>" (the topic is everything before the LAST
// dash), "<topic>-<partition>.<id>-delete", "-future" and "-stray"
// directories, and "__cluster_metadata-0". ok is false for anything else.
func ParsePartitionDirName(name string) (topic string, partition int32, kind PartitionKind, ok bool) {
	kind = KindLive
	base := name
	for _, s := range []struct {
		suffix string
		kind   PartitionKind
	}{{"-delete", KindDeleted}, {"-future", KindFuture}, {"-stray", KindStray}} {
		if strings.HasSuffix(name, s.suffix) {
			rest := strings.TrimSuffix(name, s.suffix)
			dot := strings.LastIndexByte(rest, '.')
			if dot < 0 || !isHexID(rest[dot+1:]) {
				return "", 0, "", false
			}
			base, kind = rest[:dot], s.kind
			break
		}
	}
	dash := strings.LastIndexByte(base, '-')
	if dash <= 0 || dash == len(base)-1 {
		return "", 0, "", false
	}
	topic = base[:dash]
	p, good := parsePartitionNumber(base[dash+1:])
	if !good || !validTopicName(topic) {
		return "", 0, "", false
	}
	if kind == KindLive && topic == "__cluster_metadata" {
		kind = KindMetadata
	}
	return topic, p, kind, true
}

func parsePartitionNumber(s string) (int32, bool) {
	if len(s) == 0 || len(s) > 10 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	var v int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if v > 1<<31-1 {
		return 0, false
	}
	return int32(v), true
}

// isHexID accepts the unique id Kafka puts in -delete/-future/-stray names
// (a UUID without dashes); a few other id shapes are tolerated.
func isHexID(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// validTopicName follows Kafka's rule: 1-249 characters of [a-zA-Z0-9._-].
func validTopicName(s string) bool {
	if len(s) == 0 || len(s) > 249 || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// isSnapshotCheckpoint matches a KRaft snapshot file:
// <20-digit offset>-<10-digit epoch>.checkpoint, optionally .part or .deleted.
func isSnapshotCheckpoint(name string) bool {
	const stem = baseOffsetDigits + 1 + 10
	if len(name) < stem || name[baseOffsetDigits] != '-' {
		return false
	}
	for i := 0; i < stem; i++ {
		if i != baseOffsetDigits && (name[i] < '0' || name[i] > '9') {
			return false
		}
	}
	switch name[stem:] {
	case ".checkpoint", ".checkpoint.part", ".checkpoint.deleted":
		return true
	}
	return false
}

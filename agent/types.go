// Package agent models a Kafka broker's log directories: partitions, their
// segments, the state Kafka's retention would give each segment, and disk
// usage. It publishes immutable Snapshots that the exporter and the enforcer
// read. It imports neither Prometheus nor any Kafka client.
//
// The API, in the order a caller uses it:
//
//   - NewScanner, then Scanner.ScanLogDir(path, prev) reads a whole log dir
//     (pass the previous result to skip unchanged closed segments), and
//     Scanner.ReadPartition(logDir, dir, checkpoints, prev) re-reads one
//     partition directory after a file event (Scanner.ReadCheckpoints gives
//     the checkpoints; cache them). Bad input is counted (Scanner.Errors),
//     logged once and skipped: scans never fail as a whole.
//   - DiskUsage(path, capacity, dirBytes) fills LogDir.Usage (spec R2.1).
//   - Topic configs: a ConfigSet from LoadConfigFile/ParseConfigFile
//     (offline) or a ConfigRefresher around a ConfigFetcher (online; the
//     Sarama adapter is internal/kafkaadmin), per topic with its fetch
//     time and last error (ConfigSet.Info); Agent.TopicsChanged feeds
//     ConfigRefresher.Notify so new topics are looked up at once.
//   - Classify(partition, config, now) is Kafka's retention decision for
//     one partition (spec R1.2, R1.3, R1.6); BuildSnapshot(now, dirs,
//     configs, health) classifies every partition and returns the Snapshot.
//   - Evidence for destructive actions (spec R7): Snapshot.ConfigInfo and
//     ConfigStatus (config provenance), Snapshot.Filesystems (what fills
//     each filesystem, NonKafkaBytes), CheckIdentity and GuardedNode (log
//     dirs against the connected cluster and node).
package agent

import (
	"fmt"
	"strconv"
	"time"
)

// State is a segment's retention state (spec R1.2). It is one byte in a
// Segment; String, MarshalText and the metrics' labels spell it as
// Kafka's docs do ("open", "closed", "eligible"). The zero State is unset
// (a segment not yet classified) and spells "".
type State uint8

// Segment states.
const (
	StateOpen     State = iota + 1 // "open": the active segment, still accepts writes
	StateClosed                    // "closed": older segment, not yet deletable
	StateEligible                  // "eligible": retention allows deleting it now
)

var stateNames = [...]string{"", "open", "closed", "eligible"}

// String returns the state's name; "" for the zero State.
func (s State) String() string { return enumName(stateNames[:], s) }

// MarshalText returns the state's name, so JSON and text encodings read
// as before the State was a byte.
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText parses a state's name.
func (s *State) UnmarshalText(b []byte) error { return enumParse(stateNames[:], "state", b, s) }

// Reason says why a segment is eligible, why expired bytes are retained,
// or why Kafka's retention does not visit a log (Partition.Held). Like
// State it is one byte spelled by String and MarshalText; the zero Reason,
// ReasonNone, means none and spells "".
type Reason uint8

// The zero Reason.
const ReasonNone Reason = 0

// Eligibility reasons (spec R1.2, R1.3).
const (
	ReasonRetentionTime    Reason = iota + 1 // "retention_time": largest timestamp older than now - retention.ms
	ReasonRetentionSize                      // "retention_size": partition over retention.bytes without it
	ReasonLogStartOffset                     // "log_start_offset": wholly below the log start offset (DeleteRecords)
	ReasonAllExpiredActive                   // "all_expired_active": active segment, every segment past time retention: Kafka rolls and deletes it
	// Tiered topics (spec R1.7): past local.retention.ms / local.retention.bytes
	// and already copied to remote storage. Kafka deletes the local copy;
	// the records stay readable from the remote tier.
	ReasonLocalRetentionTime // "local_retention_time"
	ReasonLocalRetentionSize // "local_retention_size"

	// Expired-but-retained reasons (spec R1.6).

	RetainedOpenSegment     // "open_segment": expired records inside the still-open segment
	RetainedAwaitingDelete  // "awaiting_deletion": eligible, not yet removed by the broker
	RetainedPendingDeletion // "pending_delete": already renamed *.deleted, waiting for file.delete.delay.ms

	// Held reasons: why Kafka's retention does not visit a log at all,
	// so nothing in it is eligible and a DeleteRecords on it frees no disk
	// until the hold ends (spec R1.2; Partition.Held). Their names are
	// metric label values.

	// HeldMoving ("moving"): the partition has a -future replica in
	// another log dir of the broker (kafka-reassign-partitions with log
	// dirs, AlterReplicaLogDirs) and the log cleaner runs. Kafka pauses
	// cleaning of the partition (ReplicaManager.alterReplicaLogDirs and
	// maybeAddLogDirFetchers: LogManager.abortAndPauseCleaning) until the
	// future replica replaces the live one (replaceCurrentWithFutureLog
	// resumes it); LogManager.cleanupLogs skips paused partitions, for
	// the live log and the -future one.
	HeldMoving
	// HeldCleanerDisabled ("cleaner_disabled"): the topic's
	// cleanup.policy includes compact and log.cleaner.enable=false.
	// LogManager.cleanupLogs then visits only logs whose policy does not
	// include compact.
	HeldCleanerDisabled
	// HeldLogDirOffline ("log_dir_offline"): the broker took the log dir
	// offline (LogManager.handleLogDirFailure drops its logs):
	// DescribeLogDirs answers KAFKA_STORAGE_ERROR for it.
	HeldLogDirOffline
)

var reasonNames = [...]string{"",
	"retention_time", "retention_size", "log_start_offset", "all_expired_active",
	"local_retention_time", "local_retention_size",
	"open_segment", "awaiting_deletion", "pending_delete",
	"moving", "cleaner_disabled", "log_dir_offline"}

// String returns the reason's name (a metric label value); "" for
// ReasonNone.
func (r Reason) String() string { return enumName(reasonNames[:], r) }

// MarshalText returns the reason's name.
func (r Reason) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText parses a reason's name.
func (r *Reason) UnmarshalText(b []byte) error { return enumParse(reasonNames[:], "reason", b, r) }

// enumName returns names[v], or v in decimal when out of range.
func enumName[T ~uint8](names []string, v T) string {
	if int(v) < len(names) {
		return names[v]
	}
	return strconv.Itoa(int(v))
}

// enumParse sets *v to the value whose name is b.
func enumParse[T ~uint8](names []string, what string, b []byte, v *T) error {
	for i, n := range names {
		if n == string(b) {
			*v = T(i)
			return nil
		}
	}
	return fmt.Errorf("unknown %s %q", what, b)
}

// HeldReasons lists every held reason, for metrics that emit each at zero.
func HeldReasons() []Reason {
	return []Reason{HeldMoving, HeldCleanerDisabled, HeldLogDirOffline}
}

// CleanupPolicy is a topic's cleanup.policy.
type CleanupPolicy struct {
	Delete  bool
	Compact bool
}

// String renders the policy as Kafka spells it; the empty policy (Kafka
// 4.1+) is the empty string.
func (p CleanupPolicy) String() string {
	switch {
	case p.Delete && p.Compact:
		return "compact,delete"
	case p.Compact:
		return "compact"
	case p.Delete:
		return "delete"
	default:
		return ""
	}
}

// TopicConfig holds the topic configs retention depends on. A negative
// RetentionMs or RetentionBytes disables that limit, as in Kafka
// (retention.bytes below -1 is legal and is stored as -1).
type TopicConfig struct {
	RetentionMs        int64
	RetentionBytes     int64
	SegmentBytes       int64
	SegmentIndexBytes  int64
	IndexIntervalBytes int64
	CleanupPolicy      CleanupPolicy
	// Preallocate (preallocate): the active .log file is created
	// segment.bytes long. The scanner counts written bytes either way.
	Preallocate bool
	// Tiered storage (KIP-405), spec R1.7. RemoteStorage is the topic's
	// remote.storage.enable, RemoteCopyDisable its remote.log.copy.disable.
	// LocalRetentionMs / LocalRetentionBytes are local.retention.ms /
	// local.retention.bytes: -2 means "use retention.*", -1 no limit.
	RemoteStorage       bool
	RemoteCopyDisable   bool
	LocalRetentionMs    int64
	LocalRetentionBytes int64
	// RemoteCopyLagBytes is remote.copy.lag.bytes (KIP-1241, Kafka 4.4):
	// -1 (the default) derives it from local.retention.bytes. When
	// positive, Kafka's LogConfig rejects a local.retention.bytes (or,
	// with -2, retention.bytes) >= 0 below it.
	RemoteCopyLagBytes int64

	// Broker-wide settings that change how Kafka applies the topic's
	// configs. They come with the broker defaults (BrokerDefaults) and are
	// inherited by every topic; offline they keep their zero value.
	//
	// CleanerDisabled is log.cleaner.enable=false: topics whose policy
	// includes compact then get no retention at all.
	CleanerDisabled bool
	// RemoteStorageSystemDisabled is remote.log.storage.system.enable=false
	// as read from the broker: remote.storage.enable then has no effect.
	// Offline it is false, so a topic that says remote.storage.enable=true
	// is treated as tiered (the safe side: less is eligible).
	RemoteStorageSystemDisabled bool
	// RetentionCheckIntervalMs is log.retention.check.interval.ms: how
	// often Kafka's retention runs (LogManager's kafka-log-retention
	// task). 0 offline: Kafka's default, 300000, is assumed.
	RetentionCheckIntervalMs int64
}

// Tiered reports whether Kafka keeps this topic's log in remote storage
// (UnifiedLog.isRemoteLogEnabled: the broker's remote log storage system
// is on, the topic's remote.storage.enable is true, its policy does not
// include compact, and it is not an internal topic: one of
// KafkaInternalTopics, or the remote log metadata topic).
func (c TopicConfig) Tiered(topic string) bool {
	return c.RemoteStorage && !c.RemoteStorageSystemDisabled && !c.CleanupPolicy.Compact &&
		!IsKafkaInternalTopic(topic) && topic != "__remote_log_metadata"
}

// localRetention returns the retention.ms and retention.bytes Kafka
// applies to the local log (UnifiedLog.localRetentionMs/localRetentionSize
// with LogConfig.localRetentionMs/localRetentionBytes): local.retention.*
// when the topic is tiered and copying is on (-2 meaning retention.*),
// retention.* otherwise.
func (c TopicConfig) localRetention(copyEnabled bool) (ms, bytes int64) {
	ms, bytes = c.RetentionMs, c.RetentionBytes
	if !copyEnabled {
		return ms, bytes
	}
	if c.LocalRetentionMs != -2 {
		ms = c.LocalRetentionMs
	}
	if c.LocalRetentionBytes != -2 {
		bytes = c.LocalRetentionBytes
	}
	return ms, bytes
}

// LocalRetention returns the retention.ms and retention.bytes Kafka
// applies to the topic's local log: local.retention.* (-2: retention.*)
// for a tiered topic with copying on, retention.* otherwise. It is the
// local disk footprint's bound (the reserved-space formula uses it).
func (c TopicConfig) LocalRetention(topic string) (ms, bytes int64) {
	return c.localRetention(c.Tiered(topic) && !c.RemoteCopyDisable)
}

// DefaultTopicConfig is Apache Kafka's broker default for each setting.
func DefaultTopicConfig() TopicConfig {
	return TopicConfig{
		RetentionMs:         7 * 24 * time.Hour.Milliseconds(),
		RetentionBytes:      -1,
		SegmentBytes:        1 << 30,
		SegmentIndexBytes:   10 << 20,
		IndexIntervalBytes:  4096,
		CleanupPolicy:       CleanupPolicy{Delete: true},
		LocalRetentionMs:    -2,
		LocalRetentionBytes: -2,
		RemoteCopyLagBytes:  -1,
	}
}

// TimestampSource says where a segment's largest timestamp came from. It
// is one byte spelled by String and MarshalText; the zero value is
// unknown and spells "".
type TimestampSource uint8

// Timestamp sources (spec R1.3).
const (
	TimestampFromTimeIndex TimestampSource = iota + 1 // "time_index"
	TimestampFromMtime                                // "mtime"
)

var timestampSourceNames = [...]string{"", "time_index", "mtime"}

// String returns the source's name; "" when unknown.
func (t TimestampSource) String() string { return enumName(timestampSourceNames[:], t) }

// MarshalText returns the source's name.
func (t TimestampSource) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText parses a source's name.
func (t *TimestampSource) UnmarshalText(b []byte) error {
	return enumParse(timestampSourceNames[:], "timestamp source", b, t)
}

// Segment is the set of files sharing one base offset.
//
// A broker holds millions of them and the agent keeps one copy of each
// (the snapshots share it), so it is kept small: 48 bytes, five int64, a
// uint32 and four one-byte enums (TestSegmentSize checks it).
type Segment struct {
	BaseOffset int64
	// LogBytes is the apparent size of the .log file: what Kafka counts
	// against retention.bytes (except for a preallocated active segment:
	// see Partition.ActiveWrittenBytes).
	LogBytes int64
	// DiskBytes is the space the segment's files really take (allocated
	// blocks; preallocated sparse indexes count only what is written).
	DiskBytes int64
	// LargestTimestampMs is Kafka's LogSegment.largestTimestamp in Unix
	// milliseconds: the last time index entry, or the .log file's
	// modification time. 0 is unknown (LargestTimestamp gives the zero
	// Time).
	LargestTimestampMs int64
	// ExpiredBytes estimates the bytes of records past retention.ms inside
	// this segment (for the open segment, from its indexes; for an eligible
	// segment, all of LogBytes).
	ExpiredBytes int64
	// IndexApparentBytes is the sum of the apparent sizes of the segment's
	// files other than its .log (.index, .timeindex, .txnindex, a
	// .snapshot of its base offset; a preallocated index counts whole),
	// at most 4 GiB - 1 (it saturates; Kafka's indexes are at most 2 GiB
	// each). The scanner compares it between reads: a roll trims the
	// active segment's indexes while its .log stays as it was.
	IndexApparentBytes uint32
	TimestampSource    TimestampSource
	State              State
	Reason             Reason // why eligible; ReasonNone otherwise
	// Tier says, for a segment of a tiered partition, whether it is
	// already in remote storage (spec R1.7). TierNone otherwise.
	Tier Tier
}

// ApparentBytes returns the sum of the segment's files' apparent sizes.
func (s Segment) ApparentBytes() int64 { return s.LogBytes + int64(s.IndexApparentBytes) }

// LargestTimestamp returns LargestTimestampMs as a time; the zero Time
// when it is 0 (unknown).
func (s Segment) LargestTimestamp() time.Time {
	if s.LargestTimestampMs == 0 {
		return time.Time{}
	}
	return time.UnixMilli(s.LargestTimestampMs)
}

// Tier is a tiered partition's segment's place relative to remote storage.
type Tier uint8

// Segment tiers.
const (
	TierNone      Tier = iota // not a tiered partition
	TierUnknown               // tiered, but the upload boundary is unknown
	TierLocalOnly             // tiered, not yet copied to remote storage
	TierUploaded              // tiered, wholly at or below the highest offset in remote storage
)

// String names the tier as the metrics and reports do.
func (t Tier) String() string {
	switch t {
	case TierUnknown:
		return "unknown"
	case TierLocalOnly:
		return "local_only"
	case TierUploaded:
		return "uploaded"
	}
	return ""
}

// RemoteOffsets is what a tiered partition's leader reports of its remote
// tier (ListOffsets with Kafka's tiered timestamps, KIP-1005).
type RemoteOffsets struct {
	// HighestUploaded is the highest offset in remote storage (inclusive;
	// -1: nothing uploaded yet). ListOffsets timestamp -5, LATEST_TIERED.
	HighestUploaded int64
	// LocalLogStart is the first offset held locally (-4, EARLIEST_LOCAL).
	LocalLogStart int64
	// LogStart is the log start offset across both tiers (-2, EARLIEST).
	LogStart int64
	// Time is when the leader answered.
	Time time.Time
	// Leader is the broker that answered (the partition's leader) when
	// LeaderKnown; the admin adapter sets both.
	Leader      int32
	LeaderKnown bool
	// LeaderHighestUploaded is the leader's latest HighestUploaded where
	// the TieredRefresher published a follower's settled boundary in
	// HighestUploaded instead (TieredRefresher.WithLocalBroker); else
	// equal to it.
	LeaderHighestUploaded int64
	// Err is set when the offsets could not be read: the upload boundary
	// is then unknown and nothing in the partition is eligible.
	Err string
}

// Known reports whether the upload boundary is known.
func (r *RemoteOffsets) Known() bool { return r != nil && r.Err == "" }

// PartitionKind tells ordinary partition directories from the special ones
// of spec R1.4.
type PartitionKind string

// Partition directory kinds.
const (
	KindLive     PartitionKind = "live"     // <topic>-<partition>
	KindDeleted  PartitionKind = "deleted"  // <topic>-<partition>.<uuid>-delete
	KindFuture   PartitionKind = "future"   // <topic>-<partition>.<uuid>-future
	KindStray    PartitionKind = "stray"    // <topic>-<partition>.<uuid>-stray
	KindMetadata PartitionKind = "metadata" // __cluster_metadata-0
)

// Partition is one partition directory under a log dir.
type Partition struct {
	Topic     string
	Partition int32
	// Tiered is set at classification when Kafka keeps this log in remote
	// storage (a live or -future log of a topic whose TopicConfig.Tiered
	// holds): its segments then carry a Tier other than TierNone.
	Tiered bool
	// Held says why Kafka's retention does not visit this log at all (one
	// of HeldReasons; ReasonNone when it does). Classify sets
	// HeldCleanerDisabled from the config; HeldMoving and
	// HeldLogDirOffline need the other log dirs and the broker's word and
	// are set by Holds, which classifies the partition again. (Tiered and
	// Held sit beside Partition: a Partition is 184 bytes, not 200.)
	Held Reason
	Dir  string // directory name under the log dir
	Kind PartitionKind
	// Segments sorted by base offset; the last one is the active segment.
	Segments []Segment
	// LogStartOffset from log-start-offset-checkpoint, -1 when unknown.
	LogStartOffset int64
	// HighWatermark from replication-offset-checkpoint, -1 when unknown.
	HighWatermark int64
	// LogEndOffset is the offset after the last record batch of the active
	// segment (read from its tail), -1 when unknown.
	LogEndOffset int64
	// ActiveWrittenBytes is where the active segment's record batches end
	// when zeros follow them in a longer file, -1 otherwise. With
	// preallocate=true Kafka creates the active .log file segment.bytes
	// long and counts only what was written (FileRecords.sizeInBytes):
	// Classify then uses this instead of the active segment's LogBytes.
	ActiveWrittenBytes int64
	// OpenExpiry is the active segment's expiry curve, from its time and
	// offset indexes: every record before byte Position has a timestamp <=
	// TimestampMs. At most a few points, ascending. Spec R1.6.
	OpenExpiry []ExpiryPoint
	// PendingDeleteBytes: disk bytes in *.deleted files (spec R1.4).
	PendingDeleteBytes int64
	// OtherBytes: disk bytes in files that belong to no segment
	// (.cleaned, .swap, leader-epoch-checkpoint, partition.metadata, ...).
	OtherBytes int64
	// DiskBytes is everything in the directory.
	DiskBytes int64
	// AppendedBytes counts the .log bytes the agent has seen appended to
	// this partition since it started (segment growth and new segments).
	AppendedBytes uint64
	// WriteRateBytesPerSecond is the recent observed append rate.
	WriteRateBytesPerSecond float64
	// Remote is the remote tier's state for a tiered partition, from the
	// cluster (set at classification; nil when not tiered or not known).
	Remote *RemoteOffsets
}

// ExpiryPoint is one point of an open segment's expiry curve.
type ExpiryPoint struct {
	TimestampMs int64
	Position    int64
}

// CapacityBasis says how a log dir's capacity was found (spec R2.1).
type CapacityBasis string

// Capacity bases.
const (
	CapacityFilesystem CapacityBasis = "filesystem"
	CapacityConfigured CapacityBasis = "configured"
)

// Usage is the disk usage of one log dir.
type Usage struct {
	CapacityBytes  uint64
	UsedBytes      uint64
	AvailableBytes uint64
	Basis          CapacityBasis
}

// Ratio is used/capacity in [0,1]; 0 when capacity is unknown.
func (u Usage) Ratio() float64 {
	if u.CapacityBytes == 0 {
		return 0
	}
	return float64(u.UsedBytes) / float64(u.CapacityBytes)
}

// LogDir is one broker log directory.
type LogDir struct {
	Path string
	// Pattern is the logDirs glob the log dir matched; "" for a log dir
	// configured by its path. A glob's match that belongs to another
	// broker or cluster is observed only (spec R7.1).
	Pattern   string
	BrokerID  int32 // from meta.properties; -1 when unknown
	ClusterID string
	// Partitions sorted by topic, then partition, then kind. The live
	// agent's snapshots share a Partition while it does not change: never
	// write through these pointers (copy the Partition, and the slice,
	// as Holds does).
	Partitions []*Partition
	Usage      Usage
	// Filesystem holds the log dir: device, size, used (statfs). Filesystems()
	// groups log dirs by it.
	Filesystem Filesystem
	// PendingDeleteBytes: *.deleted files and *-delete directories.
	PendingDeleteBytes int64
	// OtherBytes: checkpoints, meta.properties and anything unrecognised at
	// the root.
	OtherBytes int64
	// DiskBytes is everything under the log dir.
	DiskBytes int64
	// Err is set when the log dir could not be read at all; the rest of the
	// value is then what was known before.
	Err error
}

// Snapshot is the agent's view of every log dir at one instant. A published
// Snapshot is never modified: readers may keep and share it freely.
type Snapshot struct {
	Time    time.Time
	LogDirs []LogDir
	// Configs holds the topic configs the classification used, by topic.
	// Topics without an entry used Defaults.
	Configs  map[string]TopicConfig
	Defaults TopicConfig
	// ConfigsTime is when Configs were last fetched or loaded.
	ConfigsTime time.Time
	// ConfigFetched and ConfigErrors are the provenance of Configs
	// (ConfigSet.Fetched, ConfigSet.Errors); TopicConfig reads them.
	ConfigFetched map[string]time.Time
	ConfigErrors  map[string]error
	Health        Health
	// Generation numbers a live Agent's snapshots by their contents other
	// than usage: it moves when a partition, a log dir's list, error or
	// identity, the topic configs, the remote offsets or a hold change.
	// Two snapshots of one Agent with the same nonzero Generation hold the
	// same log dirs, partitions and configs; they may differ in Time, in
	// each LogDir's Usage, Filesystem, DiskBytes and PendingDeleteBytes,
	// and in Health. 0: not from a live Agent (BuildSnapshot, the one-shot
	// scan): nothing is known.
	Generation uint64
}

// ErrorKind classifies scan errors (spec R6).
type ErrorKind string

// Scan error kinds.
const (
	ErrBadName       ErrorKind = "bad_name"        // a file or directory name that is not Kafka's
	ErrCorruptIndex  ErrorKind = "corrupt_index"   // truncated or corrupt index / checkpoint / meta.properties
	ErrVanished      ErrorKind = "vanished"        // a file removed between listing and reading
	ErrPermission    ErrorKind = "permission"      // permission denied
	ErrLogDirMissing ErrorKind = "log_dir_missing" // the log dir itself is gone or not a directory
	ErrIO            ErrorKind = "io"              // any other I/O error
)

// Health is the agent's own state, cumulative since start.
type Health struct {
	LastFullScan         time.Time // end of the last successful full scan
	LastFullScanDuration time.Duration
	ScanErrors           map[ErrorKind]uint64
	Rescans              map[string]uint64 // full scans by trigger: start, periodic, overflow, log_dir_recovered
	PartitionRereads     uint64
	WatchMode            string // "inotify" or "polling" ("" before the watcher runs)
	PolledDirs           int
}

package enforcer

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// Offsets are a partition's offsets as the broker reports them now.
type Offsets struct {
	LogStart      int64
	HighWatermark int64
}

// BlockReason says why destructive actions are held back.
type BlockReason string

// Block reasons (the enforcer_blocked metric's label).
const (
	BlockSnapshotStale     BlockReason = "snapshot_stale"
	BlockBrokerUnreachable BlockReason = "broker_unreachable"
	BlockScanErrors        BlockReason = "scan_errors"
)

// ACL is one ACL binding on a topic. The guard's own are always literal,
// principal User:*, host *.
type ACL struct {
	Topic      string `json:"topic"`
	Pattern    string `json:"pattern,omitempty"` // literal (default) or prefixed; observed only
	Principal  string `json:"principal"`
	Host       string `json:"host"`
	Operation  string `json:"operation"`  // WRITE, READ, DESCRIBE, ...
	Permission string `json:"permission"` // ALLOW or DENY
}

// ACL fields the guard uses.
const (
	PatternLiteral  = "literal"
	PatternPrefixed = "prefixed"
	AnyPrincipal    = "User:*"
	AnyHost         = "*"
	OpWrite         = "WRITE"
	OpRead          = "READ"
	OpDescribe      = "DESCRIBE"
	PermAllow       = "ALLOW"
	PermDeny        = "DENY"
)

func guardACL(topic, op, perm string) ACL {
	return ACL{Topic: topic, Pattern: PatternLiteral, Principal: AnyPrincipal, Host: AnyHost, Operation: op, Permission: perm}
}

// matches reports whether the binding applies to topic (for the
// allow.everyone.if.no.acl.found question).
func (a ACL) matches(topic string) bool {
	switch a.Pattern {
	case PatternPrefixed:
		return strings.HasPrefix(topic, a.Topic)
	default:
		return a.Topic == topic || a.Topic == "*"
	}
}

// Ownership is what one broker's agent set, as recorded durably in the
// ownership topic.
type Ownership struct {
	BrokerID int32    `json:"broker_id"`
	Strategy string   `json:"strategy,omitempty"`
	LogDirs  []string `json:"log_dirs,omitempty"` // log dirs under protection
	ACLs     []ACL    `json:"acls,omitempty"`
	// ProducerByteRate > 0: the default client quota this agent set.
	ProducerByteRate int64     `json:"producer_byte_rate,omitempty"`
	Updated          time.Time `json:"updated"`
}

// empty reports whether the record claims nothing.
func (o Ownership) empty() bool {
	return len(o.LogDirs) == 0 && len(o.ACLs) == 0 && o.ProducerByteRate == 0
}

// Policy is what Desired decides by.
type Policy struct {
	Profile          Profile
	HysteresisPoints float64
}

// Observed is everything a reconcile pass knows.
type Observed struct {
	Now      time.Time
	Snapshot *agent.Snapshot
	// Stale: the snapshot is missing or older than staleAfter.
	Stale bool
	// BrokerUnreachable: the admin API did not answer this pass.
	BrokerUnreachable bool
	// Protected: log dirs under this agent's protection now.
	Protected map[string]bool
	// ScheduleDue: the daily scheduled deletion window has come.
	ScheduleDue bool
	// Offsets from the broker, for the partitions of log dirs that free
	// space this pass. Partitions without an entry are not touched.
	Offsets map[TopicPartition]Offsets
	// FractionDone: partitions that already had their purge_fraction pass
	// in the current interval.
	FractionDone map[TopicPartition]bool
	// Protection state from the admin API (nil when not observed).
	Protection *ProtectionObserved
}

// ProtectionObserved is the cluster's protection state.
type ProtectionObserved struct {
	BrokerID  int32
	Strategy  string
	Ownership map[int32]Ownership // by broker id, from the ownership topic
	ACLs      []ACL               // every topic ACL in the cluster
	// DefaultProducerByteRate: the producer_byte_rate of the default client
	// entity now (0: none).
	DefaultProducerByteRate int64
	ProducerByteRate        int64 // the rate the quota strategy sets
}

// Free is a log dir's freeing goal for this pass.
type Free struct {
	Action   Action  // scheduled, periodic, purge, purge_fraction; "" none
	Target   float64 // ratio; 0: no target (scheduled: all eligible)
	Fraction float64
}

// DirGoal is the desired state of one log dir.
type DirGoal struct {
	LogDir  string
	Usage   float64
	Band    Band
	Protect bool
	Free    Free
	// Blocked: destructive actions held back for these reasons.
	Blocked []BlockReason
}

// Desired computes every log dir's goal from the policy and what is
// observed. It is pure.
func Desired(p Policy, o Observed) []DirGoal {
	if o.Snapshot == nil {
		return nil
	}
	goals := make([]DirGoal, 0, len(o.Snapshot.LogDirs))
	pi := p.Profile.protectIndex()
	for _, ld := range o.Snapshot.LogDirs {
		u := ld.Usage.Ratio()
		bi := p.Profile.BandAt(u)
		g := DirGoal{LogDir: ld.Path, Usage: u, Band: p.Profile.Bands[bi]}
		was := o.Protected[ld.Path]
		scanErr := ld.Err != nil || ld.Usage.CapacityBytes == 0
		switch {
		case o.Stale:
			g.Protect = was // usage unknown: change nothing
		case pi < 0:
			g.Protect = false
		case u >= p.Profile.Bands[pi].From:
			g.Protect = true
		case was && (scanErr || u >= p.Profile.Bands[pi].From-p.HysteresisPoints/100):
			g.Protect = true // hysteresis (R3.7); never lifted on unreadable data
		}
		if fi := p.Profile.freeingBand(bi); fi >= 0 {
			fb := p.Profile.Bands[fi]
			g.Free = Free{Action: fb.Action, Target: fb.Target, Fraction: fb.Fraction}
		} else if g.Band.Action == ActionScheduled && o.ScheduleDue {
			g.Free = Free{Action: ActionScheduled}
		}
		if o.Stale {
			g.Blocked = append(g.Blocked, BlockSnapshotStale)
		}
		if o.BrokerUnreachable {
			g.Blocked = append(g.Blocked, BlockBrokerUnreachable)
		}
		if scanErr {
			g.Blocked = append(g.Blocked, BlockScanErrors)
		}
		goals = append(goals, g)
	}
	return goals
}

// internalTopic: topics the guard never purges nor protects. Kafka's
// own (__consumer_offsets, __transaction_state, __share_group_state are
// compact-only anyway; __cluster_metadata is not a topic partition the
// admin API can touch) and the guard's ownership topic: every topic whose
// name starts with "__".
func internalTopic(topic string) bool {
	return strings.HasPrefix(topic, "__")
}

// topicConfig returns the topic's config from the snapshot.
func topicConfig(s *agent.Snapshot, topic string) agent.TopicConfig {
	if c, ok := s.Configs[topic]; ok {
		return c
	}
	return s.Defaults
}

// deletable reports whether the guard may DeleteRecords on the topic:
// cleanup.policy includes delete (compact-only answers POLICY_VIOLATION)
// and the topic is not tiered. DeleteRecords moves the log start offset,
// which deletes the remote copy too (spec R7.4): a topic with
// remote.storage.enable=true is never deletable, whatever the broker's
// remote.log.storage.system.enable or the topic's remote.log.copy.disable.
func deletable(s *agent.Snapshot, topic string) bool {
	c := topicConfig(s, topic)
	return !internalTopic(topic) && c.CleanupPolicy.Delete && !c.RemoteStorage
}

// needBytes is how many bytes must still be freed for usage to fall
// under target, given bytes already on their way out.
func needBytes(ld agent.LogDir, target float64, alreadyFreed int64) int64 {
	limit := int64(math.Floor(target * float64(ld.Usage.CapacityBytes)))
	need := int64(ld.Usage.UsedBytes) - alreadyFreed - limit + 1
	return max(need, 0)
}

// protectedTopics lists the topics with a replica in the log dirs.
func protectedTopics(s *agent.Snapshot, dirs map[string]bool) []string {
	set := map[string]bool{}
	for _, ld := range s.LogDirs {
		if !dirs[ld.Path] {
			continue
		}
		for _, p := range ld.Partitions {
			if (p.Kind == agent.KindLive || p.Kind == agent.KindFuture) && !internalTopic(p.Topic) {
				set[p.Topic] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for t := range set {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// Package rights says which Kafka ACL operations each feature of the guard
// needs, and turns what the cluster says the guard's principal may do into
// a report of exactly what is missing, per feature (spec R7, issue 11).
//
// It is pure: internal/kafkaadmin gathers the facts (Held) from the
// cluster; the enforcer, the start-up check and `check-config --online`
// read the Report. Needs is the one table of rights: docs that list the
// guard's rights list these.
package rights

import (
	"fmt"
	"slices"
	"strings"
)

// Resource is a Kafka ACL resource type, as kafka-acls names it.
type Resource string

// Resource types the guard needs rights on.
const (
	Cluster Resource = "Cluster"
	Topic   Resource = "Topic"
)

// Operation is a Kafka ACL operation, spelled as Kafka's AclOperation enum.
type Operation string

// Operations the guard needs.
const (
	Read            Operation = "READ"
	Write           Operation = "WRITE"
	Create          Operation = "CREATE"
	Delete          Operation = "DELETE"
	Alter           Operation = "ALTER"
	Describe        Operation = "DESCRIBE"
	DescribeConfigs Operation = "DESCRIBE_CONFIGS"
	AlterConfigs    Operation = "ALTER_CONFIGS"
)

// Feature is a part of the guard that talks to Kafka. Which are enabled
// follows from the configuration.
type Feature string

// Features.
const (
	// Observe: topic configs and broker configs (retention defaults,
	// log.cleaner.enable), the identity of the log dirs (R7.1). Always on
	// with a cluster configured.
	Observe Feature = "observe"
	// DeleteRecords: DeleteRecords for the scheduled, periodic and purge bands.
	DeleteRecords Feature = "delete_records"
	// ProtectACL: write protection with DENY WRITE ACLs, recorded in the
	// ownership topic.
	ProtectACL Feature = "protect_acl"
	// ProtectQuota: write protection with the default producer quota,
	// recorded in the ownership topic.
	ProtectQuota Feature = "protect_quota"
	// Tiered: lowering a tiered topic's local retention instead of
	// moving its log start offset (R7.4).
	Tiered Feature = "tiered"
	// Admission: reserved-space checks read every topic and broker.
	Admission Feature = "admission"
	// Relief: the `relief plan` command (spec R3.8), run by an operator,
	// never by the agent: it reads every broker's log dirs and replicas,
	// and with --execute reassigns replicas under a replication throttle.
	// Not in Features (no agent feature turns it on); its rights are a
	// subset of theirs, so the guard's principal can run it.
	Relief Feature = "relief"
	// Cordon: cordoning a filling log dir of the guard's broker
	// (KIP-1066, spec R3.8), recorded in the ownership topic.
	Cordon Feature = "cordon"
	// Move: moving partitions between the guard's broker's log dirs
	// (JBOD, spec R3.8) under a throttle recorded in the ownership topic.
	Move Feature = "move"
	// Reassign: the agent's cross-broker rung (enforcer.relief.reassign,
	// spec R3.8): it reads every broker's log dirs and replicas, and
	// reassigns replicas off its broker under a replication throttle
	// recorded in the ownership topic.
	Reassign Feature = "reassign"
)

// Features lists every feature in a fixed order.
func Features() []Feature {
	return []Feature{Observe, DeleteRecords, ProtectACL, ProtectQuota, Tiered, Cordon, Move, Reassign, Admission}
}

// Scope says which resource of its type a right is needed on.
type Scope string

// Scopes.
const (
	ScopeCluster   Scope = "cluster"   // the cluster resource (kafka-cluster)
	ScopeTopics    Scope = "topics"    // every topic the guard acts on
	ScopeOwnership Scope = "ownership" // the ownership topic
)

// Need is one right a feature needs.
type Need struct {
	Feature   Feature
	Scope     Scope
	Operation Operation
	// Calls are the requests the right permits, for messages.
	Calls string
}

// Resource is the ACL resource type of the need.
func (n Need) Resource() Resource {
	if n.Scope == ScopeCluster {
		return Cluster
	}
	return Topic
}

// String names the need: "Topic:DELETE (DeleteRecords)".
func (n Need) String() string {
	what := string(n.Resource())
	if n.Scope == ScopeOwnership {
		what = "Topic(ownership)"
	}
	return fmt.Sprintf("%s:%s (%s)", what, n.Operation, n.Calls)
}

// Needs returns the rights the features need, in a fixed order (features
// in the order given, each feature's needs in table order). Creating the
// ownership topic is a need only while the topic does not exist: Evaluate
// drops it once it does.
func Needs(features ...Feature) []Need {
	var out []Need
	for _, f := range features {
		for _, n := range table() {
			if n.Feature == f {
				out = append(out, n)
			}
		}
	}
	return out
}

func table() []Need {
	ownership := func(f Feature) []Need {
		return []Need{
			{f, ScopeOwnership, Create, "CreateTopics of the ownership topic, until it exists; Cluster:CREATE also grants it"},
			{f, ScopeOwnership, Describe, "Metadata, ListOffsets of the ownership topic"},
			{f, ScopeOwnership, Read, "Fetch of the ownership records"},
			{f, ScopeOwnership, Write, "Produce of this agent's ownership record"},
		}
	}
	t := []Need{
		{Observe, ScopeCluster, Describe, "DescribeLogDirs: the broker confirms its log dirs (R7.1)"},
		{Observe, ScopeCluster, DescribeConfigs, "DescribeConfigs of brokers: retention defaults, log.cleaner.enable"},
		{Observe, ScopeTopics, Describe, "Metadata of the topics on disk"},
		{Observe, ScopeTopics, DescribeConfigs, "DescribeConfigs of the topics on disk (R7.2)"},
		{DeleteRecords, ScopeTopics, Describe, "ListOffsets: log start offset and high watermark"},
		{DeleteRecords, ScopeTopics, Delete, "DeleteRecords"},
		{ProtectACL, ScopeCluster, Describe, "DescribeAcls"},
		{ProtectACL, ScopeCluster, Alter, "CreateAcls, DeleteAcls"},
		{ProtectACL, ScopeCluster, DescribeConfigs, "DescribeConfigs of brokers: allow.everyone.if.no.acl.found (protection.allowEveryoneIfNoAclFound: auto, R8.3)"},
	}
	t = append(t, ownership(ProtectACL)...)
	t = append(t,
		Need{ProtectQuota, ScopeCluster, DescribeConfigs, "DescribeClientQuotas"},
		Need{ProtectQuota, ScopeCluster, AlterConfigs, "AlterClientQuotas"},
	)
	t = append(t, ownership(ProtectQuota)...)
	t = append(t,
		Need{Tiered, ScopeTopics, DescribeConfigs, "DescribeConfigs of tiered topics"},
		Need{Tiered, ScopeTopics, AlterConfigs, "IncrementalAlterConfigs of local.retention.* (R7.4)"},
		Need{Cordon, ScopeCluster, DescribeConfigs, "DescribeConfigs of the broker: log.dirs, cordoned.log.dirs"},
		Need{Cordon, ScopeCluster, AlterConfigs, "IncrementalAlterConfigs of the broker: cordoned.log.dirs APPEND, SUBTRACT (R3.8)"},
	)
	t = append(t, ownership(Cordon)...)
	t = append(t,
		Need{Move, ScopeCluster, Describe, "DescribeLogDirs of the broker: replicas by log dir"},
		Need{Move, ScopeCluster, Alter, "AlterReplicaLogDirs (R3.8)"},
		Need{Move, ScopeCluster, DescribeConfigs, "DescribeConfigs of the broker: replica.alter.log.dirs.io.max.bytes.per.second"},
		Need{Move, ScopeCluster, AlterConfigs, "IncrementalAlterConfigs of the broker: replica.alter.log.dirs.io.max.bytes.per.second"},
	)
	t = append(t, ownership(Move)...)
	t = append(t,
		Need{Reassign, ScopeCluster, Describe, "DescribeLogDirs of every broker, ListPartitionReassignments"},
		Need{Reassign, ScopeTopics, Describe, "Metadata of every topic: replicas and leaders"},
		Need{Reassign, ScopeCluster, Alter, "AlterPartitionReassignments (R3.8)"},
		Need{Reassign, ScopeCluster, DescribeConfigs, "DescribeConfigs of brokers: *.replication.throttled.rate already set"},
		Need{Reassign, ScopeCluster, AlterConfigs, "IncrementalAlterConfigs of brokers: *.replication.throttled.rate"},
		Need{Reassign, ScopeTopics, DescribeConfigs, "DescribeConfigs of the moved topics: *.replication.throttled.replicas already set"},
		Need{Reassign, ScopeTopics, AlterConfigs, "IncrementalAlterConfigs of the moved topics: *.replication.throttled.replicas"},
	)
	t = append(t, ownership(Reassign)...)
	t = append(t,
		Need{Admission, ScopeCluster, Describe, "DescribeLogDirs of every broker: storage and replica sizes"},
		Need{Admission, ScopeCluster, DescribeConfigs, "DescribeConfigs of a broker: segment and retention defaults"},
		Need{Admission, ScopeTopics, Describe, "Metadata of every topic: replica placement"},
		Need{Admission, ScopeTopics, DescribeConfigs, "DescribeConfigs of every topic"},
		Need{Relief, ScopeCluster, Describe, "DescribeLogDirs of every broker, ListPartitionReassignments"},
		Need{Relief, ScopeTopics, Describe, "Metadata of every topic: replicas and leaders"},
		Need{Relief, ScopeCluster, Alter, "--execute: AlterPartitionReassignments"},
		Need{Relief, ScopeCluster, DescribeConfigs, "--execute: DescribeConfigs of brokers: a throttle already set"},
		Need{Relief, ScopeCluster, AlterConfigs, "--execute: IncrementalAlterConfigs of brokers: *.replication.throttled.rate"},
		Need{Relief, ScopeTopics, DescribeConfigs, "--execute: DescribeConfigs of the moved topics: a throttle already set"},
		Need{Relief, ScopeTopics, AlterConfigs, "--execute: IncrementalAlterConfigs of the moved topics: *.replication.throttled.replicas"},
	)
	// --execute claims its throttle in the ownership topic before it sets
	// a value (throttle-reassign-cli-<host>), and reads the other claims.
	for _, n := range ownership(Relief) {
		n.Calls = "--execute: " + n.Calls
		t = append(t, n)
	}
	return t
}

// Query says what a rights check covers: the features enabled, the
// topics the guard acts on (those with partitions in its log dirs) and
// the ownership topic's name. The features' needs are checked;
// internal/kafkaadmin adds Observe, implied by a configured cluster.
type Query struct {
	Features       []Feature
	Topics         []string
	OwnershipTopic string
}

// Ops are operations found held (true) or refused (false); an operation
// not in the map was not determined.
type Ops map[Operation]bool

// Held is what the cluster says the guard's principal may do, as
// internal/kafkaadmin found it.
type Held struct {
	// Cluster operations on the cluster resource.
	Cluster Ops
	// ClusterErr says why cluster operations were not determined.
	ClusterErr string
	// Topics: per topic checked, its operations. A topic the principal
	// may not describe has Err set and no operations.
	Topics map[string]TopicHeld
	// OwnershipTopic is the ownership topic's name; Ownership what the
	// principal may do on it.
	OwnershipTopic string
	Ownership      TopicHeld
	// NoAuthorizer: the brokers run without an authorizer (DescribeAcls
	// answers SECURITY_DISABLED). Everything is allowed, and ACLs cannot
	// refuse writes.
	NoAuthorizer bool
}

// TopicHeld is what the principal may do on one topic.
type TopicHeld struct {
	// Exists is false for a topic the cluster does not have (the ownership
	// topic before its creation).
	Exists bool
	Ops    Ops
	// Err says why the operations were not determined ("" when they were).
	Err string
}

// Gap is a need the principal does not meet.
type Gap struct {
	Need
	// Topics lacking the right, sorted; empty for cluster and ownership
	// needs.
	Topics []string
	// Unknown is set when the right could not be determined (Why says
	// why): the guard treats it as missing.
	Unknown bool
	Why     string
}

// String describes the gap for a log line or check-config.
func (g Gap) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: ", g.Feature)
	if g.Unknown {
		b.WriteString("cannot tell whether the principal holds ")
	} else {
		b.WriteString("missing ")
	}
	if g.Operation == "" {
		b.WriteString(g.Calls)
	} else {
		b.WriteString(g.Need.String())
	}
	if len(g.Topics) > 0 {
		const show = 5
		shown := g.Topics[:min(len(g.Topics), show)]
		fmt.Fprintf(&b, " on %d topic(s): %s", len(g.Topics), strings.Join(shown, ", "))
		if len(g.Topics) > show {
			b.WriteString(", ...")
		}
	}
	if g.Why != "" {
		fmt.Fprintf(&b, " (%s)", g.Why)
	}
	return b.String()
}

// Report says which needs of the checked features the principal does not
// meet.
type Report struct {
	Features []Feature
	// Checked is how many topics the topic needs were checked on.
	Checked int
	Gaps    []Gap
}

// OK reports whether every need of every checked feature is met.
func (r Report) OK() bool { return len(r.Gaps) == 0 }

// FeatureOK reports whether feature was checked and has no gap.
func (r Report) FeatureOK(f Feature) bool {
	return slices.Contains(r.Features, f) && len(r.Missing(f)) == 0
}

// Missing returns the gaps of one feature.
func (r Report) Missing(f Feature) []Gap {
	var out []Gap
	for _, g := range r.Gaps {
		if g.Feature == f {
			out = append(out, g)
		}
	}
	return out
}

// String is one line per gap, or "all rights present".
func (r Report) String() string {
	if r.OK() {
		return "all rights present"
	}
	lines := make([]string, len(r.Gaps))
	for i, g := range r.Gaps {
		lines[i] = g.String()
	}
	return strings.Join(lines, "\n")
}

// Evaluate compares what the principal holds with what features need.
// Undetermined rights are gaps marked Unknown. Creating the ownership
// topic is needed only while it does not exist, and Cluster:CREATE
// grants it too.
func Evaluate(h Held, features ...Feature) Report {
	r := Report{Features: slices.Clone(features), Checked: len(h.Topics)}
	topics := make([]string, 0, len(h.Topics))
	for t := range h.Topics {
		topics = append(topics, t)
	}
	slices.Sort(topics)
	if h.NoAuthorizer && slices.Contains(features, ProtectACL) {
		r.Gaps = append(r.Gaps, Gap{Need: Need{Feature: ProtectACL, Scope: ScopeCluster, Calls: "an authorizer on the brokers (authorizer.class.name)"},
			Why: "DescribeAcls answers SECURITY_DISABLED: ACLs cannot refuse writes; use the quota strategy"})
	}
	for _, n := range Needs(features...) {
		switch n.Scope {
		case ScopeCluster:
			held, known := h.Cluster[n.Operation]
			switch {
			case !known:
				r.Gaps = append(r.Gaps, Gap{Need: n, Unknown: true, Why: h.ClusterErr})
			case !held:
				r.Gaps = append(r.Gaps, Gap{Need: n})
			}
		case ScopeTopics:
			var missing, unknown []string
			why := ""
			for _, t := range topics {
				th := h.Topics[t]
				held, known := th.Ops[n.Operation]
				switch {
				case !known:
					unknown = append(unknown, t)
					if why == "" {
						why = th.Err
					}
				case !held:
					missing = append(missing, t)
				}
			}
			if len(missing) > 0 {
				r.Gaps = append(r.Gaps, Gap{Need: n, Topics: missing})
			}
			if len(unknown) > 0 {
				r.Gaps = append(r.Gaps, Gap{Need: n, Topics: unknown, Unknown: true, Why: why})
			}
		case ScopeOwnership:
			o := h.Ownership
			if n.Operation == Create && (o.Exists || h.Cluster[Create]) {
				continue
			}
			held, known := o.Ops[n.Operation]
			switch {
			case !known:
				why := o.Err
				if why == "" {
					why = "not determined"
				}
				r.Gaps = append(r.Gaps, Gap{Need: n, Unknown: true, Why: h.OwnershipTopic + ": " + why})
			case !held:
				r.Gaps = append(r.Gaps, Gap{Need: n, Why: h.OwnershipTopic})
			}
		}
	}
	return r
}

// ACL is one ALLOW binding the guard's principal needs, as kafka-acls and
// Strimzi's KafkaUser name it: a resource type, a literal resource name
// ("kafka-cluster" for the cluster, "*" for every topic) and an operation.
type ACL struct {
	Resource  Resource
	Name      string
	Operation Operation
}

// ClusterName is the name of the cluster resource.
const ClusterName = "kafka-cluster"

// String is "Cluster:kafka-cluster:ALTER", "Topic:*:DELETE".
func (a ACL) String() string { return fmt.Sprintf("%s:%s:%s", a.Resource, a.Name, a.Operation) }

// ACLs lists the ALLOW bindings that give the guard's principal every
// right the features need, each operation written out even where Kafka
// implies it (ALTER implies DESCRIBE, ALTER_CONFIGS DESCRIBE_CONFIGS):
// the cluster's, every topic's ("*": the guard acts on whatever topic its
// broker holds) and the ownership topic's, in the order of the table.
// This is the set the docs list (rights/docs_test.go checks them).
func ACLs(ownershipTopic string, features ...Feature) []ACL {
	var out []ACL
	for _, n := range Needs(features...) {
		a := ACL{Resource: n.Resource(), Operation: n.Operation}
		switch n.Scope {
		case ScopeCluster:
			a.Name = ClusterName
		case ScopeTopics:
			a.Name = "*"
		case ScopeOwnership:
			a.Name = ownershipTopic
		}
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

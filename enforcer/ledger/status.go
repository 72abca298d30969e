package ledger

import (
	"maps"
	"math"
	"slices"
	"strconv"
	"time"
)

// StatusInput is what the protection status is made of, read from the
// cluster (kafka-disk-guard protection status).
type StatusInput struct {
	Records Records
	// ACLs: every topic ACL; NoAuthorizer when the brokers have none.
	ACLs         []ACL
	NoAuthorizer bool
	// DefaultProducerByteRate: the default client quota now (0: none).
	DefaultProducerByteRate int64
	// Live: the brokers in the cluster's metadata (nil: unknown).
	Live map[int32]bool
	// TopicConfigs: the local.retention.bytes override of each topic a
	// record claims a config of (nil value: not set; missing: not read).
	TopicConfigs map[string]*string
	// Replicas: the replicas of those topics cluster-wide (missing: not
	// known), every one of which a lowered value reaches.
	Replicas map[string]TopicReplicas
	Now      time.Time
	// Cordons: the cordon state of each broker a record claims a cordon
	// on (missing: not read).
	Cordons map[int32]BrokerCordons
	// LedgerLost: why the records could not be read (ErrLedgerLost), ""
	// when they were.
	LedgerLost string
}

// Broker states in the status.
const (
	StateActive  = "active"      // live claims, lease current
	StateExpired = "expired"     // live claims, lease past its end (by the timestamps)
	StateGone    = "broker_gone" // live claims, the broker is not in the cluster
	StateLifted  = "lifted"      // every claim voided by a lift the agent has not acknowledged
	StatePartial = "partly_lifted"
	StateIdle    = "idle" // nothing claimed
	// StateReleasing: nothing held, claims being given up still in place
	// (a release that failed, retried every pass, spec R8.5).
	StateReleasing = "releasing"
	// StateUndecodable: the broker's latest record does not decode: its
	// claims are untouchable until a decodable record replaces it.
	StateUndecodable = "undecodable"
)

// Status is the protection in place, cluster-wide.
type Status struct {
	Brokers []BrokerStatus `json:"brokers"`
	// Unattributed: bindings that look like the guard's (literal, host *,
	// DENY WRITE, or ALLOW of a non-write operation for User:*) that no
	// record claims, for an operator to decide: the guard may have set
	// them and died before recording them, or an operator made them. The
	// guard never lifts them.
	Unattributed []ACL `json:"unattributed_acls,omitempty"`
	// UnattributedQuota: a default client producer_byte_rate no record
	// claims (an operator's, or the guard's unrecorded).
	UnattributedQuota int64 `json:"unattributed_quota,omitempty"`
	NoAuthorizer      bool  `json:"no_authorizer,omitempty"`
	// LedgerLost: the ownership topic is missing, reshaped or not
	// compacted (spec R8.7): the records shown are none.
	LedgerLost string `json:"ledger_lost,omitempty"`
	// MoveThrottles: the brokers' move throttles the guard holds (spec
	// R3.8), with the value read on the broker now (filled by the
	// command, not BuildStatus).
	MoveThrottles []ThrottleStatus `json:"move_throttles,omitempty"`
	// ReplicationThrottles: the cross-broker reassignments' replication
	// throttles the guard holds (spec R3.8), each value with the value
	// read now (filled by the command).
	ReplicationThrottles []ReassignStatus `json:"replication_throttles,omitempty"`
}

// ReassignStatus is one replication throttle claim and its values now.
type ReassignStatus struct {
	ReassignClaim
	// Current: each entry's value now, in Entries' order ("" with
	// CurrentSet false: none; Unread: the read failed).
	Current []EntryNow `json:"current"`
}

// EntryNow is one claimed value as read now.
type EntryNow struct {
	Value  string `json:"value"`
	Set    bool   `json:"set"`
	Unread string `json:"unread,omitempty"`
}

// ThrottleStatus is one throttle claim and the broker's value now.
type ThrottleStatus struct {
	ThrottleClaim
	// Current: the broker's own value now ("" with CurrentSet false: none).
	Current    string `json:"current"`
	CurrentSet bool   `json:"current_set"`
}

// ReleasingStatus is one claim being given up (spec R8.5).
type ReleasingStatus struct {
	Kind  string `json:"kind"`
	Topic string `json:"topic,omitempty"`
	// What: the binding, quota or config value; InPlace: still read on the
	// cluster (the release has not taken effect yet).
	What    string `json:"what"`
	InPlace bool   `json:"in_place"`
}

// BrokerStatus is one agent's protection.
type BrokerStatus struct {
	BrokerID   int32         `json:"broker_id"`
	Instance   string        `json:"instance,omitempty"` // the agent instance that wrote the record (R8.8)
	State      string        `json:"state"`
	InCluster  *bool         `json:"in_cluster,omitempty"`
	Strategy   string        `json:"strategy,omitempty"`
	Since      time.Time     `json:"since,omitzero"`
	Renewed    time.Time     `json:"renewed,omitzero"`
	Lease      time.Duration `json:"lease_ns,omitempty"`
	LeaseAge   time.Duration `json:"lease_age_ns,omitempty"`
	ExpiresIn  time.Duration `json:"expires_in_ns,omitempty"` // negative: expired that long ago
	Why        []Why         `json:"why,omitempty"`
	LogDirs    []string      `json:"log_dirs,omitempty"`
	Topics     []TopicStatus `json:"topics,omitempty"`
	Quota      int64         `json:"quota,omitempty"`
	QuotaSet   bool          `json:"quota_in_place,omitempty"`
	Claimed    int           `json:"bindings_claimed"`
	Present    int           `json:"bindings_in_place"`
	Lift       *Lift         `json:"lift,omitempty"`
	LiftAcked  bool          `json:"lift_acknowledged,omitempty"`
	Suppressed *Suppression  `json:"suppressed,omitempty"`
	// Configs: topic configs the agent changed (tiered topics' local
	// retention, spec R7.4).
	Configs []ConfigStatus `json:"topic_configs,omitempty"`
	// Cordons: the broker's log dirs the agent cordoned (KIP-1066), and
	// OperatorCordons the broker's cordoned log dirs no record claims
	// (the operator's: the guard never removes them).
	Cordons         []CordonStatus `json:"cordons,omitempty"`
	OperatorCordons []string       `json:"operator_cordons,omitempty"`
	// Releasing: claims being given up, kept until read back gone.
	Releasing []ReleasingStatus `json:"releasing,omitempty"`
	// Undecodable: values of the broker's keys skipped since its last
	// decodable record.
	Undecodable int       `json:"undecodable_records,omitempty"`
	Updated     time.Time `json:"updated,omitzero"`
}

// ConfigStatus is one topic config a record claims.
type ConfigStatus struct {
	Topic string `json:"topic"`
	Key   string `json:"key"`
	// Value: what the guard set; Original: the operator's value it
	// restores (nil: the override is deleted).
	Value    string  `json:"value"`
	Original *string `json:"original"`
	// Current: the value in place (nil: not set on the topic); InPlace:
	// it is the guard's; Read: it was read.
	Current *string `json:"current"`
	InPlace bool    `json:"in_place"`
	Read    bool    `json:"read"`
	Live    bool    `json:"live"` // not voided by a lift
	// Replicas: the topic's replicas on every broker, which all drop
	// their uploaded local copies while the value stays (nil: not read).
	Replicas *TopicReplicas `json:"replicas,omitempty"`
}

// CordonStatus is one log dir a record claims a cordon on.
type CordonStatus struct {
	Dir string `json:"log_dir"`
	// InPlace: in the broker's dynamic cordoned.log.dirs; Read: it was
	// read; Live: not voided by a lift.
	InPlace bool `json:"in_place"`
	Read    bool `json:"read"`
	Live    bool `json:"live"`
}

// TopicStatus is one protected topic.
type TopicStatus struct {
	Topic   string `json:"topic"`
	Shape   string `json:"shape"`
	Live    bool   `json:"live"` // not voided by a lift
	Claimed int    `json:"bindings_claimed"`
	Present int    `json:"bindings_in_place"`
}

// BuildStatus computes the status. Pure.
func BuildStatus(in StatusInput) Status {
	var st Status
	st.NoAuthorizer, st.LedgerLost = in.NoAuthorizer, in.LedgerLost
	present := map[ACL]bool{}
	for _, a := range in.ACLs {
		present[NormACL(a)] = true
	}
	for _, id := range statusBrokers(in.Records) {
		st.Brokers = append(st.Brokers, brokerStatus(in, id, present))
	}
	guard := in.Records.GuardBindings()
	for _, a := range in.ACLs {
		if a = NormACL(a); LooksLikeGuard(a) && !guard[a] {
			st.Unattributed = append(st.Unattributed, a)
		}
	}
	SortACLs(st.Unattributed)
	claimsQuota := false
	for _, r := range in.Records.Agents {
		claimsQuota = claimsQuota || r.Quota() > 0 || r.ReleasingQuota() > 0
	}
	if in.DefaultProducerByteRate > 0 && !claimsQuota {
		st.UnattributedQuota = in.DefaultProducerByteRate
	}
	return st
}

// statusBrokers lists, sorted, the brokers with a record, a lift or an
// undecodable record.
func statusBrokers(recs Records) []int32 {
	ids := slices.Sorted(maps.Keys(recs.Agents))
	for id := range recs.Lifts {
		if _, ok := recs.Agents[id]; !ok {
			ids = append(ids, id)
		}
	}
	for id := range recs.Undecodable {
		if _, ok := recs.Agents[id]; !ok && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// claimCount counts a record's claims, live or voided by a lift.
type claimCount struct{ live, voided int }

func (c *claimCount) add(live bool) {
	if live {
		c.live++
	} else {
		c.voided++
	}
}

// brokerStatus is one broker's status: its record's claims, each checked
// against what was read on the cluster, and its state.
func brokerStatus(in StatusInput, id int32, present map[ACL]bool) BrokerStatus {
	r := in.Records.Agents[id]
	b := BrokerStatus{BrokerID: id, Instance: r.Instance, Strategy: r.Strategy, Since: r.Since, Renewed: r.Renewed, Lease: r.Lease(),
		Why: r.Why, LogDirs: r.LogDirs, Quota: r.Quota(), Suppressed: r.Suppressed, Updated: r.Updated}
	if in.Live != nil {
		ok := in.Live[id]
		b.InCluster = &ok
	}
	if l, ok := in.Records.Lifts[id]; ok {
		b.Lift = &l
		b.LiftAcked = r.Ack == l.ID
	}
	if !r.Renewed.IsZero() && b.Lease > 0 {
		b.LeaseAge = in.Now.Sub(r.Renewed)
		b.ExpiresIn = b.Lease - b.LeaseAge
	}
	var claims claimCount
	b.addTopics(in, r, present, &claims)
	b.addConfigs(in, r, &claims)
	b.addCordons(in, r, &claims)
	if b.Quota > 0 {
		b.QuotaSet = in.DefaultProducerByteRate == b.Quota
		claims.add(in.Records.Live(id, ""))
	}
	b.addReleasing(in, r, present)
	b.Undecodable = in.Records.Undecodable[id]
	b.State = b.state(claims)
	return b
}

// addTopics adds the record's protected topics, each with its bindings
// claimed and in place.
func (b *BrokerStatus) addTopics(in StatusInput, r Record, present map[ACL]bool, claims *claimCount) {
	shapes := r.TopicShapes()
	for _, t := range slices.Sorted(maps.Keys(shapes)) {
		s := shapes[t]
		ts := TopicStatus{Topic: t, Shape: s.String(), Live: in.Records.Live(b.BrokerID, t)}
		for _, a := range s.Bindings(t) {
			ts.Claimed++
			if present[a] {
				ts.Present++
			}
		}
		b.Claimed += ts.Claimed
		b.Present += ts.Present
		claims.add(ts.Live)
		b.Topics = append(b.Topics, ts)
	}
}

// addConfigs adds the topic configs the record claims.
func (b *BrokerStatus) addConfigs(in StatusInput, r Record, claims *claimCount) {
	for _, c := range r.ConfigClaims() {
		cur, read := in.TopicConfigs[c.Topic]
		cs := ConfigStatus{Topic: c.Topic, Key: c.Key, Value: c.Value, Original: c.Orig, Current: cur, Read: read,
			InPlace: read && in.Records.GuardSet(c, cur), Live: in.Records.Live(b.BrokerID, c.Topic)}
		if r, ok := in.Replicas[c.Topic]; ok {
			cs.Replicas = &r
		}
		claims.add(cs.Live)
		b.Configs = append(b.Configs, cs)
	}
}

// addCordons adds the cordons the record claims and the broker's
// cordoned log dirs no record claims (the operator's).
func (b *BrokerStatus) addCordons(in StatusInput, r Record, claims *claimCount) {
	cst, cread := in.Cordons[b.BrokerID]
	claimedDirs := map[string]bool{}
	for _, c := range r.AllCordonClaims() {
		claimedDirs[c.Value] = true
	}
	for _, c := range r.CordonClaims() {
		cs := CordonStatus{Dir: c.Value, Read: cread, InPlace: cread && slices.Contains(cst.Dynamic, c.Value), Live: in.Records.Live(b.BrokerID, "")}
		claims.add(cs.Live)
		b.Cordons = append(b.Cordons, cs)
	}
	if cread {
		for _, d := range cst.Dynamic {
			if !claimedDirs[d] {
				b.OperatorCordons = append(b.OperatorCordons, d)
			}
		}
	}
}

// addReleasing adds the claims being given up, each with whether it is
// still read on the cluster.
func (b *BrokerStatus) addReleasing(in StatusInput, r Record, present map[ACL]bool) {
	cst, cread := in.Cordons[b.BrokerID]
	for _, o := range r.Releasing() {
		switch o.Kind {
		case OwnedACL:
			for _, t := range o.Topics {
				for _, a := range o.Shape.Bindings(t) {
					b.Releasing = append(b.Releasing, ReleasingStatus{Kind: o.Kind, Topic: t, InPlace: present[a],
						What: a.Permission + " " + a.Operation + " " + a.Principal})
				}
			}
		case OwnedQuota:
			b.Releasing = append(b.Releasing, ReleasingStatus{Kind: o.Kind, What: o.Entity + " " + o.Key + "=" + o.Value,
				InPlace: in.DefaultProducerByteRate == ParseIntOrMax(o.Value)})
		case OwnedCordon:
			b.Releasing = append(b.Releasing, ReleasingStatus{Kind: o.Kind, What: "log dir " + o.Value,
				InPlace: !cread || slices.Contains(cst.Dynamic, o.Value)})
		}
	}
	for _, c := range r.ReleasingConfigs() {
		cur, read := in.TopicConfigs[c.Topic]
		b.Releasing = append(b.Releasing, ReleasingStatus{Kind: OwnedTopicConfig, Topic: c.Topic, What: c.Key + "=" + c.Value,
			InPlace: !read || in.Records.GuardSet(c, cur)})
	}
}

// state is the broker's state from its claims and lease.
func (b *BrokerStatus) state(claims claimCount) string {
	switch {
	case b.Undecodable > 0:
		return StateUndecodable
	case claims.live == 0 && len(b.Releasing) > 0:
		return StateReleasing
	case claims.live == 0 && claims.voided > 0:
		return StateLifted
	case claims.live == 0:
		return StateIdle
	case b.InCluster != nil && !*b.InCluster:
		return StateGone
	case b.Lease > 0 && b.ExpiresIn < 0:
		return StateExpired
	case claims.voided > 0:
		return StatePartial
	default:
		return StateActive
	}
}

// ConfigTopics lists the topics whose configs the records claim.
func (rs Records) ConfigTopics() []string {
	set := map[string]bool{}
	for _, r := range rs.Agents {
		for _, c := range r.Configs {
			set[c.Topic] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// TopicReplicas is where a topic's replicas are, as the cluster's
// metadata lists them.
type TopicReplicas struct {
	Partitions int `json:"partitions"`
	// Replicas: every replica of every partition; Brokers: the distinct
	// brokers holding one.
	Replicas int `json:"replicas"`
	Brokers  int `json:"brokers"`
}

// ParseIntOrMax parses a config value as an integer; one that does not
// parse is the largest (never lower than a value the guard sets).
func ParseIntOrMax(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return math.MaxInt64
	}
	return n
}

package ledger

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The ownership topic (enforcer.ownershipTopic, one partition, compacted)
// holds two kinds of records, JSON values keyed by broker id:
//
//   - "broker-<id>": the Record of that broker's agent: every change it
//     owns (Owned), why and since when, and its lease. Only that agent
//     writes the key, so agents never overwrite each other.
//   - "lift-broker-<id>": the latest Lift of that broker's claims, written
//     by an operator (kafka-disk-guard protection lift) or by a peer agent
//     that found the lease expired. A lift voids the claims it covers
//     until the agent acknowledges it in its own record (Record.Ack).
//
// The partition's total order is what makes reference counting safe: an
// agent that gives up a claim writes its smaller record (acks=all), then
// reads the topic to its end, then deletes every binding it claimed that
// no live record claims now. Of two agents dropping the same claim at once,
// the later writer sees the earlier one's drop and deletes it.

// Record keys.
const (
	recordKeyPrefix = "broker-"
	liftKeyPrefix   = "lift-broker-"
)

// RecordKey is the key of broker id's record.
func RecordKey(id int32) string { return recordKeyPrefix + strconv.Itoa(int(id)) }

// LiftKey is the key of the lift of broker id's claims.
func LiftKey(id int32) string { return liftKeyPrefix + strconv.Itoa(int(id)) }

// ParseKey tells which record a key names: ok is false for a key the
// guard does not know (left alone).
func ParseKey(key string) (id int32, lift, ok bool) {
	rest, isLift := strings.CutPrefix(key, liftKeyPrefix)
	if !isLift {
		var found bool
		if rest, found = strings.CutPrefix(key, recordKeyPrefix); !found {
			return 0, false, false
		}
	}
	n, err := strconv.ParseInt(rest, 10, 32)
	if err != nil || n < 0 {
		return 0, false, false
	}
	return int32(n), isLift, true
}

// RecordVersion is the version of the record format this guard writes.
// Version 1 (no "v"): the first format, full ACL triples in "acls" and a
// "producer_byte_rate"; read and converted, never written.
const RecordVersion = 2

// Kinds of owned changes.
const (
	// OwnedACL: ACL bindings on topics, one Shape for a list of topics.
	OwnedACL = "acl"
	// OwnedQuota: a client quota the guard set (Entity, Key, Value).
	OwnedQuota = "quota"
	// OwnedTopicConfig: the kind a ConfigClaim has in the record's
	// "owned" list (the format shares the list; the types do not).
	OwnedTopicConfig = "topic_config"
)

// DefaultClientEntity names the default client-id quota entity.
const DefaultClientEntity = "client-id=<default>"

// Owned is one piece of write protection the guard owns on the cluster,
// by Kind (acl or quota). Topics are stored by name with the Shape that
// derives their bindings (a few bytes a topic, not the full triples).
type Owned struct {
	Kind string `json:"kind"`
	// acl: the shape and the topics protected with it (sorted).
	Shape  *Shape   `json:"shape,omitempty"`
	Topics []string `json:"topics,omitempty"`
	Entity string   `json:"entity,omitempty"` // quota: e.g. client-id=<default>
	Key    string   `json:"key,omitempty"`    // quota
	Value  string   `json:"value,omitempty"`  // quota: what the guard set
	// Releasing: the claim is being given up (spec R8.5): it stays in the
	// record, no longer live (it keeps nothing in place for anyone),
	// until what it names is read back gone or restored; every pass
	// retries the release, and a peer after the lease and an operator's
	// lift drive it too. A reader of an older version takes it for a
	// live claim (it keeps the protection: the safe side).
	Releasing bool `json:"releasing,omitempty"`
}

// Why says why a log dir is protected: its band and usage when it entered
// protection.
type Why struct {
	LogDir string  `json:"log_dir"`
	Band   string  `json:"band"`
	Usage  float64 `json:"usage"`
}

// Suppression is an operator's lift this agent honours: it does not
// protect the lifted scope again until its protection episode ends (no
// log dir wants protection any more) or the lift is withdrawn
// (kafka-disk-guard protection resume).
type Suppression struct {
	LiftID string   `json:"lift_id"`
	Topics []string `json:"topics,omitempty"` // empty: everything
}

// Record is one broker agent's protection record.
type Record struct {
	Version  int32 `json:"v"`
	BrokerID int32 `json:"broker_id"`
	// Instance: the agent instance that wrote it (spec R8.8): another
	// instance for the same broker stands by while its lease is live.
	Instance string `json:"instance,omitempty"`
	Strategy string `json:"strategy,omitempty"`
	// Since: when the current protection episode began (zero: none).
	Since time.Time `json:"since,omitzero"`
	// Renewed: when the lease was last renewed (the writer's clock). The
	// lease holds until Renewed + Lease; a peer declares it expired only
	// after seeing no renewal for Lease on its own clock.
	Renewed time.Time `json:"renewed,omitzero"`
	LeaseMs int64     `json:"lease_ms,omitempty"`
	// Why and LogDirs: the log dirs under protection (the hysteresis
	// state, R3.7), with why each entered it.
	Why     []Why    `json:"why,omitempty"`
	LogDirs []string `json:"log_dirs,omitempty"`
	// Owned: write protection (bindings, the quota); Configs: topic
	// configs the guard changed (tiered local retention). One "owned"
	// list in the encoding (MarshalJSON).
	Owned   []Owned       `json:"-"`
	Configs []ConfigClaim `json:"-"`
	// Ack: the ID of the last lift of this broker's claims the agent has
	// seen; from then on its claims are its own again.
	Ack        string       `json:"ack,omitempty"`
	Suppressed *Suppression `json:"suppressed,omitempty"`
	// Purged: the unexpired bytes this agent purged over the last day, by
	// log dir and bucket (purge.go): restored at a restart, so the
	// purge caps' windows (spec R7.3) survive it.
	Purged  []PurgeBucket `json:"purged,omitempty"`
	Updated time.Time     `json:"updated,omitzero"`
	// Fresh: written by a process whose first read found no record of
	// its own (a first start, or a restart while the ledger was lost).
	// A peer that remembers this broker's record from before (not Fresh)
	// with claims this one lacks writes them into it (Adopt), and the
	// agent takes them as its own: what its earlier process claimed is
	// not forgotten (enforcer/ledger_restore.go).
	Fresh bool `json:"fresh,omitempty"`
	// Started: when the process that wrote it started (its wall clock;
	// zero in records of older guards). Two Fresh records with
	// different Started come from two processes: the claims of the
	// earlier one's are written into the later one's like those of a
	// record that is not Fresh (enforcer/ledger_restore.go).
	Started time.Time `json:"started,omitzero"`
	// Inherits: the Started of the earlier processes whose claims the
	// process that wrote it took over (their record, found under its
	// key, or their claims a peer wrote into its record: WrittenBack).
	// A peer that remembers claims of an earlier process of this broker
	// that neither Started nor Inherits names writes them into the
	// record, Fresh or not, and keeps them in memory until a record
	// names that process: the successor inherited them, and what it
	// released since is never written back (enforcer/ledger_restore.go).
	Inherits []time.Time `json:"inherits,omitempty"`
	// WrittenBack: the earlier processes whose claims a peer wrote into
	// this record (Restored), for its agent to take as its own and name
	// in Inherits. Its agent's own writes clear it.
	WrittenBack []time.Time `json:"written_back,omitempty"`
	// InheritsSeq: for each earlier process Inherits or WrittenBack
	// names, the write of it (Seq) whose claims the record holds (none
	// or 0: unknown, as in records of older guards). A successor that
	// took over a peer's older copy of its earlier process's record
	// names that copy's write; a peer that remembers a later write of
	// that process writes the claims the successor lacks into its record
	// (enforcer/ledger_restore.go; simulation, seed 5562).
	InheritsSeq Writes `json:"inherits_seq,omitempty"`
	// Restored: written back by another agent from its memory of this
	// broker's record after the ownership topic lost it (deleted,
	// created again: enforcer/ledger_restore.go). The copy is as that
	// agent last read it and may lack purges recorded after that read:
	// a process that finds its own record so restored counts its purge
	// history as unknown (spec R7.3). Its agent's own writes clear it.
	Restored bool `json:"restored,omitempty"`
	// LedgerLost: the last time, within the day, that the process that
	// wrote it found the ownership topic lost, or read a record saying
	// so (its writer's wall clock). A process whose first read finds no
	// record of its own, and none written back within its wait, counts
	// its purge history as unknown while a record says the topic was lost
	// within the day: its record may have gone with the topic, and every
	// process that remembered it with them (spec R7.3,
	// enforcer/purge_record.go).
	LedgerLost time.Time `json:"ledger_lost,omitzero"`
	// PurgesUnknown: written by a process that had not established its
	// purge history (spec R7.3): waiting for it after finding no record
	// of its own, not yet past its first read, or in observe mode. Its
	// Purged lacks what the processes before it purged: a process that
	// takes the record as its history (its earlier process's, or the
	// other instance's it takes over from) counts its purges and still
	// waits as if it had found no record (enforcer/purge_record.go).
	PurgesUnknown bool `json:"purges_unknown,omitempty"`
	// Seq: the writing process's count of its own writes (zero in
	// records of older guards). Two copies of one process's record
	// (same Started and Instance) are ordered by it, never by their
	// times (a wall clock goes back): a peer that remembers a later
	// write than the copy another peer wrote back writes its own again
	// (enforcer/ledger_restore.go). Peers' copies keep it.
	Seq uint64 `json:"seq,omitempty"`
}

// LaterWrite reports whether r is a later write of the process that
// wrote cur (both marked with the same start, instance and a write
// count; r's count higher).
func LaterWrite(r, cur Record) bool {
	return !r.Started.IsZero() && r.Started.Equal(cur.Started) && r.Instance == cur.Instance && cur.Seq > 0 && r.Seq > cur.Seq
}

// EarlierProcess reports whether r and cur were written by two processes
// (both marked with their start, and the marks differ).
func EarlierProcess(r, cur Record) bool {
	return !r.Started.IsZero() && !cur.Started.IsZero() && !r.Started.Equal(cur.Started)
}

// Processes lists the processes whose claims the record holds as its
// writer's own: its writer (Started) and the processes it inherited
// (Inherits). Zero times (records of older guards) are left out.
func (r Record) Processes() []time.Time {
	var out []time.Time
	if !r.Started.IsZero() {
		out = append(out, r.Started)
	}
	return append(out, r.Inherits...)
}

// Inherited reports whether the record's writer is, or took over the
// claims of, the process that started at started.
func (r Record) Inherited(started time.Time) bool {
	return slices.ContainsFunc(r.Processes(), started.Equal)
}

// InheritedSeq is the write (Seq) of the process that started at started
// whose claims the record holds: its own last for its writer, the one
// InheritsSeq names for an earlier process (0: unknown).
func (r Record) InheritedSeq(started time.Time) uint64 {
	if !r.Started.IsZero() && started.Equal(r.Started) {
		return r.Seq
	}
	return r.InheritsSeq.Of(started)
}

// InheritedWrite reports whether the record's writer is w's process, or
// took over the claims of w or of a later write of w's process (Inherited,
// and no earlier write than w named in InheritsSeq). An unknown write
// counts as taken over.
func (r Record) InheritedWrite(w Record) bool {
	if !r.Inherited(w.Started) {
		return false
	}
	s := r.InheritedSeq(w.Started)
	return w.Started.Equal(r.Started) || s == 0 || w.Seq <= s
}

// Writes names a write (Seq) of each of some agent processes, by their
// Started (RFC 3339).
type Writes map[string]uint64

func writesKey(started time.Time) string { return started.UTC().Format(time.RFC3339Nano) }

// Of is the write named for the process that started at started (0: none).
func (w Writes) Of(started time.Time) uint64 { return w[writesKey(started)] }

// With returns w naming seq for the process that started at started when
// w names none or an earlier write (w itself is not changed).
func (w Writes) With(started time.Time, seq uint64) Writes {
	if started.IsZero() || seq <= w.Of(started) {
		return w
	}
	out := maps.Clone(w)
	if out == nil {
		out = Writes{}
	}
	out[writesKey(started)] = seq
	return out
}

// AddTimes returns list with the times of more it lacks, sorted.
func AddTimes(list []time.Time, more ...time.Time) []time.Time {
	out := slices.Clone(list)
	for _, t := range more {
		if !t.IsZero() && !slices.ContainsFunc(out, t.Equal) {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, time.Time.Compare)
	return out
}

// Lease is the record's lease duration.
func (r Record) Lease() time.Duration { return time.Duration(r.LeaseMs) * time.Millisecond }

// Claims reports whether the record owns anything (releasing claims
// included).
func (r Record) Claims() bool { return len(r.Owned) > 0 || len(r.Configs) > 0 }

// Held lists the protection claims the record holds (not releasing).
func (r Record) Held() []Owned { return withReleasing(r.Owned, false) }

// Releasing lists the protection claims being given up (spec R8.5).
func (r Record) Releasing() []Owned { return withReleasing(r.Owned, true) }

func (o Owned) releasing() bool       { return o.Releasing }
func (c ConfigClaim) releasing() bool { return c.Releasing }

// withReleasing lists the claims being given up (releasing true) or held
// (false); nil when there are none.
func withReleasing[T interface{ releasing() bool }](claims []T, releasing bool) []T {
	var out []T
	for _, c := range claims {
		if c.releasing() == releasing {
			out = append(out, c)
		}
	}
	return out
}

// ReleasingQuota is the producer_byte_rate of a quota claim being given
// up (0: none).
func (r Record) ReleasingQuota() int64 {
	for _, o := range r.Owned {
		if o.Kind == OwnedQuota && o.Releasing && o.Entity == DefaultClientEntity && o.Key == ProducerByteRateKey {
			n, _ := strconv.ParseInt(o.Value, 10, 64)
			return n
		}
	}
	return 0
}

// Empty reports whether the record neither owns anything nor has a log
// dir under protection.
func (r Record) Empty() bool { return !r.Claims() && len(r.LogDirs) == 0 && r.Suppressed == nil }

// ACLTopics is every topic the record protects with ACLs (held claims).
func (r Record) ACLTopics() []string {
	var out []string
	for _, o := range r.Owned {
		if o.Kind == OwnedACL && !o.Releasing {
			out = append(out, o.Topics...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Quota is the producer_byte_rate of the default client entity the record
// holds: the value the guard set (0: none; a releasing claim is not held).
func (r Record) Quota() int64 {
	for _, o := range r.Owned {
		if o.Kind == OwnedQuota && !o.Releasing && o.Entity == DefaultClientEntity && o.Key == ProducerByteRateKey {
			n, _ := strconv.ParseInt(o.Value, 10, 64)
			return n
		}
	}
	return 0
}

// Bindings calls f for every ACL binding the record names (its topic
// shapes; releasing claims included), topics in scope only (nil: all).
func (r Record) Bindings(scope func(topic string) bool, f func(ACL)) {
	r.bindings(false, scope, f)
}

// HeldBindings is Bindings of the held claims only.
func (r Record) HeldBindings(scope func(topic string) bool, f func(ACL)) {
	r.bindings(true, scope, f)
}

func (r Record) bindings(held bool, scope func(topic string) bool, f func(ACL)) {
	for _, o := range r.Owned {
		if o.Kind != OwnedACL || o.Shape == nil || (held && o.Releasing) {
			continue
		}
		for _, t := range o.Topics {
			if scope == nil || scope(t) {
				for _, a := range o.Shape.Bindings(t) {
					f(a)
				}
			}
		}
	}
}

// TopicShapes maps each protected topic to its shape (held claims).
func (r Record) TopicShapes() map[string]Shape {
	out := map[string]Shape{}
	for _, o := range r.Owned {
		if o.Kind == OwnedACL && o.Shape != nil && !o.Releasing {
			for _, t := range o.Topics {
				out[t] = *o.Shape
			}
		}
	}
	return out
}

const ProducerByteRateKey = "producer_byte_rate"

func QuotaOwned(rate int64) Owned {
	return Owned{Kind: OwnedQuota, Entity: DefaultClientEntity, Key: ProducerByteRateKey, Value: strconv.FormatInt(rate, 10)}
}

// Lift kinds.
const (
	// LiftOperator: an operator lifted the protection
	// (kafka-disk-guard protection lift, the chart's uninstall hook). The
	// agent acknowledges it and does not protect that scope again in the
	// same episode.
	LiftOperator = "operator"
	// LiftLeaseExpired: a peer agent saw no renewal of the lease for its
	// length. The agent, once back and healthy, protects again as needed.
	LiftLeaseExpired = "lease_expired"
	// LiftBrokerGone: the broker is no longer in the cluster's metadata.
	LiftBrokerGone = "broker_gone"
)

// Lift voids a broker's claims (all of them, or on Topics) until the
// agent acknowledges it.
type Lift struct {
	ID       string    `json:"id"`
	BrokerID int32     `json:"broker_id"`
	Kind     string    `json:"kind"`
	By       string    `json:"by"`
	At       time.Time `json:"at"`
	Topics   []string  `json:"topics,omitempty"` // empty: everything the broker claims
	Reason   string    `json:"reason,omitempty"`
	// Instance: the instance whose record of the broker the lift's writer
	// read and lifted; empty: unknown (a writer of an older version, or
	// the lifts of two instances' records merged). An instance whose
	// record the other instance wrote over before the lift knows its own
	// claims were not released by it (keepOverwritten).
	Instance string `json:"instance,omitempty"`
}

// All reports whether the lift covers every claim of the broker.
func (l Lift) All() bool { return len(l.Topics) == 0 }

// Covers reports whether the lift covers the topic ("" is the quota:
// covered only by a lift of everything).
func (l Lift) Covers(topic string) bool {
	if l.All() {
		return true
	}
	_, found := slices.BinarySearch(l.Topics, topic)
	return topic != "" && found
}

// Merge widens an unacknowledged earlier lift of the same broker by l, so
// a second lift never gives back what the first took.
func (l Lift) Merge(earlier Lift) Lift {
	if earlier.Instance != l.Instance {
		l.Instance = "" // it lifted both instances' records
	}
	if earlier.All() || l.All() {
		l.Topics = nil
		return l
	}
	l.Topics = unionStrings(l.Topics, earlier.Topics)
	return l
}

// ErrLedgerLost: the ownership topic is missing, has more than one
// partition, or is not compacted (spec R8.7). It is never read as "no
// records": nothing new is claimed and nothing is released on its word.
// Match it with errors.Is.
var ErrLedgerLost = errors.New("protection ledger lost")

// ErrLedgerMissing: the ledger is lost because the ownership topic does
// not exist (it matches ErrLedgerLost too). Before this agent (or any)
// ever wrote to it, that is a cluster where the guard never protected
// anything; after, its records are gone.
var ErrLedgerMissing = fmt.Errorf("%w: the ownership topic does not exist", ErrLedgerLost)

// Records is the ownership topic's content: every broker's latest record
// and lift.
type Records struct {
	// Topic: the identity of the ownership topic read (Kafka's topic
	// ID): a topic deleted and created again reads with another one.
	// Empty when the source does not know it.
	Topic  string
	Agents map[int32]Record
	Lifts  map[int32]Lift
	// Undecodable: brokers whose latest record or lift could not be
	// decoded (garbage, or a newer version during a rolling upgrade), with
	// how many such values were skipped. Their claims are untouchable
	// (never lifted by a peer or an operator's lift) until a decodable
	// value replaces them; Agents keeps their last decodable record.
	Undecodable map[int32]int
	// UndecodableLift: brokers whose only undecodable value is their
	// lift (their record decodes): an operator's lift may go on, since
	// the lift it writes replaces the undecodable one.
	UndecodableLift map[int32]bool
	// Throttles: each broker's throttle claim for moves within it
	// (throttle.go).
	Throttles map[int32]ThrottleClaim
	// Reassigns: the replication throttle claims of cross-broker
	// reassignments, by owner (throttle.go).
	Reassigns map[string]ReassignClaim
}

// NewRecords returns an empty set.
func NewRecords() Records {
	return Records{Agents: map[int32]Record{}, Lifts: map[int32]Lift{}, Undecodable: map[int32]int{}, UndecodableLift: map[int32]bool{},
		Throttles: map[int32]ThrottleClaim{}, Reassigns: map[string]ReassignClaim{}}
}

// ApplyRecord folds one value of the ownership topic into the set: the
// latest value per key wins; an empty value (a tombstone) removes the
// key; keys the guard does not know are left alone; a value that does not
// decode is skipped and counted (Undecodable).
func ApplyRecord(out Records, key, value []byte) {
	if id, ok := ParseThrottleKey(string(key)); ok {
		applyThrottle(out, id, value)
		return
	}
	if owner, ok := ParseReassignKey(string(key)); ok {
		applyReassign(out, owner, value)
		return
	}
	id, lift, ok := ParseKey(string(key))
	if !ok {
		return
	}
	var err error
	switch {
	case len(value) == 0 && lift:
		delete(out.Lifts, id)
	case len(value) == 0:
		delete(out.Agents, id)
	case lift:
		var l Lift
		if l, err = DecodeLift(value); err == nil {
			out.Lifts[id] = l
		}
	default:
		var r Record
		if r, err = DecodeRecord(value); err == nil {
			r.BrokerID = id
			out.Agents[id] = r
		}
	}
	if err != nil {
		if out.Undecodable != nil {
			liftOnly := lift && (out.Undecodable[id] == 0 || out.UndecodableLift[id])
			out.Undecodable[id]++
			if liftOnly && out.UndecodableLift != nil {
				out.UndecodableLift[id] = true
			} else {
				delete(out.UndecodableLift, id)
			}
		}
		return
	}
	delete(out.Undecodable, id)
	delete(out.UndecodableLift, id)
}

// Clone copies the maps (records are values).
func (rs Records) Clone() Records {
	out := Records{Topic: rs.Topic, Agents: maps.Clone(rs.Agents), Lifts: maps.Clone(rs.Lifts), Undecodable: maps.Clone(rs.Undecodable)}
	if out.Agents == nil {
		out.Agents = map[int32]Record{}
	}
	if out.Lifts == nil {
		out.Lifts = map[int32]Lift{}
	}
	if out.Undecodable == nil {
		out.Undecodable = map[int32]int{}
	}
	if out.UndecodableLift = maps.Clone(rs.UndecodableLift); out.UndecodableLift == nil {
		out.UndecodableLift = map[int32]bool{}
	}
	if out.Throttles = maps.Clone(rs.Throttles); out.Throttles == nil {
		out.Throttles = map[int32]ThrottleClaim{}
	}
	if out.Reassigns = maps.Clone(rs.Reassigns); out.Reassigns == nil {
		out.Reassigns = map[string]ReassignClaim{}
	}
	return out
}

// PendingLift returns the lift of broker id the agent has not
// acknowledged yet.
func (rs Records) PendingLift(id int32) (Lift, bool) {
	l, ok := rs.Lifts[id]
	if !ok || l.ID == "" || rs.Agents[id].Ack == l.ID {
		return Lift{}, false
	}
	return l, true
}

// voidScope returns the scope of broker id's claims a pending lift voids
// (nil: none).
func (rs Records) voidScope(id int32) func(string) bool {
	l, ok := rs.PendingLift(id)
	if !ok {
		return nil
	}
	return l.Covers
}

// Live reports whether broker id's claim on topic ("" for the quota)
// stands: not voided by a pending lift.
func (rs Records) Live(id int32, topic string) bool {
	v := rs.voidScope(id)
	return v == nil || !v(topic)
}

// LiveBindings is every ACL binding some record holds (not releasing)
// and no pending lift voids: what must stay.
func (rs Records) LiveBindings() map[ACL]bool {
	out := map[ACL]bool{}
	for id, r := range rs.Agents {
		v := rs.voidScope(id)
		r.HeldBindings(func(t string) bool { return v == nil || !v(t) }, func(a ACL) { out[a] = true })
	}
	return out
}

// GuardBindings is every ACL binding any record names, voided or not: the
// guard's, never an operator's.
func (rs Records) GuardBindings() map[ACL]bool {
	out := map[ACL]bool{}
	for _, r := range rs.Agents {
		r.Bindings(nil, func(a ACL) { out[a] = true })
	}
	return out
}

// LiveQuota reports whether some live record holds a claim on the default
// client producer_byte_rate at value q.
func (rs Records) LiveQuota(q int64) bool {
	for id, r := range rs.Agents {
		if r.Quota() == q && q > 0 && rs.Live(id, "") {
			return true
		}
	}
	return false
}

// GuardQuota reports whether any record (voided or releasing claims
// included) names the default client producer_byte_rate at value q: a
// value the guard set, never an operator's.
func (rs Records) GuardQuota(q int64) bool {
	for _, r := range rs.Agents {
		if q > 0 && (r.Quota() == q || r.ReleasingQuota() == q) {
			return true
		}
	}
	return false
}

// LiveTopics lists the topics broker id's record protects with live
// claims, sorted.
func (rs Records) LiveTopics(id int32) []string {
	r := rs.Agents[id]
	v := rs.voidScope(id)
	var out []string
	for _, t := range r.ACLTopics() {
		if v == nil || !v(t) {
			out = append(out, t)
		}
	}
	return out
}

// maxPlainRecord: a record encoded larger than this is gzipped (topic
// names compress well; 10,000 topics stay far below the producer's 1 MiB).
const maxPlainRecord = 16 << 10

// gzip's magic bytes: a JSON value starts with '{'.
var gzipMagic = []byte{0x1f, 0x8b}

// EncodeRecord encodes a record as the topic holds it: JSON, gzipped when
// large.
func EncodeRecord(r Record) ([]byte, error) {
	r.Version = RecordVersion
	return encode(r)
}

// EncodeLift encodes a lift.
func EncodeLift(l Lift) ([]byte, error) { return encode(l) }

func encode(v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if len(data) <= maxPlainRecord {
		return data, nil
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.DefaultCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(data); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func decodeJSON(data []byte, v any) error {
	if bytes.HasPrefix(data, gzipMagic) {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return err
		}
		if data, err = io.ReadAll(io.LimitReader(zr, 64<<20)); err != nil {
			return err
		}
	}
	return json.Unmarshal(data, v)
}

// recordV1 is the first format: full ACL triples and a quota rate.
type recordV1 struct {
	ACLs             []ACL `json:"acls"`
	ProducerByteRate int64 `json:"producer_byte_rate"`
}

// DecodeRecord decodes a record of any version this guard knows.
func DecodeRecord(data []byte) (Record, error) {
	var r Record
	if err := decodeJSON(data, &r); err != nil {
		return Record{}, err
	}
	switch {
	case r.Version == 0:
		var v1 recordV1
		if err := decodeJSON(data, &v1); err != nil {
			return Record{}, err
		}
		r.Owned = OwnedFromBindings(v1.ACLs)
		if v1.ProducerByteRate > 0 {
			r.Owned = append(r.Owned, QuotaOwned(v1.ProducerByteRate))
		}
	case r.Version > RecordVersion:
		return Record{}, fmt.Errorf("record version %d is newer than this guard's %d", r.Version, RecordVersion)
	}
	return r, nil
}

// DecodeLift decodes a lift.
func DecodeLift(data []byte) (Lift, error) {
	var l Lift
	if err := decodeJSON(data, &l); err != nil {
		return Lift{}, err
	}
	if l.ID == "" {
		return Lift{}, errors.New("lift without an id")
	}
	slices.Sort(l.Topics)
	return l, nil
}

// OwnedFromBindings groups explicit bindings (a version 1 record) into
// topic shapes.
func OwnedFromBindings(acls []ACL) []Owned {
	shapes := map[string]*Shape{}
	for _, a := range acls {
		s := shapes[a.Topic]
		if s == nil {
			s = &Shape{}
			shapes[a.Topic] = s
		}
		switch {
		case a.Permission == PermDeny && a.Operation == OpWrite:
			s.Deny = append(s.Deny, a.Principal)
		case a.Permission == PermAllow && a.Operation == OpWrite:
			s.AllowWrite = append(s.AllowWrite, a.Principal)
		case a.Permission == PermAllow && a.Principal == AnyPrincipal:
			s.AllowOps = append(s.AllowOps, a.Operation)
		}
	}
	byShape := map[string]*Owned{}
	var out []*Owned
	for _, t := range slices.Sorted(maps.Keys(shapes)) {
		s := shapes[t].Canonical()
		k := s.Key()
		o := byShape[k]
		if o == nil {
			o = &Owned{Kind: OwnedACL, Shape: &s}
			byShape[k] = o
			out = append(out, o)
		}
		o.Topics = append(o.Topics, t)
	}
	res := make([]Owned, len(out))
	for i, o := range out {
		res[i] = *o
	}
	return res
}

// SameOwned reports whether two owned lists are equal (topics and shapes
// as sets).
func SameOwned(a, b []Owned) bool {
	if len(a) != len(b) {
		return false
	}
	norm := func(os []Owned) []string {
		out := make([]string, 0, len(os))
		for _, o := range os {
			k := o.Kind + "|" + o.Entity + "|" + o.Key + "|" + o.Value + "|" + strconv.FormatBool(o.Releasing)
			if o.Shape != nil {
				k += "|" + o.Shape.Key()
			}
			k += "|" + strings.Join(o.Topics, ",")
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(norm(a), norm(b))
}

func unionStrings(a, b []string) []string {
	out := append(slices.Clone(a), b...)
	slices.Sort(out)
	return slices.Compact(out)
}

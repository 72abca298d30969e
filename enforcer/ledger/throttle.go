package ledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Throttle claims: a broker config the guard set for moves within a
// broker (spec R3.8: replica.alter.log.dirs.io.max.bytes.per.second),
// with the operator's value to restore. One claim per broker, under its
// own key "throttle-broker-<id>" (older agents ignore the key: ParseKey
// does not know it), written by that broker's mover only, so it never
// races the protection record. The claim is written before the value is
// set and removed (a tombstone) only after the operator's value is read
// back in place (spec R8.5); its lease lets a peer or `protection lift`
// restore the value when the agent is gone.

// ThrottleKeyPrefix prefixes a throttle claim's key.
const ThrottleKeyPrefix = "throttle-broker-"

// ThrottleKey is the key of broker id's throttle claim.
func ThrottleKey(id int32) string { return ThrottleKeyPrefix + strconv.Itoa(int(id)) }

// ParseThrottleKey returns the broker of a throttle claim's key.
func ParseThrottleKey(key string) (int32, bool) {
	rest, ok := strings.CutPrefix(key, ThrottleKeyPrefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(rest, 10, 32)
	if err != nil || n < 0 {
		return 0, false
	}
	return int32(n), true
}

// ThrottleClaim is a broker config value the guard set.
type ThrottleClaim struct {
	BrokerID int32  `json:"broker_id"`
	Instance string `json:"instance,omitempty"`
	Key      string `json:"key"`
	// Value: what the guard set.
	Value string `json:"value"`
	// Orig: the broker's own dynamic value before (nil: none; restoring
	// then deletes the broker's value).
	Orig *string `json:"orig,omitempty"`
	// Moves: the partitions being moved under it ("topic/partition
	// from -> to"), for `protection status`.
	Moves   []string  `json:"moves,omitempty"`
	Since   time.Time `json:"since,omitzero"`
	Renewed time.Time `json:"renewed,omitzero"`
	LeaseMs int64     `json:"lease_ms,omitempty"`
	// Releasing: the operator's value is being put back; the claim stays
	// until it is read back in place.
	Releasing bool `json:"releasing,omitempty"`
}

// Lease is the claim's lease duration.
func (c ThrottleClaim) Lease() time.Duration { return time.Duration(c.LeaseMs) * time.Millisecond }

// EncodeThrottle encodes a claim (JSON, with the record version).
func EncodeThrottle(c ThrottleClaim) ([]byte, error) {
	type wire struct {
		V int32 `json:"v"`
		ThrottleClaim
	}
	return json.Marshal(wire{RecordVersion, c})
}

// DecodeThrottle decodes a claim; a newer version is an error (the
// claim is then untouchable, as an undecodable record).
func DecodeThrottle(b []byte) (ThrottleClaim, error) {
	var w struct {
		V int32 `json:"v"`
		ThrottleClaim
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return ThrottleClaim{}, fmt.Errorf("decode throttle claim: %w", err)
	}
	if w.V > RecordVersion {
		return ThrottleClaim{}, fmt.Errorf("throttle claim version %d is newer than %d", w.V, RecordVersion)
	}
	if w.Key == "" {
		return ThrottleClaim{}, errors.New("throttle claim without a key")
	}
	return w.ThrottleClaim, nil
}

// applyThrottle folds a throttle claim's value into out (a tombstone
// removes it; an undecodable one is counted for its broker).
func applyThrottle(out Records, id int32, value []byte) {
	if out.Throttles == nil {
		return
	}
	if len(value) == 0 {
		delete(out.Throttles, id)
		return
	}
	c, err := DecodeThrottle(value)
	if err != nil {
		if out.Undecodable != nil {
			delete(out.UndecodableLift, id)
			out.Undecodable[id]++
		}
		return
	}
	c.BrokerID = id
	out.Throttles[id] = c
}

// Replication throttle claims: the throttle a cross-broker reassignment
// runs under (spec R3.8: leader.replication.throttled.rate and
// follower.replication.throttled.rate on each broker it touches, and
// leader/follower.replication.throttled.replicas on each topic), set by
// `relief plan --execute` or by an agent with enforcer.relief.reassign
// on. One claim per owner (an agent: "broker-<id>"; the operator's
// command: "cli-<host>"), under "throttle-reassign-<owner>". As a move
// throttle claim it is written before any value is set and removed only
// after every value is read back restored; after its lease, once its
// partitions are no longer being reassigned, a peer agent restores it;
// `protection lift --all` restores it at once.

// ReassignKeyPrefix prefixes a replication throttle claim's key.
const ReassignKeyPrefix = "throttle-reassign-"

// ReassignKey is the key of owner's replication throttle claim.
func ReassignKey(owner string) string { return ReassignKeyPrefix + owner }

// ParseReassignKey returns the owner of a replication throttle claim's
// key.
func ParseReassignKey(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, ReassignKeyPrefix)
	return rest, ok && rest != ""
}

// ReassignOwner is an agent's owner name in its claim's key.
func ReassignOwner(broker int32) string { return "broker-" + strconv.Itoa(int(broker)) }

// Config resources a throttle entry names.
const (
	ResourceBroker = "broker"
	ResourceTopic  = "topic"
)

// ThrottleEntry is one config value a replication throttle claim set.
type ThrottleEntry struct {
	// Resource: ResourceBroker (Name the broker id) or ResourceTopic.
	Resource string `json:"resource"`
	Name     string `json:"name"`
	Key      string `json:"key"`
	Value    string `json:"value"`
	// Orig: the resource's own dynamic value before (nil: none).
	Orig *string `json:"orig,omitempty"`
}

// String is the entry as `protection status` shows it.
func (e ThrottleEntry) String() string {
	return e.Resource + " " + e.Name + " " + e.Key + "=" + e.Value
}

// ReassignClaim is a cross-broker reassignment's replication throttle.
type ReassignClaim struct {
	Owner    string          `json:"owner"`
	Instance string          `json:"instance,omitempty"`
	Entries  []ThrottleEntry `json:"entries"`
	// Partitions: the "topic/partition" being reassigned under it (a
	// peer restores the throttle after the lease only once none is).
	Partitions []string `json:"partitions,omitempty"`
	// Moves: "topic/partition from -> to", for `protection status`.
	Moves   []string  `json:"moves,omitempty"`
	Since   time.Time `json:"since,omitzero"`
	Renewed time.Time `json:"renewed,omitzero"`
	LeaseMs int64     `json:"lease_ms,omitempty"`
	// Releasing: the values are being removed; the claim stays until
	// every one is read back restored.
	Releasing bool `json:"releasing,omitempty"`
	// Undecodable: the value did not decode (a newer guard's): nothing
	// restores it; a peer or an operator leaves it alone.
	Undecodable bool `json:"-"`
}

// Lease is the claim's lease duration.
func (c ReassignClaim) Lease() time.Duration { return time.Duration(c.LeaseMs) * time.Millisecond }

// EncodeReassign encodes a claim (JSON, with the record version).
func EncodeReassign(c ReassignClaim) ([]byte, error) {
	type wire struct {
		V int32 `json:"v"`
		ReassignClaim
	}
	return json.Marshal(wire{RecordVersion, c})
}

// DecodeReassign decodes a claim; a newer version is an error.
func DecodeReassign(b []byte) (ReassignClaim, error) {
	var w struct {
		V int32 `json:"v"`
		ReassignClaim
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return ReassignClaim{}, fmt.Errorf("decode replication throttle claim: %w", err)
	}
	if w.V > RecordVersion {
		return ReassignClaim{}, fmt.Errorf("replication throttle claim version %d is newer than %d", w.V, RecordVersion)
	}
	return w.ReassignClaim, nil
}

// applyReassign folds a replication throttle claim's value into out (a
// tombstone removes it; an undecodable one is kept as a claim without
// entries, Undecodable, which nothing restores).
func applyReassign(out Records, owner string, value []byte) {
	if out.Reassigns == nil {
		return
	}
	if len(value) == 0 {
		delete(out.Reassigns, owner)
		return
	}
	c, err := DecodeReassign(value)
	if err != nil {
		out.Reassigns[owner] = ReassignClaim{Owner: owner, Undecodable: true}
		return
	}
	c.Owner = owner
	out.Reassigns[owner] = c
}

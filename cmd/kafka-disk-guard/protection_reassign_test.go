package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// R3.8: `protection status` lists a replication throttle claim with each
// value it set and the value read now.
func TestProtectionStatusShowsReplicationThrottles(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	st := []ledger.ReassignStatus{{
		ReassignClaim: ledger.ReassignClaim{Owner: "broker-1", Since: now.Add(-90 * time.Second), Releasing: true,
			Entries: []ledger.ThrottleEntry{{Resource: ledger.ResourceBroker, Name: "1", Key: enforcer.LeaderThrottleRate, Value: "1048576"},
				{Resource: ledger.ResourceTopic, Name: "orders", Key: enforcer.FollowerThrottledReplicas, Value: "0:3"}},
			Moves: []string{"orders/0 1 -> 3"}},
		Current: []ledger.EntryNow{{Value: "1048576", Set: true}, {}},
	}}
	var b bytes.Buffer
	writeReassigns(&b, st, now)
	out := b.String()
	for _, want := range []string{"Reassignments across brokers", "broker-1", "releasing",
		"broker 1 leader.replication.throttled.rate=1048576 (1048576)", "topic orders follower.replication.throttled.replicas=0:3 (none)", "orders/0 1 -> 3"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	b.Reset()
	writeReassigns(&b, nil, now)
	if b.Len() != 0 {
		t.Errorf("no claim, yet: %q", b.String())
	}
}

package enforcer

import (
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// R7.4, R8.7, R8.8 (found by the simulation, seeds 64780 and 87491 of the
// default mix): instance pod-b of broker 1's agent lowers a tiered
// topic's local.retention.bytes (original: not set), and the ownership
// topic is lost before any peer reads that record. The other instance,
// pod-a, restarts while the topic is lost; once it is back, pod-a's first
// record (protecting nothing, no lease) holds what a peer wrote into it:
// its copy of an older write of pod-b, whose claim on the key was being
// given up with another value. pod-b acts over that record, keeps its
// own claim (keepOverwritten) and writes it back in place of the given-up
// one (mergeKept), and restores the operator's value once calm. Before,
// the claim on the same original kept pod-b's out; the given-up claim,
// its value not in place, left without restoring anything, and the value
// pod-b set stayed lowered for good, in no record.
func TestR7_4R8_8ClaimKeptOverAGivenUpCopyInTheOtherInstancesRecord(t *testing.T) {
	f := newFakeAdmin(tieredSnap(870))
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: time.Second, Purge: lenientPurge, BrokerID: new(int32(1)),
		Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}}
	b, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), prometheus.NewRegistry(), Deps{
		Snapshots: &staticSource{snap: tieredSnap(870), ch: make(chan struct{}, 1)}, Admin: f, Clock: clock,
		Evidence: newFakeEvidence(tieredSnap(870)), Instance: "pod-b"})
	if err != nil {
		t.Fatal(err)
	}
	passAt(t, b, clock, tieredSnap(870))
	v, ok := localRetention(f, "tiered")
	if cs := f.records.Agents[1].ConfigClaims(); !ok || len(cs) != 1 || cs[0].Value != v || cs[0].Orig != nil {
		t.Fatalf("the test needs pod-b claiming the value it set (%q) on \"not set\": %+v", v, f.records.Agents[1].Configs)
	}
	n, _ := strconv.ParseInt(v, 10, 64)
	given := ConfigClaim{Topic: "tiered", Key: LocalRetentionBytesKey, Value: strconv.FormatInt(n+4096, 10), Releasing: true}
	f.mu.Lock()
	f.records = ledger.NewRecords()
	f.records.Agents[1] = ledger.Record{Version: 2, BrokerID: 1, Instance: "pod-a", Started: clock.t.Add(time.Second),
		Updated: clock.t.Add(2 * time.Second), Seq: 1, LeaseMs: 10000, Restored: true, PurgesUnknown: true,
		WrittenBack: []time.Time{b.prot.started}, Configs: []ConfigClaim{given}}
	f.mu.Unlock()
	for range 5 { // calm
		passAfter(t, b, clock, time.Second, tieredSnap(100))
	}
	if r := f.records.Agents[1]; r.Instance != "pod-b" {
		t.Fatalf("the test needs pod-b acting for broker 1: %+v", r)
	}
	if got, ok := localRetention(f, "tiered"); ok {
		t.Fatalf("R7.4/local.retention.bytes of tiered is %q after calm, want the operator's (not set): %+v", got, f.records.Agents[1])
	}
}

package enforcer

import (
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// R8.7 (found on the 3-broker cluster by
// TestR8_7PeerWritesBackAnEarlierFreshProcessesClaimsOnACluster): broker
// 2's agent restarts while the ownership topic is lost and created again,
// and writes a Fresh record without its earlier process's claims; a peer
// writes them into it once (it remembers them written). The restarted
// agent's next pass comes within an interval of its last ledger read, so
// it reads nothing and writes its record from the records it read before
// the peer's write: calm, the record without its log dir; or, calm once
// before the peer's write, full again, the record switching protection
// on (R8.4: planned on the records read before). Before the fix
// that write replaced the peer's, the peer never wrote the claims again,
// and the bindings stayed, the operator's for good. A process whose
// record is Fresh now reads the ledger before it writes and keeps what a
// peer wrote into its record.
func TestR8_7FreshRecordKeepsThePeersWriteBackWithinAnInterval(t *testing.T) {
	for _, tc := range []struct {
		name string
		// switchOn: the restarted agent protects, then writes its record
		// calm, before the peer's write; the write within the interval
		// switches protection on again.
		switchOn bool
	}{{"calm", false}, {"switching on", true}} {
		t.Run(tc.name, func(t *testing.T) {
			full, calm := protectSnaps()
			f := newFakeAdmin(full())
			clock := &clockAt{t0}
			cfg := Config{Enabled: true, Interval: 10 * time.Second, Protection: ProtectionConfig{LeaseDuration: time.Minute}}
			old, _ := enforcerAs(t, 2, cfg, full(), f, clock)
			peer, _ := enforcerAs(t, 1, cfg, calm(), f, clock)
			passAt(t, old, clock, full())
			if !f.acls[denyAll("a")] || !f.records.Agents[2].Fresh {
				t.Fatalf("the test needs broker 2 protected by a Fresh record: %v %+v", f.acls, f.records.Agents[2])
			}
			passAfter(t, peer, clock, time.Second, calm()) // it reads broker 2's Fresh record
			// The topic is deleted and created again; broker 2's agent
			// restarts and writes its new record before the peer's next
			// read.
			f.records = ledger.NewRecords()
			back, _ := enforcerAs(t, 2, cfg, full(), f, clock)
			// Late in the peer's interval (its last read at t0+1s): its
			// next read, at t0+11s, comes within the restarted agent's
			// first interval (its read at t0+8s).
			passAfter(t, back, clock, 7*time.Second, full())
			next := calm
			if tc.switchOn {
				passAfter(t, back, clock, time.Second, calm())
				next = full
			}
			r, ok := f.records.Agents[2]
			if !ok || !r.Fresh || len(r.ACLTopics()) != 0 {
				t.Fatalf("the test needs the restarted agent's record Fresh, without claims: %+v", f.records.Agents)
			}
			clock.t = t0.Add(11 * time.Second)
			passAt(t, peer, clock, calm())
			if got := f.records.Agents[2].ACLTopics(); len(got) != 2 {
				t.Fatalf("the test needs the peer writing the earlier process's claims into the Fresh record: %+v", f.records.Agents[2])
			}
			// Within an interval of the restarted agent's last read.
			passAfter(t, back, clock, time.Second, next())
			if r := f.records.Agents[2]; !r.Claims() {
				t.Errorf("R8.7/the restarted agent's write replaced the claims the peer wrote into its record: %+v", r)
			}
			for range 20 {
				passAfter(t, back, clock, cfg.Interval, calm())
				passAt(t, peer, clock, calm())
			}
			if len(f.acls) != 0 {
				t.Fatalf("R8.7/the earlier process's bindings were forgotten: %v", f.acls)
			}
		})
	}
}

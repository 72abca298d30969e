package enforcer

import (
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// R8.7: a peer's copy of this agent's record that names its writer's
// process start (this process, or an earlier one of the instance) is
// never newer than what this process wrote last, whatever the times the
// two name: a wall clock goes back, and two processes' clocks differ. Its
// own memory wins, and the claims it made since the copy stay recorded
// (found by the simulation, ledger_delete: seed 150, broker 3's clock
// went back 10 minutes; seed 1447, its earlier process's clock was 5
// minutes ahead. The agent cordoned its log dir, the topic was deleted, a
// peer wrote back its record as read before the cordon, and the copy,
// naming a later time, replaced the agent's record: the cordon claim was
// lost and the log dir left cordoned for good).
func TestR8_7OwnMemoryWinsOverACopyAfterTheClockWentBack(t *testing.T) {
	for _, tc := range []struct {
		name string
		// restart: the copy is of an earlier process, whose clock was
		// ahead; else of this process, whose clock went back since.
		restart bool
	}{{"clock back", false}, {"earlier process ahead", true}} {
		t.Run(tc.name, func(t *testing.T) {
			O := agent.StateOpen
			onlyA := func() *agent.Snapshot { return snap(950, 1000, part("a", 0, 0, 10, seg(0, 1, O))) }
			full, calm := protectSnaps()
			f := newFakeAdmin(onlyA())
			clock := &clockAt{t0}
			cfg := Config{Enabled: true, Interval: time.Second, Protection: ProtectionConfig{LeaseDuration: time.Minute}}
			e, _ := enforcerAs(t, 2, cfg, onlyA(), f, clock)
			peer, _ := enforcerAs(t, 1, cfg, calm(), f, clock)
			passAt(t, e, clock, onlyA())
			passAfter(t, peer, clock, time.Second, calm()) // it reads broker 2's record: a claimed
			// Broker 2's wall clock goes back 10 minutes (or its process
			// restarts on a host clock 10 minutes behind the earlier
			// one's); topic b fills too, and the agent claims it.
			clock.t = clock.t.Add(-10 * time.Minute)
			if tc.restart {
				e, _ = enforcerAs(t, 2, cfg, full(), f, clock)
			}
			passAfter(t, e, clock, time.Second, full())
			if got := f.records.Agents[2].ACLTopics(); len(got) != 2 {
				t.Fatalf("the test needs broker 2 claiming a and b: %+v", f.records.Agents[2])
			}
			// The topic is deleted and created again; the peer writes back
			// the copy it read, which names a later time than the agent's
			// last write.
			f.mu.Lock()
			f.records = ledger.NewRecords()
			f.mu.Unlock()
			passAfter(t, peer, clock, time.Second, calm())
			if r := f.records.Agents[2]; !r.Restored || len(r.ACLTopics()) != 1 {
				t.Fatalf("the test needs the peer's copy, claiming a only: %+v", r)
			}
			for range 3 {
				passAfter(t, e, clock, time.Second, full())
				passAt(t, peer, clock, calm())
			}
			if got := f.records.Agents[2].ACLTopics(); len(got) != 2 {
				t.Fatalf("R8.7/broker 2's record claims %v after the copy, want a and b (its own memory)", got)
			}
			for range 5 { // calm
				passAfter(t, e, clock, time.Second, calm())
				passAt(t, peer, clock, calm())
			}
			if len(f.acls) != 0 {
				t.Fatalf("R8.7/bindings left after calm: %v", f.acls)
			}
		})
	}
}

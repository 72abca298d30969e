package simulation

import (
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/simbroker"
)

// I4 across a loss of the ledger no process can know of: broker 3's
// agent purged 40 MiB and restarted; the topic, with its record, was
// deleted before any live process but one read it, and that one died
// before it read the ledger again. No process can know those purges, nor
// tell the loss from a fresh install: the agent's next process purging
// 24 MiB as a fresh install is the guard's design, and I4 counts broker
// 3's purges from the loss on (found by the simulation, seed 26678 of
// the default mix). A live agent that read the ledger before the loss,
// or a record in the topic saying it was lost (Record.LedgerLost), could
// tell: then every purge counts.
func TestI4PurgesOfARecordLostBeyondAnyProcessCountFromTheLoss(t *testing.T) {
	for _, c := range []struct {
		name   string
		reader bool // a live agent read the ledger before the loss
		marked bool // a record in the topic says it was lost
		waived bool
	}{
		{name: "no process can know", waived: true},
		{name: "a live agent read the ledger before", reader: true},
		{name: "a record says the topic was lost", marked: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newTestSim(t)
			s.unattributedConfigs, s.unattributedCordons = map[string]bool{}, map[string]bool{}
			s.decodable = map[int32]ledger.Record{}
			purge := func(mib int64) {
				s.c.Deletions = append(s.c.Deletions, simbroker.Deletion{At: s.now, Broker: 3, Topic: "orders", Unexpired: mib << 20, Bytes: mib << 20})
			}
			purge(40)
			v := "4915200"
			if err := s.c.Admin(3, "agent-3").AlterTopicConfig(t.Context(), "events", enforcer.LocalRetentionBytesKey, &v); err != nil {
				t.Fatal(err)
			}
			rec := ledger.Record{BrokerID: 3, Configs: []ledger.ConfigClaim{{Topic: "events", Key: enforcer.LocalRetentionBytesKey, Value: v}},
				Purged: []ledger.PurgeBucket{{LogDir: "/var/lib/kafka/broker-3", End: s.now.Add(10 * time.Minute), Bytes: 40 << 20}}}
			if err := s.c.Admin(3, "agent-3").StoreRecord(t.Context(), rec); err != nil {
				t.Fatal(err)
			}
			s.now = s.now.Add(time.Minute)
			s.loseLedger()
			if c.reader {
				s.lost.readers["agent-1"] = true
			}
			s.c.DeleteOwnershipTopic()
			if c.marked {
				if err := s.c.Admin(2, "agent-2").StoreRecord(t.Context(), ledger.Record{BrokerID: 2, LedgerLost: s.now}); err != nil {
					t.Fatal(err)
				}
			}
			s.settleLost()
			if _, ok := s.lost.recs[3]; ok {
				t.Fatal("the test needs broker 3's record remembered by no live agent")
			}
			s.now = s.now.Add(5 * time.Minute)
			purge(24) // broker 3's next process, as a fresh install
			f := s.checkDeletions()
			switch {
			case c.waived && f != nil:
				t.Errorf("I4 counted purges no process could know of: %v", f)
			case !c.waived && (f == nil || f.Invariant != "I4"):
				t.Errorf("I4 waived purges a process could know of (64 MiB in the hour): %v", f)
			}
		})
	}
}

// I4 across a loss of the ledger whose only knowers die unheard: broker
// 2's record, lost with the ledger, is remembered by no live agent, and
// the agents that read the ledger before the loss (and could tell it
// from a fresh install) die before a record saying the topic was lost
// reaches it. From their deaths no process can know the purges: I4
// counts broker 2's from the loss on, as when no such reader lived
// (found by the simulation, seed 33577 of the default mix). While a
// reader lives, or once a record in the topic says the topic was lost,
// every purge counts.
func TestI4PurgesOfARecordLostCountFromTheLossOnceItsReadersDieUnheard(t *testing.T) {
	for _, c := range []struct {
		name   string
		dies   bool // the reader dies after the record was settled
		marked bool // a record in the topic says the topic was lost
		waived bool
	}{
		{name: "the reader dies unheard", dies: true, waived: true},
		{name: "the reader lives"},
		{name: "the reader's mark reached the topic", dies: true, marked: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newTestSim(t)
			s.unattributedConfigs, s.unattributedCordons = map[string]bool{}, map[string]bool{}
			s.decodable = map[int32]ledger.Record{}
			purge := func(mib int64) {
				s.c.Deletions = append(s.c.Deletions, simbroker.Deletion{At: s.now, Broker: 2, Topic: "orders", Unexpired: mib << 20, Bytes: mib << 20})
			}
			purge(40)
			v := "4915200"
			if err := s.c.Admin(2, "agent-2").AlterTopicConfig(t.Context(), "events", enforcer.LocalRetentionBytesKey, &v); err != nil {
				t.Fatal(err)
			}
			rec := ledger.Record{BrokerID: 2, Configs: []ledger.ConfigClaim{{Topic: "events", Key: enforcer.LocalRetentionBytesKey, Value: v}},
				Purged: []ledger.PurgeBucket{{LogDir: "/var/lib/kafka/broker-2", End: s.now.Add(10 * time.Minute), Bytes: 40 << 20}}}
			if err := s.c.Admin(2, "agent-2").StoreRecord(t.Context(), rec); err != nil {
				t.Fatal(err)
			}
			s.now = s.now.Add(time.Minute)
			s.loseLedger()
			s.lost.readers["agent-1"] = true
			s.c.DeleteOwnershipTopic()
			s.settleLost()
			s.settlePendingForget()
			if _, ok := s.lost.recs[2]; ok {
				t.Fatal("the test needs broker 2's record remembered by no live agent")
			}
			if c.marked {
				if err := s.c.Admin(1, "agent-1").StoreRecord(t.Context(), ledger.Record{BrokerID: 1, LedgerLost: s.now}); err != nil {
					t.Fatal(err)
				}
			}
			if c.dies {
				s.forget(&agentSim{name: "agent-1"})
			}
			s.settleLost()
			s.settlePendingForget()
			s.now = s.now.Add(5 * time.Minute)
			purge(24) // broker 2's next process, as a fresh install
			f := s.checkDeletions()
			switch {
			case c.waived && f != nil:
				t.Errorf("I4 counted purges no live process could know of: %v", f)
			case !c.waived && (f == nil || f.Invariant != "I4"):
				t.Errorf("I4 waived purges a process could know of (64 MiB in the hour): %v", f)
			}
		})
	}
}

// I4 across a loss of the ledger whose only live reader is in observe
// mode: that agent read the ledger before the loss, but writes neither a
// peer's record back nor a mark of the loss (Record.LedgerLost), so it
// tells no process of the purges; it is no reader, as it is no holder,
// and the waiver applies as when no reader lived (found by the
// simulation, seed 87305 of the default mix: the waiver waited for
// agent-1b, in observe mode, after every enforcing process that knew
// broker 2's record had died unheard, and I4 counted its purges against
// the next process's 24 MiB as a fresh install). An enforcing reader
// alive could tell: then every purge counts.
func TestI4AnObserveModeAgentIsNoReaderOfALostLedger(t *testing.T) {
	for _, c := range []struct {
		name      string
		enforcing bool
		waived    bool
	}{
		{name: "observe mode", waived: true},
		{name: "enforcing", enforcing: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newTestSim(t)
			s.unattributedConfigs, s.unattributedCordons = map[string]bool{}, map[string]bool{}
			s.decodable, s.unattributedQuota = map[int32]ledger.Record{}, map[int64]bool{}
			for _, a := range s.agents {
				a.deadTill = 1000 // the enforcing processes that knew the record died
			}
			reader := &agentSim{name: "agent-1b", broker: 1, enabled: c.enforcing, deadTill: -1, second: true,
				tracked: &trackedAdmin{read: true, instance: "agent-1b"}}
			s.agents = append(s.agents, reader)
			purge := func(mib int64) {
				s.c.Deletions = append(s.c.Deletions, simbroker.Deletion{At: s.now, Broker: 2, Topic: "orders", Unexpired: mib << 20, Bytes: mib << 20})
			}
			purge(40)
			rec := ledger.Record{BrokerID: 2, Owned: []ledger.Owned{ledger.QuotaOwned(1 << 20)},
				Purged: []ledger.PurgeBucket{{LogDir: "/var/lib/kafka/broker-2", End: s.now.Add(10 * time.Minute), Bytes: 40 << 20}}}
			if err := s.c.Admin(2, "agent-2").StoreRecord(t.Context(), rec); err != nil {
				t.Fatal(err)
			}
			s.now = s.now.Add(time.Minute)
			s.loseLedger()
			s.c.DeleteOwnershipTopic()
			s.settleLost()
			s.settlePendingForget()
			if _, ok := s.lost.recs[2]; ok {
				t.Fatal("the test needs broker 2's record remembered by no live agent")
			}
			s.now = s.now.Add(5 * time.Minute)
			purge(24) // broker 2's next process, as a fresh install
			f := s.checkDeletions()
			switch {
			case c.waived && f != nil:
				t.Errorf("I4 counted purges only an observe-mode agent read of: %v", f)
			case !c.waived && (f == nil || f.Invariant != "I4"):
				t.Errorf("I4 waived purges an enforcing reader could tell of (64 MiB in the hour): %v", f)
			}
		})
	}
}

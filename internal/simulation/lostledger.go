package simulation

import (
	"maps"
	"slices"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// lostLedger follows the records the ownership topic lost (deleted, or
// recreated with 3 partitions) until they are back in it. An agent
// remembers every record it read: alive and enforcing from the loss until
// the ledger is back, it writes the lost records back (spec R8.7,
// enforcer/ledger_restore.go). When every agent that remembered them has
// died (or was uninstalled) before they were back, nothing on the cluster
// names what they claimed: it is unattributed (R8.4, for an operator to
// decide), and I1 waives it, as it waives what a process set and died
// before recording.
type lostLedger struct {
	// recs: the lost records not yet back, by broker.
	recs map[int32]ledger.Record
	// memory: the agents alive since the loss.
	memory map[string]bool
}

// loseLedger notes the records the topic holds as it is lost.
func (s *sim) loseLedger() {
	recs, err := s.c.Records()
	if s.lost.recs == nil {
		s.lost.recs, s.lost.memory = map[int32]ledger.Record{}, map[string]bool{}
		for _, a := range s.agents {
			if a.enabled && a.deadTill < 0 && !s.uninstalled {
				s.lost.memory[a.name] = true
			}
		}
	}
	if err != nil {
		return // lost already: what it held is noted
	}
	for id, r := range recs.Agents {
		if r.Claims() {
			s.lost.recs[id] = r
		}
	}
}

// forget: agent a's process dies; its memory with it.
func (s *sim) forget(a *agentSim) { delete(s.lost.memory, a.name) }

// settleLost, after every step: the lost records back in the topic are
// done with; once no agent remembers the rest, what they claimed is
// unattributed.
func (s *sim) settleLost() {
	if s.lost.recs == nil {
		return
	}
	if recs, err := s.c.Records(); err == nil {
		for id := range s.lost.recs {
			if _, ok := recs.Agents[id]; ok {
				delete(s.lost.recs, id)
			}
		}
	}
	if len(s.lost.recs) > 0 && len(s.lost.memory) > 0 {
		return
	}
	for _, id := range slices.Sorted(maps.Keys(s.lost.recs)) {
		r := s.lost.recs[id]
		s.tracef("broker %d's record lost with the ledger and remembered by no live agent: its claims are unattributed (R8.4)", id)
		r.Bindings(nil, func(a ledger.ACL) {
			if s.unattributed == nil {
				s.unattributed = map[ledger.ACL]bool{}
			}
			s.unattributed[a] = true
		})
		for _, q := range []int64{r.Quota(), r.ReleasingQuota()} {
			if q > 0 {
				s.unattributedQuota = q
			}
		}
		for _, c := range r.Configs {
			s.unattributedConfigs[c.Topic+"\x00"+c.Value] = true
		}
		for _, c := range r.AllCordonClaims() {
			s.unattributedCordons[c.Value] = true
		}
	}
	s.lost = lostLedger{}
}

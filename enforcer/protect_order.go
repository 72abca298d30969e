package enforcer

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// Protecting a log dir of many topics takes many bindings (five a topic in
// the absence shape: 50,000 at 10,000 topics), and the controller commits
// each binding: a CreateAcls of 1,000 bindings takes from 0.1 s to over a
// second on a busy broker. So the topics that grow fastest are protected
// first, in a small request of their own, and the rest follow in requests
// that double up to the largest (spec R8.4: the first refusal does not
// wait for the last topic).
const (
	// firstBatchBindings bounds the first CreateAcls of a pass: the
	// fastest-growing topics, refused after one short request.
	firstBatchBindings = 100
	// maxBatchBindings bounds every later request (the admin client's
	// own request size).
	maxBatchBindings = 1000
)

// topicGrowth is how fast a topic grows in the log dirs under protection:
// the write rate the agent observes, then the bytes it saw appended.
type topicGrowth struct {
	rate     float64
	appended uint64
}

// growthIn sums each topic's growth over the live and future replicas in
// dirs.
func growthIn(s *agent.Snapshot, dirs map[string]bool) map[string]topicGrowth {
	out := map[string]topicGrowth{}
	if s == nil {
		return out
	}
	for _, ld := range s.LogDirs {
		if !dirs[ld.Path] {
			continue
		}
		for _, p := range ld.Partitions {
			if p.Kind != agent.KindLive && p.Kind != agent.KindFuture {
				continue
			}
			if p.WriteRateBytesPerSecond <= 0 && p.AppendedBytes == 0 {
				continue
			}
			g := out[p.Topic]
			g.rate += max(p.WriteRateBytesPerSecond, 0)
			g.appended += p.AppendedBytes
			out[p.Topic] = g
		}
	}
	return out
}

// fastestFirst orders the topics to protect by growth in dirs, fastest
// first; topics that grow alike (none seen growing, most of them) keep
// their order by name. It reorders tps in place and returns it. Only the
// topics seen growing are sorted: the rest keep their order behind them.
func fastestFirst(tps []TopicProtection, s *agent.Snapshot, dirs map[string]bool) []TopicProtection {
	growth := growthIn(s, dirs)
	if len(growth) == 0 {
		return tps
	}
	grow := make([]TopicProtection, 0, len(growth))
	idle := tps[:0]
	for _, tp := range tps {
		if _, ok := growth[tp.Topic]; ok {
			grow = append(grow, tp)
		} else {
			idle = append(idle, tp)
		}
	}
	slices.SortStableFunc(grow, func(a, b TopicProtection) int {
		ga, gb := growth[a.Topic], growth[b.Topic]
		if c := cmp.Compare(gb.rate, ga.rate); c != 0 {
			return c
		}
		if c := cmp.Compare(gb.appended, ga.appended); c != 0 {
			return c
		}
		return cmp.Compare(a.Topic, b.Topic)
	})
	n := len(idle)
	copy(tps[len(grow):], tps[:n]) // the idle topics, in their order, behind
	copy(tps, grow)
	return tps
}

// protectBatches splits the topics to protect, in their order, into the
// CreateAcls requests of a pass: the first names at most
// firstBatchBindings bindings, each later one twice as many as the one
// before, up to maxBatchBindings. A topic's bindings always travel in one
// request (a topic is never left with part of its shape), so a topic with
// more bindings than a batch allows is a batch of its own.
func protectBatches(tps []TopicProtection) [][]TopicProtection {
	var out [][]TopicProtection
	limit, start, n := firstBatchBindings, 0, 0
	for i, tp := range tps {
		if n > 0 && n+len(tp.ACLs) > limit {
			out = append(out, tps[start:i])
			start, n = i, 0
			limit = min(2*limit, maxBatchBindings)
		}
		n += len(tp.ACLs)
	}
	if start < len(tps) {
		out = append(out, tps[start:])
	}
	return out
}

// createProtection creates the bindings of the topics to protect, batch
// by batch in their order (protectBatches), once the record claiming them
// all was written, or its write failed (recorded false: what is sent is
// remembered as set unrecorded, spec R8.4). Each topic's action is logged
// and counted when its batch is answered. Without an authorizer, or once
// ctx ends, the batches left are not sent: their topics count as failed
// with that error. recordTook: how long the record took (for the debug
// log: the time before the first batch). It returns the topics of the
// batches not created (failed or not sent).
func (e *Enforcer) createProtection(ctx context.Context, tps []TopicProtection, band string, recorded bool,
	recordTook time.Duration) (notCreated map[string]bool, err error) {
	start := time.Now()
	notCreated = map[string]bool{}
	batches := protectBatches(tps)
	var errs []error
	var first time.Duration
	var stop error
	sent := 0
	for _, batch := range batches {
		if stop == nil {
			stop = ctx.Err()
		}
		if stop != nil {
			for _, tp := range batch {
				e.protectionAction(actionProtect, tp, why{band: band}, actionResult(stop), stop)
				notCreated[tp.Topic] = true
			}
			continue
		}
		acls := flatten(batch)
		ledger.CreateOrder(acls) // consumers' ALLOW READ first (spec R4.3)
		err := e.admin.CreateACLs(ctx, acls)
		if sent++; sent == 1 {
			first = time.Since(start)
		}
		for _, tp := range batch {
			e.protectionAction(actionProtect, tp, why{band: band}, actionResult(err), err)
		}
		if !recorded {
			for _, a := range acls {
				e.prot.unrecorded[a] = true
			}
		}
		if err != nil {
			for _, tp := range batch {
				notCreated[tp.Topic] = true
			}
			errs = append(errs, err)
			if errors.Is(err, ErrNoAuthorizer) {
				stop = err
			}
		}
	}
	if stop != nil && !errors.Is(stop, ErrNoAuthorizer) {
		errs = append(errs, stop)
	}
	e.logger.Debug("write protection created", "topics", len(tps), "batches", len(batches), "sent", sent,
		"record", recordTook, "first_batch", first, "took", time.Since(start))
	return notCreated, errors.Join(errs...)
}

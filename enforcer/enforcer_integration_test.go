//go:build integration

package enforcer_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/internal/scantest"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
)

// segInfo is a closed segment of the initial scan.
type segInfo struct {
	partition int32
	base, end int64
	bytes     int64
	ts        time.Time
}

func closedSegments(s *agent.Snapshot) []segInfo {
	var out []segInfo
	for _, p := range s.LogDirs[0].Partitions {
		for i := 0; i < len(p.Segments)-1; i++ {
			sg := p.Segments[i]
			out = append(out, segInfo{p.Partition, sg.BaseOffset, p.Segments[i+1].BaseOffset, sg.DiskBytes, sg.LargestTimestamp()})
		}
	}
	return out
}

// R3.1, R3.5: at 89.95% (purge band) the guard purges the oldest closed
// segments in chronological order across partitions, counts the bytes it
// plans as freed, and stops as soon as usage is under 85%.
func TestR3_1PurgeChronologicalAcrossPartitionsStopsAtTarget(t *testing.T) {
	const topic = "purge-order"
	shared.CreateTopic(t, topic, 2, map[string]string{"internal.segment.bytes": "16384"})
	produceRounds(t, shared, topic, load{partitions: 2, rounds: 6, records: 30, size: 1000})

	capacity := &fixedCapacity{}
	src := &scantest.Source{LogDir: shared.LogDir, Topics: map[string]bool{topic: true}, Capacity: capacity.get}
	capacity.set(1 << 40)
	initial := src.ScanOnce()
	used := initial.LogDirs[0].Usage.UsedBytes
	c := uint64(float64(used) / 0.8995) // top of the purge band: several segments to go
	capacity.set(c)
	src.ScanOnce()
	need := int64(used) - int64(math.Floor(0.85*float64(c))) + 1
	segs := closedSegments(initial)
	if len(segs) < 10 {
		t.Fatalf("only %d closed segments", len(segs))
	}

	g := startGuard(t, shared, guardSpec{cfg: enforcer.Config{Enabled: true, Interval: 200 * time.Millisecond, Purge: purgeMechanics}, src: src, ownTopic: "__kdg_test_purge_order"})
	kafkatest.Eventually(t, 30*time.Second, func() error {
		u := src.Snapshot().LogDirs[0].Usage
		if u.Ratio() >= 0.85 || u.CapacityBytes != c {
			return fmt.Errorf("usage %.4f used %d cap %d", u.Ratio(), u.UsedBytes, u.CapacityBytes)
		}
		return nil
	})
	before := offsets(t, g.admin, topic, 2)
	g.waitReconciles(t, 5)
	after := offsets(t, g.admin, topic, 2)
	if !maps.Equal(before, after) {
		t.Fatalf("the guard kept deleting under the target: %v -> %v", before, after)
	}

	var deleted, kept []segInfo
	for _, s := range segs {
		if s.end <= after[s.partition].LogStart {
			deleted = append(deleted, s)
		} else {
			kept = append(kept, s)
		}
	}
	if len(deleted) == 0 {
		t.Fatal("nothing purged")
	}
	slices.SortFunc(deleted, func(a, b segInfo) int { return a.ts.Compare(b.ts) })
	newestDeleted := deleted[len(deleted)-1]
	for _, k := range kept {
		if k.ts.Before(newestDeleted.ts) {
			t.Errorf("kept %d-%d (%s) is older than purged %d-%d (%s): not chronological",
				k.partition, k.base, k.ts.Format(time.StampMicro), newestDeleted.partition, newestDeleted.base, newestDeleted.ts.Format(time.StampMicro))
		}
	}
	var freed int64
	for _, d := range deleted {
		freed += d.bytes
	}
	if freed < need || freed-newestDeleted.bytes >= need {
		t.Errorf("purged %d bytes for a need of %d: the purge must stop with the first segment that reaches it (last %d)", freed, need, newestDeleted.bytes)
	}
	parts := map[int32]bool{}
	for _, d := range deleted {
		parts[d.partition] = true
	}
	if len(parts) != 2 {
		t.Errorf("purge took segments of partitions %v, want both (timestamps interleave)", parts)
	}
	if v := metric(g.reg, "kafka_disk_guard_unexpired_deleted_bytes_total", map[string]string{"band": "purge"}); v < float64(freed)*0.9 {
		t.Errorf("unexpired_deleted_bytes_total %v, want about %d (R3.6)", v, freed)
	}
	if n := len(g.logs.lines("deleted unexpired records")); n == 0 {
		t.Error("no log line for the unexpired deletion (R3.6)")
	}
	t.Logf("need %d bytes, purged %d bytes in %d segments over %v; log start offsets %v", need, freed, len(deleted), parts, after)
}

// R3.2: the local profile takes at most 10% of each partition's messages
// per pass, oldest first, whatever their retention.
func TestR3_2LocalProfileTakesAtMostTenPercentPerPass(t *testing.T) {
	const topic = "local-fraction"
	shared.CreateTopic(t, topic, 2, map[string]string{"internal.segment.bytes": "16384"})
	produceRounds(t, shared, topic, load{partitions: 2, rounds: 4, records: 60, size: 1000})

	capacity := &fixedCapacity{}
	src := &scantest.Source{LogDir: shared.LogDir, Topics: map[string]bool{topic: true}, Capacity: capacity.get}
	capacity.set(1 << 40)
	used := usedBytes(src)
	// 95%: protect band, which keeps freeing with purge_fraction down to 83%.
	capacity.set(uint64(float64(used) / 0.95))
	src.ScanOnce()

	g := startGuard(t, shared, guardSpec{cfg: enforcer.Config{Enabled: true, Profile: enforcer.ProfileLocal, Interval: 500 * time.Millisecond, Purge: purgeMechanics}, src: src, ownTopic: "__kdg_test_local"})
	kafkatest.Eventually(t, 60*time.Second, func() error {
		if u := src.Snapshot().LogDirs[0].Usage.Ratio(); u >= 0.83 {
			return fmt.Errorf("usage %.4f", u)
		}
		return nil
	})
	lines := g.logs.lines("deleted records", "deleted unexpired records")
	if len(lines) == 0 {
		t.Fatal("no deletion logged")
	}
	passes := map[float64]int{}
	for _, l := range lines {
		from, to, hw := l["from_offset"].(float64), l["to_offset"].(float64), l["high_watermark"].(float64)
		if l["action"] != "purge_fraction" {
			t.Errorf("action %v, want purge_fraction", l["action"])
		}
		if to-from > math.Floor(0.10*(hw-from)) {
			t.Errorf("partition %v: one pass took offsets %v..%v of %v messages: more than 10%%", l["partition"], from, to, hw-from)
		}
		passes[l["partition"].(float64)]++
	}
	multi := false
	for _, n := range passes {
		multi = multi || n > 1
	}
	if !multi {
		t.Errorf("passes per partition %v: 12%% over the target with a 10%% cap should take more than one pass somewhere", passes)
	}
	kafkatest.Eventually(t, 20*time.Second, func() error {
		if acls := topicACLs(t, g.admin, topic); len(acls) != 0 {
			return fmt.Errorf("protection not lifted under 83%%: %v", acls)
		}
		return nil
	})
	if n := len(g.logs.lines("write protection on")); n != 1 {
		t.Errorf("protection switched on %d times, want once", n)
	}
	t.Logf("passes per partition: %v", passes)
}

// R3.1 (scheduled band): below 75% eligible segments are deleted only when
// the daily window comes (04:00 in the configured zone, clock injected).
func TestR3_1ScheduledDeletionHonoursTheWindow(t *testing.T) {
	const topic = "scheduled"
	shared.CreateTopic(t, topic, 1, map[string]string{"internal.segment.bytes": "16384"})
	produceRounds(t, shared, topic, load{partitions: 1, rounds: 1, records: 60, size: 1000})

	madrid, err := time.LoadLocation("Europe/Madrid")
	if err != nil {
		t.Fatal(err)
	}
	// The test's days start at the next 04:00 in Madrid: the records just
	// written are never stamped in the clock's future (spec R7.5).
	now := time.Now().In(madrid)
	day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, madrid).AddDate(0, 0, 1)
	at := func(days, hour, minute, second int) time.Time {
		return time.Date(day.Year(), day.Month(), day.Day()+days, hour, minute, second, 0, madrid)
	}
	clock := &fakeClock{now: at(0, 3, 58, 0)}
	src := &scantest.Source{LogDir: shared.LogDir, Topics: map[string]bool{topic: true}, Now: clock.Now,
		Capacity: func() uint64 { return 1 << 40 }, Classify: classifyAllClosed(topic)}
	g := startGuard(t, shared, guardSpec{cfg: enforcer.Config{Enabled: true, Interval: 100 * time.Millisecond,
		Schedule: enforcer.ScheduleConfig{Time: "04:00", Timezone: "Europe/Madrid"}}, src: src, clock: clock, ownTopic: "__kdg_test_sched"})

	g.waitReconciles(t, 5)
	if got := offsets(t, g.admin, topic, 1)[0].LogStart; got != 0 {
		t.Fatalf("log start offset %d before the window, want 0", got)
	}
	clock.Set(at(0, 4, 0, 5))
	openBase := func() int64 {
		ps := src.Snapshot().LogDirs[0].Partitions
		return ps[0].Segments[len(ps[0].Segments)-1].BaseOffset
	}
	firstOpen := openBase()
	kafkatest.Eventually(t, 20*time.Second, func() error {
		if got := offsets(t, g.admin, topic, 1)[0].LogStart; got != firstOpen {
			return fmt.Errorf("log start offset %d, want %d (every eligible segment)", got, firstOpen)
		}
		return nil
	})

	// New eligible segments after the window wait for the next day.
	produceRounds(t, shared, topic, load{partitions: 1, rounds: 1, records: 60, size: 1000})
	clock.Set(at(0, 4, 30, 0))
	src.ScanOnce()
	g.waitReconciles(t, 5)
	if got := offsets(t, g.admin, topic, 1)[0].LogStart; got != firstOpen {
		t.Fatalf("log start offset moved to %d at 04:30: the window had passed", got)
	}
	clock.Set(at(1, 4, 0, 0))
	second := openBase()
	kafkatest.Eventually(t, 20*time.Second, func() error {
		if got := offsets(t, g.admin, topic, 1)[0].LogStart; got != second {
			return fmt.Errorf("log start offset %d, want %d the next day", got, second)
		}
		return nil
	})
	if n := metric(g.reg, "kafka_disk_guard_actions_total", map[string]string{"action": "scheduled", "result": "ok"}); n != 2 {
		t.Errorf("scheduled actions %v, want 2", n)
	}
}

// R4.4: observe mode performs nothing (ACLs and log start offsets stay)
// and reports the plan that enforcement then carries out.
func TestR4_4DryRunPerformsNothingAndReportsTheSamePlan(t *testing.T) {
	const topic = "dry-run"
	shared.CreateTopic(t, topic, 2, map[string]string{"internal.segment.bytes": "16384"})
	produceRounds(t, shared, topic, load{partitions: 2, rounds: 3, records: 30, size: 1000})
	capacity := &fixedCapacity{}
	mk := func() *scantest.Source {
		return &scantest.Source{LogDir: shared.LogDir, Topics: map[string]bool{topic: true}, Capacity: capacity.get}
	}
	capacity.set(1 << 40)
	capacity.set(uint64(float64(usedBytes(mk())) / 0.95)) // protect band

	const own = "__kdg_test_dry"
	dry := startGuard(t, shared, guardSpec{cfg: enforcer.Config{Interval: 200 * time.Millisecond, Purge: purgeMechanics}, src: mk(), ownTopic: own})
	dry.waitReconciles(t, 5)
	dry.stop()
	if got := offsets(t, dry.admin, topic, 2); got[0].LogStart != 0 || got[1].LogStart != 0 {
		t.Fatalf("observe mode moved log start offsets: %v", got)
	}
	if acls := topicACLs(t, dry.admin, topic); len(acls) != 0 {
		t.Fatalf("observe mode created ACLs: %v", acls)
	}
	if own, err := dry.admin.LoadRecords(context.Background()); (err != nil && !errors.Is(err, enforcer.ErrLedgerMissing)) || len(own.Agents) != 0 {
		t.Fatalf("observe mode wrote an ownership record: %v %v", own, err)
	}
	if v := metric(dry.reg, "kafka_disk_guard_enforcement_enabled", nil); v != 0 {
		t.Errorf("enforcement_enabled %v", v)
	}

	type act struct {
		msg, topic string
		partition  float64
		to, bytes  float64
	}
	cmpAct := func(x, y act) int {
		return cmp.Or(cmp.Compare(x.msg, y.msg), cmp.Compare(x.topic, y.topic), cmp.Compare(x.partition, y.partition))
	}
	collect := func(g *guard, prot string, dels ...string) []act {
		var out []act
		for _, l := range g.logs.lines(append(dels, prot)...) {
			a := act{msg: "protect", topic: l["topic"].(string)}
			if l["msg"] != prot {
				a = act{msg: "delete", topic: l["topic"].(string), partition: l["partition"].(float64), to: l["to_offset"].(float64), bytes: l["bytes"].(float64)}
			}
			out = append(out, a)
		}
		slices.SortFunc(out, cmpAct)
		return out
	}
	planned := collect(dry, "write protection on", "would delete records")
	if len(planned) < 2 {
		t.Fatalf("observe mode reported %v", planned)
	}
	if v := metric(dry.reg, "kafka_disk_guard_actions_total", map[string]string{"result": "dry_run"}); v != float64(len(planned)) {
		t.Errorf("dry_run actions counted %v, logged %d (the plan is reported once, not every pass)", v, len(planned))
	}

	live := startGuard(t, shared, guardSpec{cfg: enforcer.Config{Enabled: true, Interval: 200 * time.Millisecond, Purge: purgeMechanics}, src: mk(), ownTopic: own})
	kafkatest.Eventually(t, 20*time.Second, func() error {
		if n := len(topicACLs(t, live.admin, topic)); n == 0 {
			return errors.New("no protection yet")
		}
		return nil
	})
	live.waitReconciles(t, 3)
	live.stop()
	done := collect(live, "write protection on", "deleted records", "deleted unexpired records")
	if !slices.Equal(planned, done) {
		t.Fatalf("observe mode planned\n%v\nenforcement did\n%v", planned, done)
	}
	t.Logf("plan: %v", planned)
	// Leave the shared broker clean: lift.
	capacity.set(1 << 40)
	lift := startGuard(t, shared, guardSpec{cfg: enforcer.Config{Enabled: true, Interval: 200 * time.Millisecond, Purge: purgeMechanics}, src: mk(), ownTopic: own})
	kafkatest.Eventually(t, 20*time.Second, func() error {
		if acls := topicACLs(t, lift.admin, topic); len(acls) != 0 {
			return fmt.Errorf("still %v", acls)
		}
		return nil
	})
}

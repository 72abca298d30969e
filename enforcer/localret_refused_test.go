package enforcer

import (
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

// R7.4: a lowering Kafka refused is remembered for the topic: the next
// passes of the episode do not send it again (one refusal, not one per
// pass); a change of the topic's configs, or a new episode, tries again.
func TestR7_4RefusedLoweringRemembered(t *testing.T) {
	f := newFakeAdmin(tieredSnap(870))
	f.configs = map[string]map[string]string{"tiered": {LocalRetentionBytesKey: "100000"}}
	f.refuse = func(_ string, v *string) bool { return v != nil && *v == "400" }
	clock := &clockAt{t0}
	e, reg := newTestEnforcer(t, Config{Enabled: true, Interval: time.Second}, tieredSnap(870), f, clock)
	refused := func() float64 {
		return gather(t, reg, "kafka_disk_guard_actions_total", map[string]string{"action": "lower_local_retention", "result": "refused"})
	}
	pass := func(s *agent.Snapshot) {
		t.Helper()
		clock.t = clock.t.Add(time.Second)
		s.Time = clock.t
		src := e.src.(*staticSource)
		src.mu.Lock()
		src.snap = s
		src.mu.Unlock()
		_ = e.Reconcile(t.Context())
	}
	pass(tieredSnap(870))
	if v := refused(); v != 1 {
		t.Fatalf("R7.4/first pass: %v refusals, want 1", v)
	}
	for range 5 {
		pass(tieredSnap(870))
	}
	if v := refused(); v != 1 {
		t.Fatalf("R7.4/refused lowering sent again: %v refusals after 6 passes, want 1", v)
	}
	if v := gather(t, reg, "kafka_disk_guard_local_retention_operator_changed_total", nil); v != 0 {
		t.Errorf("R7.4/a refused lowering read as an operator's change: %v", v)
	}
	// The topic's configs change (an operator sets retention.ms): tried
	// again once.
	changed := func(used uint64) *agent.Snapshot {
		s := tieredSnap(used)
		c := s.Configs["tiered"]
		c.RetentionMs = 3 * 86400000
		s.Configs["tiered"] = c
		return s
	}
	for range 3 {
		pass(changed(870))
	}
	if v := refused(); v != 2 {
		t.Fatalf("R7.4/after a config change: %v refusals, want 2", v)
	}
	// The episode ends (usage under the restore bound), and a new one
	// tries again.
	pass(changed(100))
	for range 3 {
		pass(changed(870))
	}
	if v := refused(); v != 3 {
		t.Fatalf("R7.4/new episode: %v refusals, want 3", v)
	}
	if v, _ := localRetention(f, "tiered"); v != "100000" {
		t.Fatalf("R7.4/operator's value: %q", v)
	}
}

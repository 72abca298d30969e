package enforcer

import (
	"errors"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

// R7.4: the lowered value is never 0 (Kafka would roll the active segment
// at every retention check) and never below remote.copy.lag.bytes (Kafka
// answers INVALID_CONFIG); 1 frees what 0 would.
func TestR7_4LowerFloor(t *testing.T) {
	one := func(used uint64) *agent.Snapshot { return withTiered(snap(used, 1000, tieredPart(0, 5, 2))) }
	cases := []struct {
		name  string
		s     *agent.Snapshot
		lag   int64
		want  int64
		freed int64
	}{
		// 1000 of 1000: 201 bytes to free down to the restore bound,
		// more than the two uploaded segments (200): the gentlest value
		// that frees both (local 500 -> 300), not 0.
		{"never 0: all it can free at the gentlest value", one(1000), -1, 300, 200},
		{"remote.copy.lag.bytes 0 is no floor", one(1000), 0, 300, 200},
		// 1020: 221 bytes; at 300 both partitions free two segments, but
		// remote.copy.lag.bytes 350 allows only what 350 frees: one each.
		{"never below remote.copy.lag.bytes", tieredSnap(1020), 350, 400, 200},
		// 870: the gentlest value (400) is above the floor: unchanged.
		{"a gentler value stays", tieredSnap(870), 250, 400, 200},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := c.s
			cfg := s.Configs["tiered"]
			cfg.RemoteCopyLagBytes = c.lag
			s.Configs["tiered"] = cfg
			o := withEvidence(Observed{Snapshot: s, Offsets: brokerOffsets(s)})
			goals := Desired(Policy{Profile: CloudProfile(), HysteresisPoints: 5}, o)
			got := goals[0].Lower
			if got.values["tiered"] != c.want || got.freed != c.freed {
				t.Fatalf("R7.4/lower %v freed %d, want %d freed %d", got.values, got.freed, c.want, c.freed)
			}
			if v := got.values["tiered"]; v < 1 || (c.lag > 0 && v < c.lag) {
				t.Fatalf("R7.4/value %d below the floor", v)
			}
		})
	}
	p0, p1 := tieredPart(0, 5, 4), tieredPart(1, 3, 2)
	parts := []*agent.Partition{&p0, &p1}
	if freedAt(parts, false, 1) != freedAt(parts, false, 0) {
		t.Errorf("R7.4/1 frees %d, 0 frees %d", freedAt(parts, false, 1), freedAt(parts, false, 0))
	}
}

// R7.4: the local.retention.bytes Kafka 4.4's LogConfig accepts, and the
// value a restore picks: the operator's when accepted, else the nearest
// accepted one.
func TestR7_4AcceptedLocalBytes(t *testing.T) {
	cfg := func(retBytes, lag int64, copyOff bool) agent.TopicConfig {
		c := agent.DefaultTopicConfig()
		c.RemoteStorage, c.RetentionBytes, c.RemoteCopyLagBytes, c.RemoteCopyDisable = true, retBytes, lag, copyOff
		return c
	}
	cases := []struct {
		name string
		v    int64
		c    agent.TopicConfig
		want int64
		ok   bool
	}{
		{"unlimited retention: anything", 5000, cfg(-1, -1, false), 5000, true},
		{"-2 inherits", -2, cfg(1000, -1, false), -2, true},
		{"above retention.bytes: retention.bytes", 5000, cfg(1000, -1, false), 1000, false},
		{"-1 under a size limit: retention.bytes", -1, cfg(1000, -1, false), 1000, false},
		{"below remote.copy.lag.bytes: the lag", 100, cfg(-1, 300, false), 300, false},
		{"equal to remote.copy.lag.bytes", 300, cfg(-1, 300, false), 300, true},
		{"-1 with a lag: no limit, accepted", -1, cfg(-1, 300, false), -1, true},
		{"copy disabled: -2 or retention.bytes", 500, cfg(1000, -1, true), -2, false},
		{"copy disabled: equal", 1000, cfg(1000, -1, true), 1000, true},
	}
	for _, c := range cases {
		got, ok := AcceptedLocalBytes(c.v, c.c)
		if got != c.want || ok != c.ok {
			t.Errorf("R7.4/%s: %d %v, want %d %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

// R7.4: Kafka refusing the lowered value (INVALID_CONFIG) is its own
// result and log line, and the next pass does not take the operator's
// unchanged value for an operator's change.
func TestR7_4RefusedLowering(t *testing.T) {
	f := newFakeAdmin(tieredSnap(870))
	f.configs = map[string]map[string]string{"tiered": {LocalRetentionBytesKey: "100000"}}
	f.refuse = func(_ string, v *string) bool { return v != nil && *v == "400" }
	clock := &clockAt{t0}
	e, reg := newTestEnforcer(t, Config{Enabled: true, Interval: time.Second}, tieredSnap(870), f, clock)
	if err := e.Reconcile(t.Context()); !errors.Is(err, ErrConfigRefused) {
		t.Fatalf("R7.4/pass error %v, want the refusal", err)
	}
	if v, _ := localRetention(f, "tiered"); v != "100000" {
		t.Fatalf("R7.4/refused value in place: %q", v)
	}
	if v := gather(t, reg, "kafka_disk_guard_actions_total", map[string]string{"action": "lower_local_retention", "result": "refused"}); v != 1 {
		t.Errorf("R7.4/actions_total{lower_local_retention,refused} %v, want 1", v)
	}
	if v := gather(t, reg, "kafka_disk_guard_actions_total", map[string]string{"action": "lower_local_retention", "result": "error"}); v != 0 {
		t.Errorf("R7.4/a refusal counted as an error: %v", v)
	}
	clock.t = clock.t.Add(time.Second)
	_ = e.Reconcile(t.Context()) // gives the claim up, and tries again (refused again)
	if v := gather(t, reg, "kafka_disk_guard_local_retention_operator_changed_total", nil); v != 0 {
		t.Errorf("R7.4/a refused lowering read as an operator's change: %v", v)
	}
	if v, _ := localRetention(f, "tiered"); v != "100000" {
		t.Fatalf("R7.4/operator's value: %q", v)
	}
}

// R7.4: a restore Kafka refuses (the operator lowered retention.bytes
// below their local.retention.bytes meanwhile) deletes the override, so
// the topic inherits (retention.bytes), and says so.
func TestR7_4RefusedRestoreInherits(t *testing.T) {
	f := newFakeAdmin(tieredSnap(870))
	f.configs = map[string]map[string]string{"tiered": {LocalRetentionBytesKey: "100000"}}
	clock := &clockAt{t0}
	e, reg := newTestEnforcer(t, Config{Enabled: true, Interval: time.Second}, tieredSnap(870), f, clock)
	passAt(t, e, clock, tieredSnap(870))
	if v, _ := localRetention(f, "tiered"); v != "400" {
		t.Fatalf("R7.4/local.retention.bytes %q, want 400", v)
	}
	f.mu.Lock()
	f.refuse = func(_ string, v *string) bool { return v != nil && *v == "100000" }
	f.mu.Unlock()
	clock.t = clock.t.Add(time.Second)
	passAt(t, e, clock, tieredSnap(790))
	if v, set := localRetention(f, "tiered"); set {
		t.Fatalf("R7.4/restored %q, want the override deleted", v)
	}
	if v := gather(t, reg, "kafka_disk_guard_actions_total", map[string]string{"action": "restore_local_retention", "result": "ok"}); v != 1 {
		t.Errorf("R7.4/actions_total{restore_local_retention,ok} %v", v)
	}
	if len(f.records.Agents[1].ConfigClaims()) != 0 {
		t.Fatalf("R7.4/claim kept after the restore: %+v", f.records.Agents[1])
	}
}

package enforcer

import (
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// actionSeries lists the series of the action counters with their values.
func actionSeries(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		switch mf.GetName() {
		case "kafka_disk_guard_actions_total", "kafka_disk_guard_action_bytes_total", "kafka_disk_guard_unexpired_deleted_bytes_total":
		default:
			continue
		}
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			sort.Strings(ls)
			out[mf.GetName()+"{"+strings.Join(ls, ",")+"}"] = m.GetCounter().GetValue()
		}
	}
	return out
}

// R3.6: the counters dashboards plot exist at zero from the start, for the
// label values the enforcer will use, so panels and increase() show 0 and
// not "No data" until the first action.
func TestActionCountersStartAtZero(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want []string
	}{
		{"cloud", Config{Profile: ProfileCloud, Enabled: true}, []string{
			`kafka_disk_guard_actions_total{action=scheduled,band=scheduled,result=ok}`,
			`kafka_disk_guard_actions_total{action=periodic,band=periodic,result=dry_run}`,
			`kafka_disk_guard_actions_total{action=purge,band=purge,result=error}`,
			`kafka_disk_guard_actions_total{action=purge,band=protect,result=ok}`,
			`kafka_disk_guard_actions_total{action=protect,band=protect,result=ok}`,
			`kafka_disk_guard_actions_total{action=unprotect,band=protect,result=ok}`,
			`kafka_disk_guard_action_bytes_total{action=purge,band=purge}`,
			`kafka_disk_guard_unexpired_deleted_bytes_total{band=protect}`,
			`kafka_disk_guard_unexpired_deleted_bytes_total{band=purge}`,
		}},
		{"local", Config{Profile: ProfileLocal}, []string{
			`kafka_disk_guard_actions_total{action=purge_fraction,band=purge_fraction,result=dry_run}`,
			`kafka_disk_guard_actions_total{action=protect,band=protect,result=dry_run}`,
			`kafka_disk_guard_unexpired_deleted_bytes_total{band=purge_fraction}`,
		}},
		{"seed 000 (custom, no protection)", Config{Profile: ProfileCustom, Bands: Seed000Bands()}, []string{
			`kafka_disk_guard_actions_total{action=scheduled,band=scheduled,result=dry_run}`,
			`kafka_disk_guard_action_bytes_total{action=purge,band=purge}`,
			`kafka_disk_guard_unexpired_deleted_bytes_total{band=purge}`,
		}},
		{"serverless: no actions, no series", Config{Profile: ProfileServerless}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := fullSnapshot()
			_, reg := newTestEnforcer(t, tc.cfg, s, newFakeAdmin(s), &clockAt{t0})
			got := actionSeries(t, reg)
			for k, v := range got {
				if v != 0 {
					t.Errorf("%s = %v before any action", k, v)
				}
			}
			for _, w := range tc.want {
				if _, ok := got[w]; !ok {
					t.Errorf("missing %s; have %v", w, slices.Sorted(maps.Keys(got)))
				}
			}
			if tc.want == nil && len(got) != 0 {
				t.Errorf("series %v for a profile without actions", slices.Sorted(maps.Keys(got)))
			}
		})
	}
}

// The initialised series are the ones the enforcer uses: acting (purge and
// protection in the protect band, enforcing and in dry run) adds none.
func TestActionCountersInitialisedWithTheLabelsApplyUses(t *testing.T) {
	for _, enabled := range []bool{true, false} {
		s := fullSnapshot()
		e, reg := newTestEnforcer(t, Config{Enabled: enabled}, s, newFakeAdmin(s), &clockAt{t0})
		before := actionSeries(t, reg)
		if err := e.Reconcile(t.Context()); err != nil {
			t.Fatal(err)
		}
		after := actionSeries(t, reg)
		var acted bool
		for k, v := range after {
			if _, ok := before[k]; !ok {
				t.Errorf("enabled=%v: %s appeared only when acting", enabled, k)
			}
			acted = acted || v > 0
		}
		if !acted {
			t.Fatalf("enabled=%v: no action counted: %v", enabled, after)
		}
	}
}

package exporter

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// TestCollectEmitsInRegistryOrder: every family that grows with topics
// (or partitions) comes out of Collect in the order the registry sorts it to before encoding (label values in
// label-name order), so that sort is one pass. The output does not depend
// on it (the golden tests check the output); the scrape time does: at 10k
// partitions the sort of an unordered emission was 40% of a scrape.
func TestCollectEmitsInRegistryOrder(t *testing.T) {
	synthetic := syntheticSnapshot(3, 12, 3) // partitions 0-11: "10" sorts before "2"
	second := synthetic.LogDirs[0]
	second.Path = "/a/data" // sorts before the first log dir
	synthetic.LogDirs = append(synthetic.LogDirs, second)
	for _, per := range []bool{false, true} {
		for name, snap := range map[string]staticSource{"fixture": {fixtureSnapshot()}, "synthetic": {synthetic}} {
			t.Run(fmt.Sprintf("%s per_partition=%v", name, per), func(t *testing.T) {
				c := newCollector(Config{PerPartition: per}.WithDefaults(), discard(), snap)
				ch := make(chan prometheus.Metric)
				go func() {
					v := c.viewOf(snap.snap)
					c.collectTopics(ch, v, fixtureNow())
					c.collectReserved(ch, v)
					close(ch)
				}()
				families := map[string][]string{} // desc -> label values of each series, in emission order
				for m := range ch {
					var out dto.Metric
					if err := m.Write(&out); err != nil {
						t.Fatal(err)
					}
					if !slices.IsSortedFunc(out.Label, func(a, b *dto.LabelPair) int { return strings.Compare(a.GetName(), b.GetName()) }) {
						t.Fatalf("%s: labels not sorted by name: %v", m.Desc(), out.Label)
					}
					var values []string
					for _, lp := range out.Label {
						values = append(values, lp.GetValue())
					}
					key := m.Desc().String()
					families[key] = append(families[key], strings.Join(values, "\xff"))
				}
				if len(families) < 6 {
					t.Fatalf("%d families collected, want the topic families too", len(families))
				}
				for desc, series := range families {
					if i := unsortedAt(series); i >= 0 {
						t.Errorf("%s: series %d %q comes after %q", desc, i, series[i], series[i-1])
					}
				}
			})
		}
	}
}

// unsortedAt is the first index of series smaller than its predecessor, or
// -1. Label values are compared one by one, as the registry compares them.
func unsortedAt(series []string) int {
	for i := 1; i < len(series); i++ {
		a, b := strings.Split(series[i-1], "\xff"), strings.Split(series[i], "\xff")
		if slices.Compare(a, b) > 0 {
			return i
		}
	}
	return -1
}

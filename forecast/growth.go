package forecast

import "github.com/kafka-disk-guard/kafka-disk-guard/agent"

// Growth feeds snap to the ingress estimate (as a scrape does) and
// returns each log dir's net growth in bytes per second, the rate the
// time to band uses: the larger of the projection's growth and the sum of
// its live partitions' observed append rates (the estimate needs a
// closed 5-minute bucket; the append rate answers at once and ignores
// deletions, the safe side for a deadline). The move planner's input
// (enforcer.MoveDirs).
func (c *Collector) Growth(snap *agent.Snapshot) map[string]float64 {
	out := map[string]float64{}
	if snap == nil {
		return out
	}
	c.rates.Observe(snap)
	for _, d := range Project(snap, c.rates.Snapshot()) {
		out[d.Path] = d.GrowthBytesPerSecond
	}
	for i := range snap.LogDirs {
		ld := &snap.LogDirs[i]
		var sum float64
		for p := range livePartitions(ld) {
			sum += p.WriteRateBytesPerSecond
		}
		out[ld.Path] = max(out[ld.Path], sum)
	}
	return out
}

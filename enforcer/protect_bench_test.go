package enforcer

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

// scaleObs is the observation of a pass over one log dir of n topics of
// one partition at 95% (five of them growing), allow.everyone as given:
// at the crossing (held: false, nothing in place) or once protected
// (held: this agent's record claims every topic and the bindings are in
// place).
func scaleObs(n int, allowEveryone AllowEveryone, held bool) Observed {
	parts := make([]agent.Partition, n)
	for i := range parts {
		tp := fmt.Sprintf("scale.orders-service.events-v1-%05d", i)
		parts[i] = growing(tp, 0, 0, 0)
		if i%(n/5) == 1 {
			parts[i].WriteRateBytesPerSecond, parts[i].AppendedBytes = float64(i), uint64(i)
		}
	}
	s := snap(950, 1000, parts...)
	o := protObs(s, held, recs(), nil)
	o.Protection.AllowEveryone = allowEveryone
	if held {
		pp := planOf(o)
		o.Protection.Records = recs(pp.Record)
		o.Protection.ACLs = flatten(pp.Create)
	}
	return o
}

// BenchmarkPlanProtectTenThousandTopics is the CPU cost of a pass's plan
// (Desired and PlanActions) over 10,000 topics: at the crossing, where it
// delays the first CreateAcls, and once protected (every pass after), in
// the deny shape (one binding a topic) and the absence shape (five).
//
//	go test -run '^$' -bench PlanProtect -benchmem ./enforcer/
func BenchmarkPlanProtectTenThousandTopics(b *testing.B) {
	for _, c := range []struct {
		name  string
		allow AllowEveryone
		held  bool
	}{
		{"deny/crossing", AllowEveryoneFalse, false},
		{"deny/protected", AllowEveryoneFalse, true},
		{"absence/crossing", AllowEveryoneTrue, false},
		{"absence/protected", AllowEveryoneTrue, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			o := scaleObs(10000, c.allow, c.held)
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime()
			for range b.N {
				pp := planOf(o)
				if c.held != (len(pp.Create) == 0) {
					b.Fatalf("%d topics to create", len(pp.Create))
				}
			}
			// The process's CPU time (the collector's included): on a
			// loaded machine the wall time a pass says little.
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e6, "cpu-ms/op")
		})
	}
}

// cpuTime is the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

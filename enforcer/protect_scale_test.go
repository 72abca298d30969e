package enforcer

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

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

// R8.3: the operator's ACLs decide a topic's shape however they match it
// (literal, the literal "*", prefixed), as ledger.ShapeFor matches them.
func TestR8_3ShapeByOperatorACLsIndexed(t *testing.T) {
	allowWrite := func(topic, pattern, principal string) ACL {
		return ACL{Topic: topic, Pattern: pattern, Principal: principal, Host: AnyHost, Operation: OpWrite, Permission: PermAllow}
	}
	s := snap(950, 1000, growing("orders", 0, 0, 0), growing("other", 0, 0, 0), growing("payments", 0, 0, 0))
	acls := []ACL{
		allowWrite("ord", PatternPrefixed, "User:bob"),
		allowWrite("*", PatternLiteral, "User:carol"),
		allowWrite("payments", "", "User:dave"),
		allowWrite("orders", "match", "User:erin"), // matches no topic by name
	}
	o := protObs(s, false, recs(), acls)
	o.Protection.ExemptPrincipals = []string{"User:carol"}
	pp := planOf(o)
	got := map[string][]string{}
	for _, tp := range pp.Create {
		for _, a := range tp.ACLs {
			got[tp.Topic] = append(got[tp.Topic], a.Permission+" "+a.Operation+" "+a.Principal)
		}
	}
	want := map[string][]string{"orders": {"DENY WRITE User:bob"}, "payments": {"DENY WRITE User:dave"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("R8.3/bindings %v, want %v", got, want)
	}
	// "other": only the exempt User:carol may write: nothing to add.
}

// firstCreate notes the process's CPU time when the first CreateAcls of a
// pass is sent.
type firstCreate struct {
	*fakeAdmin
	at time.Duration
}

func (f *firstCreate) CreateACLs(ctx context.Context, acls []ACL) error {
	if f.at == 0 {
		f.at = cpuTime()
	}
	return f.fakeAdmin.CreateACLs(ctx, acls)
}

// BenchmarkCrossingPassTenThousandTopics is the CPU time of the pass that
// crosses the protect band over one log dir of 10,000 topics, against
// fake brokers that answer at once: until its first CreateAcls is sent
// (observe, plan, the record claiming every topic encoded and stored),
// and the whole pass (every batch).
//
//	go test -run '^$' -bench CrossingPass ./enforcer/
func BenchmarkCrossingPassTenThousandTopics(b *testing.B) {
	for _, c := range []struct {
		name  string
		allow AllowEveryone
	}{{"deny", AllowEveryoneFalse}, {"absence", AllowEveryoneTrue}} {
		b.Run(c.name, func(b *testing.B) {
			s := scaleObs(10000, c.allow, false).Snapshot
			var first, pass time.Duration
			for range b.N {
				b.StopTimer()
				f := &firstCreate{fakeAdmin: newFakeAdmin(s)}
				f.everyone = c.allow
				e, err := New(Config{Enabled: true, BrokerID: new(int32(1)), Purge: lenientPurge}, slog.New(slog.NewTextHandler(io.Discard, nil)),
					prometheus.NewRegistry(), Deps{Snapshots: &staticSource{snap: s, ch: make(chan struct{}, 1)}, Admin: f,
						Clock: &clockAt{t0}, Evidence: newFakeEvidence(s)})
				if err != nil {
					b.Fatal(err)
				}
				runtime.GC()
				b.StartTimer()
				cpu0 := cpuTime()
				if err := e.Reconcile(b.Context()); err != nil {
					b.Fatal(err)
				}
				pass += cpuTime() - cpu0
				if f.at == 0 {
					b.Fatal("nothing created")
				}
				first += f.at - cpu0
			}
			b.ReportMetric(float64(first)/float64(b.N)/1e6, "cpu-ms-first-create")
			b.ReportMetric(float64(pass)/float64(b.N)/1e6, "cpu-ms-pass")
		})
	}
}

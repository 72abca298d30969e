package enforcer

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// cordonCase builds the pure planner's inputs: the broker's log dirs
// ("/d1", "/d2", ... as both the guard's and the broker's paths), their
// usage, and the broker's cordon state.
func cordonCase(usage map[string]float64, st BrokerCordons, me Record, lifted bool) (Observed, []DirGoal) {
	entries := map[string]string{}
	var goals []DirGoal
	for _, d := range slices.Sorted(func(yield func(string) bool) {
		for d := range usage {
			if !yield(d) {
				return
			}
		}
	}) {
		entries[d] = d
		goals = append(goals, DirGoal{LogDir: d, Usage: usage[d], Band: Band{Name: "periodic"}})
	}
	if st.MetadataVersion == 0 {
		st.MetadataVersion = 31
	}
	if st.LogDirs == nil {
		st.LogDirs = slices.Sorted(func(yield func(string) bool) {
			for d := range usage {
				if !yield(d) {
					return
				}
			}
		})
	}
	recs := ledger.NewRecords()
	me.BrokerID = 1
	recs.Agents[1] = me
	if lifted {
		recs.Lifts[1] = Lift{ID: "op-1", BrokerID: 1, Kind: LiftOperator}
	}
	co := &CordonObserved{Read: true, State: st, Entries: entries, From: 0.75, Under: 0.70, Seen: map[string]bool{}, Declined: map[string]bool{}}
	for _, c := range me.CordonClaims() {
		if slices.Contains(st.Dynamic, c.Value) {
			co.Seen[c.Value] = true
		}
	}
	return Observed{Protection: &ProtectionObserved{BrokerID: 1, Records: recs, Enforcing: true, Cordons: co}}, goals
}

func dirs(cs []CordonChange) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Dir)
	}
	return out
}

func claimValues(os []Owned, releasing bool) []string {
	var out []string
	for _, o := range os {
		if o.Kind == OwnedCordon && o.Releasing == releasing {
			out = append(out, o.Value)
		}
	}
	return out
}

func held(pp ProtectionPlan) map[string]string {
	out := map[string]string{}
	for _, h := range pp.CordonHeld {
		out[h.LogDir] = h.Reason
	}
	return out
}

// R3.8: a log dir at the cordon bound is claimed and cordoned when its
// broker keeps another uncordoned log dir; the fullest goes first and the
// last uncordoned one is never cordoned (held, reason last_log_dir).
func TestR3_8CordonNeverTakesTheLastLogDir(t *testing.T) {
	for _, tc := range []struct {
		name       string
		usage      map[string]float64
		st         BrokerCordons
		want, last []string
	}{
		{"one of two", map[string]float64{"/d1": 0.80, "/d2": 0.40}, BrokerCordons{}, []string{"/d1"}, nil},
		{"the only log dir", map[string]float64{"/d1": 0.95}, BrokerCordons{}, nil, []string{"/d1"}},
		{"both full: the fuller", map[string]float64{"/d1": 0.80, "/d2": 0.90}, BrokerCordons{}, []string{"/d2"}, []string{"/d1"}},
		{"the other cordoned by the operator", map[string]float64{"/d1": 0.80, "/d2": 0.40}, BrokerCordons{Dynamic: []string{"/d2"}}, nil, []string{"/d1"}},
		{"at the bound exactly", map[string]float64{"/d1": 0.75, "/d2": 0.10, "/d3": 0.10}, BrokerCordons{}, []string{"/d1"}, nil},
		{"under the bound", map[string]float64{"/d1": 0.7499, "/d2": 0.10}, BrokerCordons{}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, goals := cordonCase(tc.usage, tc.st, Record{}, false)
			var pp ProtectionPlan
			out := planCordons(o, goals, Record{}, cordonMode{}, &pp)
			if got := dirs(pp.Cordon); !slices.Equal(got, tc.want) {
				t.Errorf("cordon %v, want %v", got, tc.want)
			}
			if got := claimValues(out, false); !slices.Equal(got, tc.want) {
				t.Errorf("claims %v, want %v", got, tc.want)
			}
			var last []string
			for d, r := range held(pp) {
				if r == CordonHeldLastLogDir {
					last = append(last, d)
				}
			}
			slices.Sort(last)
			if !slices.Equal(last, tc.last) {
				t.Errorf("held as last log dir %v, want %v", last, tc.last)
			}
		})
	}
}

// R8.6 for cordons: a log dir already cordoned that no record claims is
// the operator's: never claimed, so never uncordoned.
func TestR3_8OperatorCordonIsNeverAdopted(t *testing.T) {
	o, goals := cordonCase(map[string]float64{"/d1": 0.90, "/d2": 0.10, "/d3": 0.1}, BrokerCordons{Dynamic: []string{"/d1"}}, Record{}, false)
	var pp ProtectionPlan
	out := planCordons(o, goals, Record{}, cordonMode{}, &pp)
	if len(out) != 0 || len(pp.Cordon) != 0 || len(pp.Uncordon) != 0 {
		t.Fatalf("claims %v, cordon %v, uncordon %v: the operator's cordon was adopted", out, pp.Cordon, pp.Uncordon)
	}
	if got := dirs(pp.OperatorCordons); !slices.Equal(got, []string{"/d1"}) {
		t.Errorf("operator's cordons %v, want [/d1]", got)
	}
	// "*" cordons every log dir: nothing to do either.
	o, goals = cordonCase(map[string]float64{"/d1": 0.90, "/d2": 0.10}, BrokerCordons{Dynamic: []string{"*"}}, Record{}, false)
	pp = ProtectionPlan{}
	if out := planCordons(o, goals, Record{}, cordonMode{}, &pp); len(out) != 0 || len(pp.Cordon) != 0 {
		t.Fatalf("with *: claims %v, cordon %v", out, pp.Cordon)
	}
}

// R3.7/R8.5 for cordons: a claim stays through the hysteresis, is given
// up under it (releasing, uncordoned), and leaves the record only once
// read back gone; an operator's removal drops it and is left alone; an
// operator's lift releases it; without a read the claims stay.
func TestR3_8CordonLifecycle(t *testing.T) {
	claim := ledger.CordonClaim("/d1")
	releasing := claim
	releasing.Releasing = true
	other := map[string]float64{"/d2": 0.1, "/d3": 0.1}
	with := func(u float64) map[string]float64 {
		m := map[string]float64{"/d1": u}
		for k, v := range other {
			m[k] = v
		}
		return m
	}
	for _, tc := range []struct {
		name                string
		usage               float64
		st                  BrokerCordons
		me                  Record
		lifted, wantNothing bool
		held, releasingOut  []string
		uncordon, cordon    []string
		dropped, seen       bool
	}{
		{name: "kept in the hysteresis", usage: 0.72, st: BrokerCordons{Dynamic: []string{"/d1"}}, me: Record{Owned: []Owned{claim}}, held: []string{"/d1"}},
		{name: "given up under it", usage: 0.69, st: BrokerCordons{Dynamic: []string{"/d1", "/op"}}, me: Record{Owned: []Owned{claim}},
			releasingOut: []string{"/d1"}, uncordon: []string{"/d1"}},
		{name: "releasing, still there: retried", usage: 0.5, st: BrokerCordons{Dynamic: []string{"/d1"}}, me: Record{Owned: []Owned{releasing}},
			releasingOut: []string{"/d1"}, uncordon: []string{"/d1"}},
		{name: "releasing, read back gone: dropped", usage: 0.5, st: BrokerCordons{Dynamic: []string{"/op"}}, me: Record{Owned: []Owned{releasing}}},
		{name: "operator uncordoned it", usage: 0.9, st: BrokerCordons{}, me: Record{Owned: []Owned{claim}}, seen: true, dropped: true},
		{name: "never read back in place: appended again", usage: 0.9, st: BrokerCordons{}, me: Record{Owned: []Owned{claim}},
			held: []string{"/d1"}, cordon: []string{"/d1"}},
		{name: "operator's lift", usage: 0.9, st: BrokerCordons{Dynamic: []string{"/d1"}}, me: Record{Owned: []Owned{claim}}, lifted: true,
			releasingOut: []string{"/d1"}, uncordon: []string{"/d1"}},
		{name: "observe mode lifts what it owns", usage: 0.9, st: BrokerCordons{Dynamic: []string{"/d1"}}, me: Record{Owned: []Owned{claim}}, wantNothing: true,
			releasingOut: []string{"/d1"}, uncordon: []string{"/d1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.st
			st.LogDirs = []string{"/d1", "/d2", "/d3"}
			o, goals := cordonCase(with(tc.usage), st, tc.me, tc.lifted)
			if tc.seen {
				o.Protection.Cordons.Seen["/d1"] = true
			}
			var pp ProtectionPlan
			out := planCordons(o, goals, tc.me, cordonMode{wantNothing: tc.wantNothing}, &pp)
			if got := claimValues(out, false); !slices.Equal(got, tc.held) {
				t.Errorf("held claims %v, want %v", got, tc.held)
			}
			if got := claimValues(out, true); !slices.Equal(got, tc.releasingOut) {
				t.Errorf("releasing claims %v, want %v", got, tc.releasingOut)
			}
			if got := dirs(pp.Uncordon); !slices.Equal(got, tc.uncordon) {
				t.Errorf("uncordon %v, want %v", got, tc.uncordon)
			}
			if got := dirs(pp.Cordon); !slices.Equal(got, tc.cordon) {
				t.Errorf("cordon %v, want %v", got, tc.cordon)
			}
			if got := len(pp.CordonDropped) > 0; got != tc.dropped {
				t.Errorf("dropped %v, want %v", pp.CordonDropped, tc.dropped)
			}
		})
	}
	// Not read this pass: the claims stay as they are.
	o, goals := cordonCase(with(0.1), BrokerCordons{}, Record{Owned: []Owned{claim, releasing}}, false)
	o.Protection.Cordons.Read = false
	var pp ProtectionPlan
	if out := planCordons(o, goals, Record{Owned: []Owned{claim}}, cordonMode{}, &pp); len(out) != 1 || !pp.Empty() {
		t.Errorf("unread: claims %v, plan %+v", out, pp)
	}
}

// A cluster whose metadata.version cannot cordon, or a cordoned.log.dirs
// from server.properties (a per-broker value would override it), or a
// log dir no log.dirs entry names: reported as held, nothing claimed.
func TestR3_8CordonHeldReasons(t *testing.T) {
	for _, tc := range []struct {
		name    string
		st      BrokerCordons
		unmatch bool
		want    string
	}{
		{name: "metadata.version 4.2", st: BrokerCordons{MetadataVersion: 29}, want: CordonHeldUnsupported},
		{name: "inherited", st: BrokerCordons{Inherited: []string{"/d3"}}, want: CordonHeldInherited},
		{name: "unmatched", unmatch: true, want: CordonHeldUnmatched},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, goals := cordonCase(map[string]float64{"/d1": 0.9, "/d2": 0.1, "/d3": 0.1}, tc.st, Record{}, false)
			if tc.unmatch {
				delete(o.Protection.Cordons.Entries, "/d1")
			}
			var pp ProtectionPlan
			out := planCordons(o, goals, Record{}, cordonMode{}, &pp)
			if len(out) != 0 || len(pp.Cordon) != 0 {
				t.Fatalf("claims %v, cordon %v", out, pp.Cordon)
			}
			if got := held(pp)["/d1"]; got != tc.want {
				t.Errorf("held %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCordonBound(t *testing.T) {
	p := Policy{Profile: CloudProfile(), HysteresisPoints: 5}
	on, off := true, false
	at := 70.0
	for _, tc := range []struct {
		c    CordonConfig
		want float64
	}{
		{CordonConfig{}, 0.75},
		{CordonConfig{Enabled: &on, AtPercent: &at}, 0.70},
		{CordonConfig{Enabled: &off}, math.Inf(1)},
		// The admission limit cordons too when it is the lower bound.
		{CordonConfig{AdmissionLimitPercent: 90}, 0.75},
		{CordonConfig{AdmissionLimitPercent: 60}, 0.60},
		{CordonConfig{AtPercent: &at, AdmissionLimitPercent: 65}, 0.65},
		{CordonConfig{Enabled: &off, AdmissionLimitPercent: 60}, math.Inf(1)},
	} {
		if got := p.cordonFrom(tc.c); got != tc.want {
			t.Errorf("cordonFrom(%+v) = %v, want %v", tc.c, got, tc.want)
		}
	}
	// A profile without a second band cordons nothing unless atPercent is
	// set: the admission limit alone does not switch cordoning on.
	one := Policy{Profile: Profile{Name: "one", Bands: CloudProfile().Bands[:1]}}
	if got := one.cordonFrom(CordonConfig{AdmissionLimitPercent: 60}); !math.IsInf(got, 1) {
		t.Errorf("one band, admission 60: cordonFrom = %v, want +Inf", got)
	}
	if got := one.cordonFrom(CordonConfig{AtPercent: &at, AdmissionLimitPercent: 60}); got != 0.60 {
		t.Errorf("one band, atPercent 70, admission 60: cordonFrom = %v, want 0.6", got)
	}
	bad := 0.0
	if err := (CordonConfig{AtPercent: &bad}).validate(); err == nil {
		t.Error("atPercent 0 accepted")
	}
}

// cordonAdmin is the fake admin with a broker's dynamic cordoned.log.dirs.
type cordonAdmin struct {
	*fakeAdmin
	cordons map[int32][]string
	failing int // the next n UncordonLogDir calls fail
}

func (f *cordonAdmin) LogDirCordons(_ context.Context, node int32) (BrokerCordons, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return BrokerCordons{MetadataVersion: 31, LogDirs: []string{"/d1", "/d2"}, Dynamic: slices.Clone(f.cordons[node])}, nil
}

func (f *cordonAdmin) CordonLogDir(_ context.Context, node int32, dir string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !slices.Contains(f.cordons[node], dir) {
		f.cordons[node] = append(f.cordons[node], dir)
	}
	return nil
}

func (f *cordonAdmin) UncordonLogDir(_ context.Context, node int32, dir string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failing > 0 {
		f.failing--
		return errors.New("REQUEST_TIMED_OUT")
	}
	f.cordons[node] = slices.DeleteFunc(f.cordons[node], func(d string) bool { return d == dir })
	return nil
}

// R8.1/R8.5 for cordons: an agent that died with a log dir of its broker
// cordoned is lifted by a peer after the lease: the peer subtracts the
// claimed entry (and only it: the operator's stays), retrying a failed
// SUBTRACT on later passes; protection lift does the same and reads it
// back.
func TestR3_8PeerUncordonsAfterTheLease(t *testing.T) {
	_, calm := protectSnaps()
	f := &cordonAdmin{fakeAdmin: newFakeAdmin(calm()), cordons: map[int32][]string{2: {"/op", "/d1"}}, failing: 1}
	f.records.Agents[2] = Record{Version: ledger.RecordVersion, BrokerID: 2, Instance: "agent-2", Renewed: t0, LeaseMs: 10000,
		Owned: []Owned{ledger.CordonClaim("/d1")}}
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, Interval: time.Second, Protection: ProtectionConfig{LeaseDuration: 10 * time.Second}}
	peer, _ := enforcerAs(t, 1, cfg, calm(), f, clock)
	for range 30 {
		clock.t = clock.t.Add(time.Second)
		s := calm()
		s.Time = clock.t
		peer.src.(*staticSource).snap = s
		_ = peer.Reconcile(t.Context())
	}
	if _, ok := f.records.PendingLift(2); !ok {
		t.Fatal("no lift written")
	}
	if got := f.cordons[2]; !slices.Equal(got, []string{"/op"}) {
		t.Fatalf("cordoned.log.dirs of broker 2 after the peer's lift: %v, want only the operator's [/op]", got)
	}

	// protection lift, on an entry left in place: subtracted and read back.
	f.cordons[2] = []string{"/op", "/d1"}
	res, err := ledger.LiftProtection(t.Context(), f, ledger.LiftRequest{Broker: 2, By: "alice", Now: clock.t})
	if err != nil || len(res.Remaining) != 0 || !slices.Equal(f.cordons[2], []string{"/op"}) {
		t.Fatalf("lift: %+v, %v; cordons %v", res, err, f.cordons[2])
	}
	// A failed SUBTRACT: the lift says what is still in place.
	f.cordons[2], f.failing = []string{"/op", "/d1"}, 1
	res, err = ledger.LiftProtection(t.Context(), f, ledger.LiftRequest{Broker: 2, By: "alice", Now: clock.t})
	if err == nil || !slices.Equal(res.Remaining, []string{"cordon of log dir /d1 on broker 2"}) {
		t.Fatalf("failed lift: %+v, %v", res, err)
	}
}

// protection status lists the guard's cordons (in place, lifted) and the
// operator's beside them; a releasing cordon still in place shows as such.
func TestR3_8StatusShowsCordons(t *testing.T) {
	releasing := ledger.CordonClaim("/d2")
	releasing.Releasing = true
	recs := ledger.NewRecords()
	recs.Agents[2] = Record{BrokerID: 2, Renewed: t0, LeaseMs: 60000, Owned: []Owned{ledger.CordonClaim("/d1"), releasing}}
	st := ledger.BuildStatus(ledger.StatusInput{Records: recs, Now: t0.Add(time.Second),
		Cordons: map[int32]BrokerCordons{2: {LogDirs: []string{"/d1", "/d2", "/d3"}, Dynamic: []string{"/d3", "/d1", "/d2"}}}})
	b := st.Brokers[0]
	if len(b.Cordons) != 1 || b.Cordons[0] != (ledger.CordonStatus{Dir: "/d1", InPlace: true, Read: true, Live: true}) {
		t.Errorf("cordons %+v", b.Cordons)
	}
	if !slices.Equal(b.OperatorCordons, []string{"/d3"}) {
		t.Errorf("operator's cordons %v, want [/d3]", b.OperatorCordons)
	}
	if len(b.Releasing) != 1 || !b.Releasing[0].InPlace || b.State != ledger.StateActive {
		t.Errorf("releasing %+v, state %s", b.Releasing, b.State)
	}
}

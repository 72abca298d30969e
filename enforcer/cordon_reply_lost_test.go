package enforcer

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// replyLostCordons is the fake admin with broker 1's cordons (its log dir
// and a spare), a cordon read that can fail, and record writes that take
// effect with their reply lost.
type replyLostCordons struct {
	*fakeAdmin
	cordons    []string
	readFails  bool // LogDirCordons fails
	replyLost  int  // the next n StoreRecord take effect and fail
	cordonRuns int  // CordonLogDir calls
}

func (f *replyLostCordons) StoreRecord(ctx context.Context, r Record) error {
	if err := f.fakeAdmin.StoreRecord(ctx, r); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.replyLost == 0 {
		return nil
	}
	f.replyLost--
	return errors.New("write broker-1 to __kafka_disk_guard_protection: REQUEST_TIMED_OUT (the write goes on)")
}

func (f *replyLostCordons) LogDirCordons(context.Context, int32) (BrokerCordons, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.readFails {
		return BrokerCordons{}, errors.New("REQUEST_TIMED_OUT")
	}
	return BrokerCordons{MetadataVersion: CordonMinMetadataVersion, LogDirs: []string{dir, dir + "-spare"}, Dynamic: slices.Clone(f.cordons)}, nil
}

func (f *replyLostCordons) CordonLogDir(_ context.Context, _ int32, d string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cordonRuns++
	if !slices.Contains(f.cordons, d) {
		f.cordons = append(f.cordons, d)
	}
	return nil
}

func (f *replyLostCordons) UncordonLogDir(_ context.Context, _ int32, d string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cordons = slices.DeleteFunc(f.cordons, func(c string) bool { return c == d })
	return nil
}

// R8.7, R3.8: a record write of this process whose reply was lost, read
// back after its last successful write, is the latest record of its
// broker: when the ownership topic is lost, that is the record written
// again from memory, not the last one confirmed. Found by the simulation
// (seeds 21558 and 22278): the write claiming broker 2's log dir cordon
// took effect with its reply lost, the next pass read it back and
// appended the cordon (its record write failing again), the topic was
// deleted, and the agent wrote back its record as last confirmed, from
// before the claim. The cordon in place was then claimed by no record,
// taken for an operator's (never adopted), and left for good.
func TestR8_7OwnWriteWhoseReplyWasLostIsWrittenBackAfterTheLoss(t *testing.T) {
	full, calm := protectSnaps()
	f := &replyLostCordons{fakeAdmin: newFakeAdmin(full()), readFails: true}
	clock := &clockAt{t0}
	cfg := Config{Enabled: true, BrokerID: new(int32(1)), Interval: time.Second, Protection: ProtectionConfig{LeaseDuration: time.Minute}}
	src := &staticSource{snap: full(), ch: make(chan struct{}, 1)}
	e, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), prometheus.NewRegistry(),
		Deps{Snapshots: src, Admin: f, Clock: clock, Evidence: newFakeEvidence(full()), Instance: "agent-1"})
	if err != nil {
		t.Fatal(err)
	}
	// A first pass at 95% protects, its record written; the cordons
	// cannot be read, so nothing is cordoned yet.
	_ = tryPassAfter(t, e, clock, 0, full())
	if r := f.records.Agents[1]; !r.Claims() || len(r.AllCordonClaims()) != 0 {
		t.Fatalf("the test needs a first record with claims and no cordon claim: %+v", r)
	}
	// The cordons are read again: the record claiming the cordon takes
	// effect, its reply lost; the next pass reads it back, appends the
	// cordon, and its own record write fails the same way.
	f.readFails, f.replyLost = false, 2
	_ = tryPassAfter(t, e, clock, time.Second, full())
	_ = tryPassAfter(t, e, clock, time.Second, full())
	if f.cordonRuns == 0 || !slices.Contains(f.cordons, dir) || f.replyLost != 0 {
		t.Fatalf("the test needs the cordon appended after two writes whose reply was lost: cordons %v, CordonLogDir calls %d, lost replies left %d",
			f.cordons, f.cordonRuns, f.replyLost)
	}
	// The ownership topic is deleted and created again.
	f.records = ledger.NewRecords()
	_ = tryPassAfter(t, e, clock, time.Second, full())
	if got := f.records.Agents[1].AllCordonClaims(); len(got) != 1 || got[0].Value != dir {
		t.Errorf("R8.7/the record written back after the loss claims cordons %v, want the cordon of %s (the write read back)", got, dir)
	}
	for range 5 { // calm
		_ = tryPassAfter(t, e, clock, time.Second, calm())
	}
	if len(f.cordons) != 0 {
		t.Fatalf("R3.8/R8.7/cordoned.log.dirs %v left after calm: the guard's cordon was taken for an operator's", f.cordons)
	}
}

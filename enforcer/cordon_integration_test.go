//go:build integration

package enforcer_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/internal/scantest"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkaadmin"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
)

// The JBOD broker of the cordon tests: three log dirs (data, data-2,
// data-3), started by the first test that asks for it.
var (
	jbodMu  sync.Mutex
	jbod    *kafkatest.Broker
	jbodErr error
)

func jbodBroker(t *testing.T) *kafkatest.Broker {
	t.Helper()
	jbodMu.Lock()
	defer jbodMu.Unlock()
	if jbod == nil && jbodErr == nil {
		jbod, jbodErr = kafkatest.Start(kafkatest.Options{ExtraLogDirs: 2})
		if jbodErr == nil {
			b := jbod
			// Stopped with the package's other brokers (TestMain).
			stopJBOD = func() { _ = b.Stop() }
		}
	}
	if jbodErr != nil {
		t.Fatalf("the cordon tests need a real broker with three log dirs and it did not start: %v", jbodErr)
	}
	return jbod
}

// placement returns the log dir (of dirs) each partition of topic lives
// in, read on disk.
func placement(t *testing.T, dirs []string, topic string, partitions int) map[int]string {
	t.Helper()
	out := map[int]string{}
	kafkatest.Eventually(t, 30*time.Second, func() error {
		for p := range partitions {
			for _, d := range dirs {
				if _, err := os.Stat(filepath.Join(d, fmt.Sprintf("%s-%d", topic, p))); err == nil {
					out[p] = d
				}
			}
		}
		if len(out) < partitions {
			return fmt.Errorf("%d of %d partitions of %s on disk", len(out), partitions, topic)
		}
		return nil
	})
	return out
}

// dynamicCordons polls until the broker's dynamic cordoned.log.dirs is
// want (a config change travels the metadata log).
func dynamicCordons(t *testing.T, a *kafkaadmin.Enforce, want ...string) enforcer.BrokerCordons {
	t.Helper()
	var got enforcer.BrokerCordons
	kafkatest.Eventually(t, 30*time.Second, func() error {
		var err error
		if got, err = a.LogDirCordons(t.Context(), 1); err != nil {
			return err
		}
		if !slices.Equal(got.Dynamic, want) {
			return fmt.Errorf("dynamic cordoned.log.dirs %q, want %q", got.Dynamic, want)
		}
		return nil
	})
	return got
}

// What Kafka 4.4 does with cordoned.log.dirs (KIP-1066), through the
// adapter's calls: the metadata.version read; APPEND adds one entry and
// keeps the operator's (and does not repeat one); a cordoned log dir gets
// no partition of a new topic (placement read on disk); SUBTRACT removes
// only the guard's entry; an entry not in log.dirs is refused; with every
// log dir cordoned CreateTopics answers INVALID_REPLICATION_FACTOR.
func TestR3_8KafkaCordonSemantics(t *testing.T) {
	b := jbodBroker(t)
	a, err := kafkaadmin.NewEnforce([]string{b.SASLAddr}, b.GuardConfig(), "__kdg_cordon_probe")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	dirs := append([]string{b.LogDir}, b.ExtraLogDirs...)
	ctx := t.Context()

	st, err := a.LogDirCordons(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("metadata.version %d, log.dirs %q, cordoned %q / %q", st.MetadataVersion, st.LogDirs, st.Dynamic, st.Inherited)
	if !st.Supported() || !slices.Equal(st.LogDirs, dirs) || len(st.Dynamic) != 0 || len(st.Inherited) != 0 {
		t.Fatalf("cordon state %+v; want supported, log.dirs %q, nothing cordoned", st, dirs)
	}

	// The operator cordons data-3 (kafka-configs --add-config sets the whole value).
	admin := b.Admin(t)
	op := dirs[2]
	if err := admin.IncrementalAlterConfig(sarama.BrokerResource, "1", map[string]sarama.IncrementalAlterConfigsEntry{
		kafkaadmin.CordonedLogDirs: {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &op}}, false); err != nil {
		t.Fatal(err)
	}
	dynamicCordons(t, a, op)

	// The guard cordons data: appended, the operator's entry kept; twice is once.
	for range 2 {
		if err := a.CordonLogDir(ctx, 1, dirs[0]); err != nil {
			t.Fatal(err)
		}
	}
	dynamicCordons(t, a, op, dirs[0])

	b.CreateTopic(t, "cordon.placed", 12, nil)
	for p, d := range placement(t, dirs, "cordon.placed", 12) {
		if d != dirs[1] {
			t.Errorf("partition %d placed in %s; only %s is uncordoned", p, d, dirs[1])
		}
	}

	// Not a log.dirs entry: refused.
	if err := a.CordonLogDir(ctx, 1, "/nowhere"); !errors.Is(err, enforcer.ErrConfigRefused) {
		t.Errorf("cordon of /nowhere: %v; want a refusal", err)
	} else {
		t.Logf("cordon of a dir not in log.dirs: %v", err)
	}

	// Every log dir cordoned: what CreateTopics answers.
	if err := a.CordonLogDir(ctx, 1, dirs[1]); err != nil {
		t.Fatal(err)
	}
	dynamicCordons(t, a, op, dirs[0], dirs[1])
	var cerr error
	kafkatest.Eventually(t, 30*time.Second, func() error {
		cerr = admin.CreateTopic("cordon.refused", &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false)
		if cerr == nil || errors.Is(cerr, sarama.ErrTopicAlreadyExists) {
			// The controller places replicas by the broker's registration,
			// which takes the new cordon a moment after the config: the
			// topic went to the last dir. Deleted, and tried again.
			_ = admin.DeleteTopic("cordon.refused")
			return fmt.Errorf("created with every log dir cordoned (%v)", cerr)
		}
		return nil
	})
	t.Logf("CreateTopics with every log dir cordoned: %v", cerr)
	if !errors.Is(cerr, sarama.ErrInvalidReplicationFactor) || !strings.Contains(cerr.Error(), "cordoned") {
		t.Errorf("CreateTopics with every log dir cordoned: %v; want INVALID_REPLICATION_FACTOR naming the cordon", cerr)
	}

	// SUBTRACT: only the guard's entries go; one not there is no error.
	for _, d := range []string{dirs[1], dirs[0], dirs[0]} {
		if err := a.UncordonLogDir(ctx, 1, d); err != nil {
			t.Fatal(err)
		}
	}
	dynamicCordons(t, a, op)
	b.CreateTopic(t, "cordon.lifted", 12, nil)
	got := placement(t, dirs, "cordon.lifted", 12)
	var in0 int
	for p, d := range got {
		if d == op {
			t.Errorf("partition %d placed in the operator's cordoned %s", p, d)
		}
		if d == dirs[0] {
			in0++
		}
	}
	if in0 == 0 {
		t.Errorf("no partition in the uncordoned %s: %v", dirs[0], got)
	}
	// Leave the broker as found.
	if err := a.UncordonLogDir(ctx, 1, op); err != nil {
		t.Fatal(err)
	}
	dynamicCordons(t, a)
}

// stopJBOD stops the JBOD broker when a test started it.
var stopJBOD = func() {}

// R3.8 end to end on a real broker with three log dirs: the guard, which
// watches data, cordons it when its usage reaches the cordon bound (75%
// on the cloud profile): its record claims it, the broker's dynamic
// cordoned.log.dirs holds it beside the operator's own entry (data-3), and
// a new topic gets no partition in it (placement read on disk). Under the
// bound minus the hysteresis (70%) it is uncordoned, the claim leaves the
// record, and the operator's entry stays. Cordoned again, an operator's
// protection lift uncordons it and reads it back; the guard does not
// cordon it again while the episode lasts.
func TestR3_8GuardCordonsAFillingLogDir(t *testing.T) {
	b := jbodBroker(t)
	dirs := append([]string{b.LogDir}, b.ExtraLogDirs...)
	// The usage the test sets: the log dir's capacity follows its used
	// bytes (the ownership topic and new partitions land in it too).
	ratio := &fixedCapacity{v: 50}
	src := &scantest.Source{LogDir: b.LogDir, Capacity: func() uint64 { return uint64(float64(du(b.LogDir)) * 100 / float64(ratio.get())) }}
	admin := b.Admin(t)
	op := dirs[2]
	if err := admin.IncrementalAlterConfig(sarama.BrokerResource, "1", map[string]sarama.IncrementalAlterConfigsEntry{
		kafkaadmin.CordonedLogDirs: {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &op}}, false); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		admin.IncrementalAlterConfig(sarama.BrokerResource, "1", map[string]sarama.IncrementalAlterConfigsEntry{
			kafkaadmin.CordonedLogDirs: {Operation: sarama.IncrementalAlterConfigsOperationDelete}}, false)
	})
	const full, calm = 80, 50
	const own = "__kdg_test_cordon"
	cfg := enforcer.Config{Enabled: true, Interval: 200 * time.Millisecond}
	g := startGuard(t, b, guardSpec{cfg: cfg, src: src, ownTopic: own})
	t.Cleanup(func() {
		if t.Failed() {
			g.logs.mu.Lock()
			for _, l := range strings.Split(g.logs.buf.String(), "\n") {
				if strings.Contains(l, "cordon") || strings.Contains(l, "error") {
					t.Log(l)
				}
			}
			g.logs.mu.Unlock()
		}
	})
	g.waitReconciles(t, 3)
	if st := dynamicCordons(t, g.admin, op); len(st.Dynamic) != 1 {
		t.Fatalf("cordoned while calm: %q", st.Dynamic)
	}
	claims := func() []string {
		recs, err := g.admin.LoadRecords(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range recs.Agents[1].AllCordonClaims() {
			out = append(out, c.Value)
		}
		return out
	}
	cordoned := func(owner string) float64 {
		return metric(g.reg, "kafka_disk_guard_log_dir_cordoned", map[string]string{"log_dir": b.LogDir, "owner": owner})
	}

	start := time.Now()
	ratio.set(full)
	dynamicCordons(t, g.admin, op, dirs[0])
	t.Logf("cordoned %s after the band was crossed", time.Since(start).Round(10*time.Millisecond))
	if got := claims(); !slices.Equal(got, []string{dirs[0]}) {
		t.Errorf("record claims %q, want [%s]", got, dirs[0])
	}
	kafkatest.Eventually(t, 10*time.Second, func() error {
		if cordoned("guard") != 1 || cordoned("operator") != 0 {
			return fmt.Errorf("log_dir_cordoned guard %v operator %v", cordoned("guard"), cordoned("operator"))
		}
		return nil
	})
	b.CreateTopic(t, "cordon.guarded", 12, nil)
	for p, d := range placement(t, dirs, "cordon.guarded", 12) {
		if d != dirs[1] {
			t.Errorf("partition %d of a new topic placed in %s while the guard cordons %s and the operator %s", p, d, dirs[0], op)
		}
	}
	// In the hysteresis: stays.
	ratio.set(72)
	g.waitReconciles(t, 3)
	dynamicCordons(t, g.admin, op, dirs[0])

	start = time.Now()
	ratio.set(calm)
	dynamicCordons(t, g.admin, op)
	t.Logf("uncordoned %s after calm", time.Since(start).Round(10*time.Millisecond))
	kafkatest.Eventually(t, 10*time.Second, func() error {
		if got := claims(); len(got) != 0 {
			return fmt.Errorf("record still claims %q", got)
		}
		if cordoned("guard") != 0 {
			return errors.New("log_dir_cordoned{owner=guard} still 1")
		}
		return nil
	})

	// protection lift --broker 1 uncordons it and reads it back.
	ratio.set(full)
	dynamicCordons(t, g.admin, op, dirs[0])
	kafkatest.Eventually(t, 10*time.Second, func() error {
		if got := claims(); len(got) != 1 {
			return fmt.Errorf("record claims %q", got)
		}
		return nil
	})
	res, err := ledger.LiftProtection(t.Context(), g.admin, ledger.LiftRequest{Broker: 1, By: "operator@test", Reason: "test", Now: time.Now()})
	if err != nil || len(res.Remaining) != 0 || len(res.Uncordoned) != 1 {
		t.Fatalf("lift: %+v, %v", res, err)
	}
	dynamicCordons(t, g.admin, op)
	g.waitReconciles(t, 10)
	dynamicCordons(t, g.admin, op)
	if v := metric(g.reg, "kafka_disk_guard_log_dir_cordon_held", map[string]string{"log_dir": b.LogDir, "reason": enforcer.CordonHeldLifted}); v != 1 {
		t.Errorf("log_dir_cordon_held{reason=lifted} = %v after an operator's lift", v)
	}
	ratio.set(calm)
	g.waitReconciles(t, 3)
}

// du is the bytes the files under dir take on disk.
func du(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				n += st.Blocks * 512
			}
		}
		return nil
	})
	return n
}

// R3.8: a log dir is cordoned at the admission limit too, when that is
// under relief.cordon.atPercent (admission.limitPercent, wired by the
// guard), and uncordoned under it minus the hysteresis.
func TestR3_8GuardCordonsAtTheAdmissionLimit(t *testing.T) {
	b := jbodBroker(t)
	dirs := append([]string{b.LogDir}, b.ExtraLogDirs...)
	ratio := &fixedCapacity{v: 50}
	src := &scantest.Source{LogDir: b.LogDir, Capacity: func() uint64 { return uint64(float64(du(b.LogDir)) * 100 / float64(ratio.get())) }}
	at := 95.0
	cfg := enforcer.Config{Enabled: true, Interval: 200 * time.Millisecond}
	cfg.Relief.Cordon = enforcer.CordonConfig{AtPercent: &at, AdmissionLimitPercent: 60}
	g := startGuard(t, b, guardSpec{cfg: cfg, src: src, ownTopic: "__kdg_test_cordon_admission"})
	g.waitReconciles(t, 3)
	dynamicCordons(t, g.admin)
	start := time.Now()
	ratio.set(65) // over the admission limit, far under atPercent
	dynamicCordons(t, g.admin, dirs[0])
	t.Logf("cordoned %s after the admission limit was crossed", time.Since(start).Round(10*time.Millisecond))
	ratio.set(50) // under 60 - 5
	dynamicCordons(t, g.admin)
}

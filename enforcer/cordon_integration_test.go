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
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
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
		if cerr == nil {
			return errors.New("created with every log dir cordoned")
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

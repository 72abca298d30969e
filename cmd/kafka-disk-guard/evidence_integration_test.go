//go:build integration

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
)

// R7.2 on a real cluster: two topics with retention.ms=-1 and month-old
// data are reassigned onto the guarded broker while its log dir is in the
// periodic band. Kafka's defaults (7 days) would make their old segments
// eligible. The guard's principal (limited, with the documented rights)
// may not read the first one's configs (a DENY on it): it stays held as
// config_fetch_failed. The second is held as config_unknown until its
// configs are fetched (a new topic on disk is looked up at once, without
// waiting for the refresh), then its own retention.ms=-1 makes nothing
// eligible. Neither log start offset moves.
//
// A real lookup answers within a few hundred milliseconds, which a pass
// on a loaded machine can miss: the test holds the second topic's lookup
// back until a pass has held the topic, and moves the first topic before
// the second, so that the second's hold changes the held reasons and is
// logged.
func TestR7_2ReassignedTopicKeepsItsLogStartOffset(t *testing.T) {
	c := evidenceCluster(t)
	n1 := c.Node(1)
	const audit, unreadable, filler = "r72.audit", "r72.unreadable", "r72.filler"
	for _, tp := range []string{audit, unreadable} {
		c.CreateTopicAssigned(t, tp, [][]int32{{2}}, map[string]string{"retention.ms": "-1", "internal.segment.bytes": "16384"})
		dropTopic(t, c, tp)
		produce(t, c, tp, 0, 60, 2000, time.Now().Add(-30*24*time.Hour))
	}
	c.CreateTopicAssigned(t, filler, [][]int32{{1}}, map[string]string{"internal.segment.bytes": "262144"})
	dropTopic(t, c, filler)
	produce(t, c, filler, 0, 112, 64<<10, time.Now())
	moving := duBytes(filepath.Join(c.Node(2).LogDir, audit+"-0")) + duBytes(filepath.Join(c.Node(2).LogDir, unreadable+"-0"))
	before := duBytes(n1.LogDir)
	// 82% of the capacity once both are here, about 78% before: the
	// periodic band (75-85%) throughout.
	capacity := uint64(float64(before+moving) / 0.82)

	grantLimited(t, c)
	t.Cleanup(func() { revokeLimited(t, c) })
	a, err := sarama.NewClusterAdmin(c.SASLAddrs(), adminConfig(c))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	deny := &sarama.ResourceAcls{Resource: sarama.Resource{ResourceType: sarama.AclResourceTopic, ResourceName: unreadable, ResourcePatternType: sarama.AclPatternLiteral},
		Acls: []*sarama.Acl{{Principal: "User:" + kafkatest.LimitedUser, Host: "*", Operation: sarama.AclOperationDescribeConfigs, PermissionType: sarama.AclPermissionDeny}}}
	if err := a.CreateACLs([]*sarama.ResourceAcls{deny}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		name, principal, host := unreadable, "User:"+kafkatest.LimitedUser, "*"
		a.DeleteACL(sarama.AclFilter{ResourceType: sarama.AclResourceTopic, ResourceName: &name, ResourcePatternTypeFilter: sarama.AclPatternLiteral,
			Principal: &principal, Host: &host, Operation: sarama.AclOperationDescribeConfigs, PermissionType: sarama.AclPermissionDeny}, false)
	})

	lookup := &heldLookup{topic: audit, release: make(chan struct{})}
	addr, logs := runGuardOn(t, c, guardOpts{user: kafkatest.LimitedUser, password: kafkatest.LimitedPassword,
		capacity: capacity, enforcer: enforcer.Config{Enabled: true}, configFetcher: lookup.wrap})
	waitMetricValue(t, addr, "kafka_disk_guard_band", map[string]string{"log_dir": n1.LogDir, "band": "periodic"}, is(1))
	waitPasses(t, addr, 3)

	heldTopics := func(reason string) map[string]string {
		return map[string]string{"log_dir": n1.LogDir, "reason": reason}
	}
	reassign := func(tp string) {
		t.Helper()
		if err := a.AlterPartitionReassignments(tp, [][]int32{{1}}); err != nil {
			t.Fatalf("reassign %s to node 1: %v", tp, err)
		}
		waitFor(t, "reassignment of "+tp, func() error {
			_, replicas, _ := c.Partition(t, tp, 0)
			if !slices.Equal(replicas, []int32{1}) {
				return fmt.Errorf("replicas %v", replicas)
			}
			if _, err := os.Stat(filepath.Join(c.Node(2).LogDir, tp+"-0")); err == nil {
				return fmt.Errorf("node 2 still holds %s-0", tp)
			}
			if first, _, n := partitionOnDisk(t, n1.LogDir, tp, 0); first != 0 || n < 5 {
				return fmt.Errorf("node 1 holds %d segments of %s-0 from %d", n, tp, first)
			}
			return nil
		})
	}
	reassign(unreadable)
	waitMetricValue(t, addr, "kafka_disk_guard_held_topics", heldTopics("config_fetch_failed"), is(1))
	moved := time.Now()
	reassign(audit)
	waitMetricValue(t, addr, "kafka_disk_guard_held_topics", heldTopics("config_unknown"), is(1))
	released := time.Now()
	close(lookup.release)
	waitMetricValue(t, addr, "kafka_disk_guard_held_topics", heldTopics("config_unknown"), is(0))

	// Past the broker's high watermark checkpoint (every 5 s): the moved
	// replicas' old segments are then eligible by Kafka's defaults.
	for time.Since(moved) < 15*time.Second {
		waitPasses(t, addr, 2)
	}
	for _, tp := range []string{audit, unreadable} {
		if got := logStart(t, c, tp, 0); got != 0 {
			t.Errorf("R7.2/the reassigned topic %s lost records: log start offset %d", tp, got)
		}
	}
	if v := metricSum(addr, "kafka_disk_guard_held_topics", heldTopics("config_fetch_failed")); v != 1 {
		t.Errorf("held_topics{config_fetch_failed} %v, want 1", v)
	}
	if v := metricSum(addr, "kafka_disk_guard_band", map[string]string{"log_dir": n1.LogDir, "band": "periodic"}); v != 1 {
		t.Fatalf("not in the periodic band any more: %v", v)
	}
	if v := metricSum(addr, "kafka_disk_guard_topics_without_fetched_config", map[string]string{"log_dir": n1.LogDir, "reason": "fetch_error"}); v != 1 {
		t.Errorf("topics without fetched configs (fetch_error): %v, want 1", v)
	}

	// The hold of the readable topic while its configs were looked up,
	// and how long it lasted.
	var heldAt, freedAt time.Time
	for _, l := range logLines(t, logs.String()) {
		ts, _ := time.Parse(time.RFC3339Nano, fmt.Sprint(l["time"]))
		if l["msg"] != "destructive actions held back" && l["msg"] != "destructive actions allowed again" || ts.Before(moved) {
			continue
		}
		heldAudit := strings.Contains(fmt.Sprint(l["topics"]), audit+" ") || strings.HasSuffix(strings.Trim(fmt.Sprint(l["topics"]), "[]"), audit)
		switch {
		case heldAudit && heldAt.IsZero():
			heldAt = ts
		case !heldAudit && !heldAt.IsZero() && freedAt.IsZero():
			freedAt = ts
		}
	}
	if heldAt.IsZero() || freedAt.IsZero() {
		t.Fatalf("R7.2/no config_unknown hold logged for %s (held %v, freed %v)", audit, heldAt, freedAt)
	}
	t.Logf("R7.2: %s after its reassignment was requested, %s was held as config_unknown (its lookup asked %s after the request, "+
		"held back by the test for %s); allowed again %s after the test let the lookup through (%.0f KiB moved on a %.0f KiB capacity)",
		heldAt.Sub(moved).Round(time.Millisecond), audit, lookup.firstAsked().Sub(moved).Round(time.Millisecond),
		released.Sub(lookup.firstAsked()).Round(time.Millisecond), freedAt.Sub(released).Round(time.Millisecond),
		float64(moving)/1024, float64(capacity)/1024)
}

// heldLookup holds back the topic config lookups that include topic until
// release is closed, and notes when the first was asked.
type heldLookup struct {
	topic   string
	release chan struct{}
	mu      sync.Mutex
	asked   time.Time
}

func (h *heldLookup) wrap(f agent.ConfigFetcher) agent.ConfigFetcher {
	return configFetcherFunc(func(ctx context.Context, topics []string) (agent.ConfigSet, error) {
		if slices.Contains(topics, h.topic) {
			h.mu.Lock()
			if h.asked.IsZero() {
				h.asked = time.Now()
			}
			h.mu.Unlock()
			select {
			case <-h.release:
			case <-ctx.Done():
				return agent.ConfigSet{}, ctx.Err()
			}
		}
		return f.FetchConfigs(ctx, topics)
	})
}

func (h *heldLookup) firstAsked() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.asked
}

type configFetcherFunc func(ctx context.Context, topics []string) (agent.ConfigSet, error)

func (f configFetcherFunc) FetchConfigs(ctx context.Context, topics []string) (agent.ConfigSet, error) {
	return f(ctx, topics)
}

// R7.3 on a real broker's tmpfs: a file that is not Kafka's holds node
// 1's disk at 88% (the purge band). Live partitions do not explain the
// excess: no record is purged, the reason is in the metrics; protection,
// which deletes nothing, still applies at 90% and lifts once the file is
// gone.
func TestR7_3NonKafkaFileGetsNoPurge(t *testing.T) {
	c := evidenceCluster(t)
	n1 := c.Node(1)
	const topic = "r73.data"
	c.CreateTopicAssigned(t, topic, [][]int32{{1}, {1}}, map[string]string{"internal.segment.bytes": "262144"})
	dropTopic(t, c, topic)
	for p := int32(0); p < 2; p++ {
		produce(t, c, topic, p, 48, 64<<10, time.Now()) // 3 MiB each, unexpired
	}
	dump := filepath.Join(n1.LogDir, "java_pid1.hprof")
	t.Cleanup(func() { os.Remove(dump) })
	fill := func(ratio float64) int64 {
		t.Helper()
		_, used, total := statfsRatio(n1.LogDir)
		cur := int64(0)
		if fi, err := os.Stat(dump); err == nil {
			cur = fi.Size()
		}
		size := cur + int64(ratio*float64(total)) - int64(used)
		if err := os.Truncate(dump, 0); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		f, err := os.OpenFile(dump, os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		chunk := make([]byte, 1<<20)
		for n := int64(0); n < size; n += int64(len(chunk)) {
			if _, err := f.Write(chunk[:min(int64(len(chunk)), size-n)]); err != nil {
				t.Fatal(err)
			}
		}
		f.Close()
		return size
	}
	size := fill(0.88)

	addr, logs := runGuardOn(t, c, guardOpts{enforcer: enforcer.Config{Enabled: true}})
	waitMetricValue(t, addr, "kafka_disk_guard_band", map[string]string{"log_dir": n1.LogDir, "band": "purge"}, is(1))
	waitPasses(t, addr, 8)
	for p := int32(0); p < 2; p++ {
		if got := logStart(t, c, topic, p); got != 0 {
			t.Fatalf("R7.3/purged for a file that is not Kafka's: %s-%d log start offset %d", topic, p, got)
		}
	}
	if v := metricSum(addr, "kafka_disk_guard_enforcer_blocked", map[string]string{"reason": "usage_not_kafka"}); v != 1 {
		t.Errorf("R7.3/blocked{usage_not_kafka} %v", v)
	}
	if v := metricSum(addr, "kafka_disk_guard_unexpired_deleted_bytes_total", nil); v != 0 {
		t.Errorf("R7.3/unexpired bytes deleted: %v", v)
	}
	if v := metricSum(addr, "kafka_disk_guard_log_dir_non_kafka_bytes", map[string]string{"log_dir": n1.LogDir}); v < float64(size) {
		t.Errorf("R7.3/non-Kafka bytes %v, the file alone is %d", v, size)
	}
	ratio, _, _ := statfsRatio(n1.LogDir)
	t.Logf("R7.3: %.1f MiB file, usage %.1f%%, non-Kafka bytes %.1f MiB, nothing purged", float64(size)/(1<<20), ratio*100,
		metricSum(addr, "kafka_disk_guard_log_dir_non_kafka_bytes", map[string]string{"log_dir": n1.LogDir})/(1<<20))

	// At 91% write protection applies all the same.
	fill(0.91)
	waitFor(t, "protection", func() error {
		if acls := aclsOn(t, c, topic); !slices.Contains(acls, "User:* WRITE DENY") {
			return fmt.Errorf("acls on %s: %v", topic, acls)
		}
		return nil
	})
	waitMetricValue(t, addr, "kafka_disk_guard_write_protection_active", map[string]string{"log_dir": n1.LogDir}, is(1))
	// The file goes: usage under the hysteresis bound, protection lifted,
	// and still nothing purged.
	if err := os.Remove(dump); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "lift", func() error {
		if acls := aclsOn(t, c, topic); slices.Contains(acls, "User:* WRITE DENY") {
			return fmt.Errorf("acls on %s: %v", topic, acls)
		}
		return nil
	})
	for p := int32(0); p < 2; p++ {
		if got := logStart(t, c, topic, p); got != 0 {
			t.Fatalf("R7.3/purged: %s-%d log start offset %d", topic, p, got)
		}
	}
	if n := len(logsWith(t, logs, "deleted unexpired records")); n != 0 {
		t.Errorf("R7.3/%d purges logged", n)
	}
}

// R7.1 on real clusters: the guard's glob matches node 1's log dir and the
// log dir of a second cluster's broker (its node id is 1 too, its topic
// has the same name), both under a kubelet-like pods directory; it is
// connected to the first cluster. The second cluster's log dir is in the
// write-protection band: it is reported (identity, band) and never acted
// on, on either cluster. A log dir whose meta.properties has no cluster.id
// appears next: held, named in the metrics, and the agent keeps serving.
func TestR7_1TwoClustersOneGlob(t *testing.T) {
	c := evidenceCluster(t)
	n1 := c.Node(1)
	other, err := kafkatest.Start(kafkatest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Stop() })
	const topic = "orders"
	c.CreateTopicAssigned(t, topic, [][]int32{{1}}, map[string]string{"internal.segment.bytes": "16384"})
	dropTopic(t, c, topic)
	produce(t, c, topic, 0, 40, 1000, time.Now())
	other.CreateTopic(t, topic, 1, map[string]string{"internal.segment.bytes": "65536"})
	other.Produce(t, topic, 0, 300, 10000)

	pods := filepath.Join(t.TempDir(), "kubelet", "pods")
	mount := func(name, src string) string {
		dst := filepath.Join(pods, name, "volumes", "data")
		if err := os.MkdirAll(dst, 0o755); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("mount", "--bind", "-o", "ro", src, dst).CombinedOutput(); err != nil {
			t.Fatalf("bind mount (the tests run as root): %v\n%s", err, out)
		}
		t.Cleanup(func() { exec.Command("umount", dst).Run() })
		return dst
	}
	mine, theirs := mount("uid-a", n1.LogDir), mount("uid-b", other.LogDir)
	capacity := uint64(float64(duBytes(other.LogDir)) / 0.95)
	if r := float64(duBytes(n1.LogDir)) / float64(capacity); r > 0.70 {
		t.Fatalf("node 1's log dir would be at %.0f%% of %d", r*100, capacity)
	}
	glob := filepath.Join(pods, "*", "volumes", "data")
	addr, logs := runGuardOn(t, c, guardOpts{logDirs: []string{glob}, capacity: capacity, enforcer: enforcer.Config{Enabled: true}})
	waitMetricValue(t, addr, "kafka_disk_guard_log_dir_identity", map[string]string{"log_dir": mine, "reason": "confirmed"}, is(1))
	waitMetricValue(t, addr, "kafka_disk_guard_log_dir_identity", map[string]string{"log_dir": theirs, "reason": "cluster_mismatch"}, is(1))
	waitMetricValue(t, addr, "kafka_disk_guard_band", map[string]string{"log_dir": theirs, "band": "protect"}, is(1))
	waitPasses(t, addr, 10)

	if acls := aclsOn(t, c, topic); len(acls) != 0 {
		t.Errorf("R7.1/ACLs on the connected cluster's %s for the other cluster's disk: %v", topic, acls)
	}
	if got := logStart(t, c, topic, 0); got != 0 {
		t.Errorf("R7.1/the connected cluster's %s lost records: log start offset %d", topic, got)
	}
	oc, err := sarama.NewClient([]string{other.SASLAddr}, other.GuardConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer oc.Close()
	if off, err := oc.GetOffset(topic, 0, sarama.OffsetOldest); err != nil || off != 0 {
		t.Errorf("R7.1/the other cluster's %s: log start offset %d, %v", topic, off, err)
	}
	if v := metricSum(addr, "kafka_disk_guard_write_protection_active", nil); v != 0 {
		t.Errorf("R7.1/write protection reported active: %v", v)
	}
	if v := metricSum(addr, "kafka_disk_guard_enforcer_blocked", map[string]string{"reason": "identity_unconfirmed"}); v != 0 {
		t.Errorf("R7.1/another cluster's log dir found by the glob is a hold: %v", v)
	}
	if n := len(logsWith(t, logs, "log dir of another cluster or broker")); n != 1 {
		t.Errorf("R7.1/%d 'observed only' log lines, want 1", n)
	}

	// Bad input: a volume with a meta.properties without cluster.id.
	broken := filepath.Join(pods, "uid-c", "volumes", "data")
	if err := os.MkdirAll(filepath.Join(broken, topic+"-0"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(broken, "meta.properties"), []byte("version=1\nnode.id=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitMetricValue(t, addr, "kafka_disk_guard_log_dir_identity", map[string]string{"log_dir": broken, "reason": "no_meta_properties"}, is(1))
	waitMetricValue(t, addr, "kafka_disk_guard_enforcer_blocked", map[string]string{"reason": "identity_unconfirmed"}, is(1))
	if v := metricSum(addr, "kafka_disk_guard_log_dir_identity", map[string]string{"log_dir": mine, "reason": "confirmed"}); v != 1 {
		t.Errorf("node 1's log dir is no longer confirmed: %v", v)
	}
	found := false
	for _, l := range logsWith(t, logs, "log dir identity not confirmed") {
		found = found || (l["log_dir"] == broken && l["reason"] == "no_meta_properties" && strings.Contains(fmt.Sprint(l["detail"]), "cluster.id"))
	}
	if !found {
		t.Error("no log line naming the log dir without cluster.id")
	}
}

// Rights on a real cluster, the guard running as the non-super user
// limited next to node 1 at 95% (write protection, purging to 85%):
//   - without Cluster:DESCRIBE (and ALTER, which implies it) DescribeLogDirs
//     is refused: the log dir is not confirmed, nothing is acted on;
//   - without Cluster:ALTER protection is impossible: the missing right is
//     named at start and nothing unexpired is purged;
//   - with exactly the documented rights (rights.ACLs) it protects and
//     purges;
//   - without DESCRIBE_CONFIGS on topics (nor ALTER_CONFIGS, which implies
//     it) the topic's configs cannot be fetched: its records are held.
//
// Each time the agent keeps serving its metrics.
func TestRightsMinimalProtectFewerNeverPurge(t *testing.T) {
	c := evidenceCluster(t)
	n1 := c.Node(1)
	const topic = "rights.t"
	c.CreateTopicAssigned(t, topic, [][]int32{{1}}, map[string]string{"internal.segment.bytes": "65536"})
	dropTopic(t, c, topic)
	produce(t, c, topic, 0, 64, 32<<10, time.Now())
	capacity := uint64(float64(duBytes(n1.LogDir)) / 0.95)
	t.Cleanup(func() { revokeLimited(t, c) })
	var from int64 // the log start offset when a guard starts
	stop := func() {}
	run := func(what string, without ...string) (string, *syncWriter) {
		t.Helper()
		stop() // one guard at a time: they share the principal whose ACLs change
		grantLimited(t, c, without...)
		from = logStart(t, c, topic, 0)
		var addr string
		var logs *syncWriter
		// Each guard before the last stops before it knows its purge
		// history (it waits a lease and a pass for its record): its
		// record says so (purges_unknown), and the next one waits too
		// (R7.3). A lease of 2 s keeps the wait inside noPurge's eight
		// passes, so a guard's holding back is its rights', not the wait.
		addr, logs, stop = startGuardOn(t, c, guardOpts{user: kafkatest.LimitedUser, password: kafkatest.LimitedPassword,
			capacity: capacity, enforcer: enforcer.Config{Enabled: true, Protection: enforcer.ProtectionConfig{LeaseDuration: 2 * time.Second}}})
		waitMetricValue(t, addr, "kafka_disk_guard_log_dir_usage_ratio", map[string]string{"log_dir": n1.LogDir}, func(v float64) bool { return v >= 0.85 })
		t.Logf("%s: guard started", what)
		return addr, logs
	}
	noPurge := func(addr string) {
		t.Helper()
		waitPasses(t, addr, 8)
		if got := logStart(t, c, topic, 0); got != from {
			t.Fatalf("purged: log start offset %d -> %d", from, got)
		}
		if v := metricSum(addr, "kafka_disk_guard_log_dir_usage_ratio", map[string]string{"log_dir": n1.LogDir}); v < 0.85 {
			t.Fatalf("the agent does not serve its metrics: usage %v", v)
		}
	}

	{
		addr, logs := run("DescribeLogDirs refused", "Cluster:kafka-cluster:DESCRIBE", "Cluster:kafka-cluster:ALTER")
		waitMetricValue(t, addr, "kafka_disk_guard_log_dir_identity", map[string]string{"log_dir": n1.LogDir, "reason": "not_confirmed"}, is(1))
		waitMetricValue(t, addr, "kafka_disk_guard_enforcer_blocked", map[string]string{"reason": "identity_unconfirmed"}, is(1))
		noPurge(addr)
		if acls := aclsOn(t, c, topic); len(acls) != 0 {
			t.Errorf("protected a log dir that is not confirmed: %v", acls)
		}
		found := false
		for _, l := range logsWith(t, logs, "log dir identity not confirmed") {
			found = found || strings.Contains(fmt.Sprint(l["detail"]), "not authorized")
		}
		if !found {
			t.Error("the refused DescribeLogDirs is not named")
		}
	}
	{
		addr, logs := run("no Cluster:ALTER", "Cluster:kafka-cluster:ALTER")
		waitMetricValue(t, addr, "kafka_disk_guard_missing_rights", map[string]string{"feature": "protect_acl"}, func(v float64) bool { return v >= 1 })
		waitMetricValue(t, addr, "kafka_disk_guard_enforcer_blocked", map[string]string{"reason": "protection_unavailable"}, is(1))
		noPurge(addr)
		named := false
		for _, l := range logsWith(t, logs, "rights of the guard's principal: missing") {
			named = named || strings.Contains(fmt.Sprint(l["missing"]), "Cluster:ALTER")
		}
		if !named {
			t.Errorf("the missing Cluster:ALTER is not named at start:\n%v", logsWith(t, logs, "rights"))
		}
	}
	{
		addr, logs := run("the documented rights")
		waitFor(t, "protection", func() error {
			if acls := aclsOn(t, c, topic); !slices.Contains(acls, "User:* WRITE DENY") {
				return fmt.Errorf("acls on %s: %v", topic, acls)
			}
			return nil
		})
		waitFor(t, "purge", func() error {
			if got := logStart(t, c, topic, 0); got == from {
				return fmt.Errorf("log start offset %d", got)
			}
			return nil
		})
		if n := len(logsWith(t, logs, "rights of the guard's principal: all present")); n != 1 {
			t.Errorf("%d 'all present' lines", n)
		}
		if v := metricSum(addr, "kafka_disk_guard_missing_rights", nil); v != 0 {
			t.Errorf("missing_rights %v with the documented rights", v)
		}
	}
	{
		addr, _ := run("configs cannot be fetched", "Topic:*:DESCRIBE_CONFIGS", "Topic:*:ALTER_CONFIGS")
		waitMetricValue(t, addr, "kafka_disk_guard_held_topics", map[string]string{"log_dir": n1.LogDir, "reason": "config_fetch_failed"},
			func(v float64) bool { return v >= 1 })
		noPurge(addr)
	}
}

// R7.5 on a real cluster with the guard's wall clock injected: the agent's
// and the enforcer's clock jumps two hours forward. Records stamped 30
// minutes ago with one hour of retention become eligible for the guard
// (not for the broker, whose clock did not move): deletions by retention
// time are held for the hold, then go; a topic whose newest record is
// stamped 5 hours ahead stays held.
func TestR7_5ClockJumpHoldsTimeDeletion(t *testing.T) {
	c := evidenceCluster(t)
	n1 := c.Node(1)
	const plain, future = "clock.plain", "clock.future"
	cfg := map[string]string{"retention.ms": "3600000", "internal.segment.bytes": "16384", "message.timestamp.after.max.ms": "86400000"}
	for _, tp := range []string{plain, future} {
		c.CreateTopicAssigned(t, tp, [][]int32{{1}}, cfg)
		dropTopic(t, c, tp)
		produce(t, c, tp, 0, 60, 1000, time.Now().Add(-30*time.Minute))
	}
	produce(t, c, future, 0, 1, 100, time.Now().Add(5*time.Hour))
	capacity := uint64(float64(duBytes(n1.LogDir)) / 0.84) // periodic band
	clock := newShiftClock()
	const hold = 10 * time.Second
	addr, logs := runGuardOn(t, c, guardOpts{capacity: capacity, clock: clock, enforcer: enforcer.Config{Enabled: true,
		Evidence: enforcer.EvidenceConfig{ClockJumpHold: hold, ConfigMaxAge: 3 * time.Hour}}})
	waitMetricValue(t, addr, "kafka_disk_guard_band", map[string]string{"log_dir": n1.LogDir, "band": "periodic"}, is(1))
	waitPasses(t, addr, 4)
	if logStart(t, c, plain, 0) != 0 || logStart(t, c, future, 0) != 0 {
		t.Fatal("deleted before the jump: nothing was eligible")
	}

	clock.jump(2 * time.Hour)
	jumped := time.Now()
	waitMetricValue(t, addr, "kafka_disk_guard_enforcer_blocked", map[string]string{"reason": "clock_jump"}, is(1))
	if v := metricSum(addr, "kafka_disk_guard_clock_forward_jump_seconds", nil); v < 7000 {
		t.Errorf("clock_forward_jump_seconds %v", v)
	}
	// The agent reclassifies with the moved clock (every second here).
	waitMetricValue(t, addr, "kafka_disk_guard_segments", map[string]string{"log_dir": n1.LogDir, "topic": plain, "state": "eligible"},
		func(v float64) bool { return v > 0 })
	for time.Since(jumped) < hold-3*time.Second {
		if got := logStart(t, c, plain, 0); got != 0 {
			t.Fatalf("R7.5/deleted by retention time %s after a clock jump: log start offset %d", time.Since(jumped).Round(time.Millisecond), got)
		}
		time.Sleep(500 * time.Millisecond)
	}
	waitFor(t, "deletion after the hold", func() error {
		if got := logStart(t, c, plain, 0); got == 0 {
			return fmt.Errorf("log start offset of %s still 0", plain)
		}
		return nil
	})
	waitMetricValue(t, addr, "kafka_disk_guard_enforcer_blocked", map[string]string{"reason": "future_timestamps"}, is(1))
	waitPasses(t, addr, 4)
	if got := logStart(t, c, future, 0); got != 0 {
		t.Errorf("R7.5/a topic with data stamped 3 hours ahead of the clock lost records: log start offset %d", got)
	}
	if len(logsWith(t, logs, "wall clock jumped forward")) != 1 {
		t.Error("no log line for the jump")
	}
}

// RF=3 with one small broker: the guard on node 1 (a 96 MiB tmpfs, nodes
// 2 and 3 have the machine's disk) purges a topic replicated on all three
// (leader node 2) when node 1 reaches the purge band. DeleteRecords moves
// the partition's log start offset, so nodes 2 and 3 delete the same
// segments: every replica keeps only what node 1 can hold. Written down in
// docs/operating.md ("The effect of one broker's band on the whole
// cluster").
func TestRF3OneSmallBrokerBandActsOnEveryReplica(t *testing.T) {
	c := evidenceCluster(t)
	n1 := c.Node(1)
	const topic = "rf3"
	c.CreateTopicAssigned(t, topic, [][]int32{{2, 1, 3}}, map[string]string{"segment.bytes": "1048576"})
	dropTopic(t, c, topic)
	p, err := sarama.NewSyncProducer(c.SASLAddrs(), adminConfig(c))
	if err != nil {
		t.Fatal(err)
	}
	value := make([]byte, 64<<10)
	for {
		if r, _, _ := statfsRatio(n1.LogDir); r >= 0.87 {
			break
		}
		msgs := make([]*sarama.ProducerMessage, 16)
		for i := range msgs {
			msgs[i] = &sarama.ProducerMessage{Topic: topic, Partition: 0, Value: sarama.ByteEncoder(value)}
		}
		if err := p.SendMessages(msgs); err != nil {
			t.Fatal(err)
		}
	}
	p.Close()
	type replica struct {
		first, bytes int64
		segments     int
	}
	read := func() map[int32]replica {
		out := map[int32]replica{}
		for _, n := range c.Nodes {
			f, b, s := partitionOnDisk(t, n.LogDir, topic, 0)
			out[n.NodeID] = replica{f, b, s}
		}
		return out
	}
	before := read()
	ratioBefore, _, _ := statfsRatio(n1.LogDir)

	addr, _ := runGuardOn(t, c, guardOpts{enforcer: enforcer.Config{Enabled: true}})
	// A fresh agent in a cluster of several brokers purges no unexpired
	// data for a lease and a pass (60 s + 10 s: no record of its own,
	// while peers may write back one the topic lost; purge_history).
	kafkatest.Eventually(t, 150*time.Second, func() error {
		if got := logStart(t, c, topic, 0); got == 0 {
			return fmt.Errorf("purge: log start offset 0")
		}
		return nil
	})
	waitMetricValue(t, addr, "kafka_disk_guard_band", map[string]string{"log_dir": n1.LogDir, "band": "periodic"}, is(1))
	lso := logStart(t, c, topic, 0)
	var after map[int32]replica
	waitFor(t, "every replica trimmed", func() error {
		after = read()
		for id, r := range after {
			if r.first < lso {
				return fmt.Errorf("node %d still holds offsets from %d (log start offset %d)", id, r.first, lso)
			}
		}
		return nil
	})
	ratioAfter, _, _ := statfsRatio(n1.LogDir)
	for _, id := range []int32{1, 2, 3} {
		b, a := before[id], after[id]
		t.Logf("RF=3: node %d: %d segments, %.1f MiB from offset %d -> %d segments, %.1f MiB from offset %d",
			id, b.segments, float64(b.bytes)/(1<<20), b.first, a.segments, float64(a.bytes)/(1<<20), a.first)
	}
	t.Logf("RF=3: node 1 usage %.1f%% -> %.1f%%; the leader's log start offset %d; unexpired bytes purged %.1f MiB",
		ratioBefore*100, ratioAfter*100, lso, metricSum(addr, "kafka_disk_guard_unexpired_deleted_bytes_total", nil)/(1<<20))
	for _, id := range []int32{2, 3} {
		if after[id].first != after[1].first {
			t.Errorf("node %d keeps from offset %d, node 1 from %d", id, after[id].first, after[1].first)
		}
		if d := after[id].bytes - after[1].bytes; d > 2<<20 || d < -(2<<20) {
			t.Errorf("node %d keeps %d bytes, node 1 %d", id, after[id].bytes, after[1].bytes)
		}
		if freed := before[id].bytes - after[id].bytes; freed < (before[1].bytes-after[1].bytes)/2 {
			t.Errorf("node %d freed %d bytes, node 1 %d", id, freed, before[1].bytes-after[1].bytes)
		}
	}
}
